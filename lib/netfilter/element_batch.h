#pragma once
// Set and map elements written straight over netlink, in one nf_tables transaction, for hot
// paths that change a few elements of sets that exist already. libnftables would first load
// (a dozen shared libraries) and fill its cache of the table, which here costs several times
// the change itself. Elements are given in register layout (see SetElement in query.h).
//
//   std::vector<ElementChange> changes = {
//       {ElementVerb::kCreate, "owned", {{.key = IfnameKey({owner, "all4"})}}},
//       {ElementVerb::kAdd, "n1234_dnat_any_v4", {{.key = k, .data = v, .comment = id}}}};
//   NG_ASSIGN_OR_RETURN(auto refusals, WriteElements(kNfprotoInet, "cni_hostport", changes));
//   if (!refusals.empty()) ... nothing was applied; each names a change the kernel refused
//
// A refused batch costs the kernel's abort, which waits for an RCU grace period under the
// commit mutex: callers expecting a refusal should read first.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/result.h"

namespace nodegate::netfilter {

struct ElementWrite {
  std::vector<uint8_t> key;
  std::vector<uint8_t> data;  // maps only
  std::string comment;        // "" for none; nft's element comment (at most 128 bytes)
  // An interval set's range ends with an element flagged NFT_SET_ELEM_INTERVAL_END whose key
  // is the first value after the range.
  bool interval_end = false;
};

enum class ElementVerb {
  kAdd,     // adding an element that is there with the same data is no error
  kCreate,  // refused (EEXIST) when the key is there
  kDelete,  // refused (ENOENT) when the key is not there
};

struct ElementChange {
  ElementVerb verb = ElementVerb::kAdd;
  std::string set;
  std::vector<ElementWrite> elements;
};

// The kernel's refusal of one change of a batch.
struct ElementRefusal {
  size_t change = 0;  // index into the changes
  int error = 0;      // errno
  std::string ext_ack;
};

// Applies `changes` to `table` of `family` (kNfprotoInet, NFPROTO_IPV4...) as one transaction:
// all of them or none. Empty when applied; else every change the kernel refused, in batch
// order (it checks them all before aborting), and none applied. Errors (code 100): no socket,
// or the exchange broke off (whether it applied is then unknown).
Result<std::vector<ElementRefusal>> WriteElements(uint8_t family, const std::string& table,
                                                  const std::vector<ElementChange>& changes);

// nft's user data for an element comment: one record, type 0, the text and its NUL.
std::vector<uint8_t> CommentUserData(const std::string& comment);

}  // namespace nodegate::netfilter
