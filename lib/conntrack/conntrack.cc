#include "lib/conntrack/conntrack.h"

#include <netlink/errno.h>
#include <netlink/netfilter/ct.h>
#include <netlink/netfilter/nfnl.h>
#include <netlink/netlink.h>

#include <algorithm>
#include <memory>
#include <string>

#include "lib/netfilter/release.h"

namespace nodegate::conntrack {
namespace {

struct SockDeleter {
  void operator()(nl_sock* s) const {
    netfilter::HandOffBeforeClose(nl_socket_get_fd(s));  // see lib/netfilter/release.h
    nl_socket_free(s);
  }
};
struct CacheDeleter {
  void operator()(nl_cache* c) const { nl_cache_free(c); }
};

Error NlError(const std::string& what, int err) {
  return Error(kErrKernel, "conntrack: " + what + ": " + nl_geterror(err));
}

}  // namespace

Result<int> DeleteByDestinationPort(int family, uint8_t protocol,
                                    const std::vector<uint16_t>& ports) {
  if (ports.empty()) return 0;
  std::unique_ptr<nl_sock, SockDeleter> sock(nl_socket_alloc());
  if (!sock) return Error(kErrKernel, "conntrack: cannot allocate a netlink socket");
  if (int err = nfnl_connect(sock.get()); err < 0) return NlError("connect", err);
  nl_cache* raw = nullptr;
  // The kernel has no server-side filter by port for dumps on every version we support, so
  // this reads the table once and deletes the matches (the reference does the same).
  if (int err = nfnl_ct_alloc_cache(sock.get(), &raw); err < 0) return NlError("dump", err);
  std::unique_ptr<nl_cache, CacheDeleter> cache(raw);
  int deleted = 0;
  for (nl_object* obj = nl_cache_get_first(cache.get()); obj != nullptr;
       obj = nl_cache_get_next(obj)) {
    auto* ct = reinterpret_cast<nfnl_ct*>(obj);
    if (nfnl_ct_get_family(ct) != family || nfnl_ct_get_proto(ct) != protocol) continue;
    const uint16_t dport = nfnl_ct_get_dst_port(ct, 0);
    if (std::find(ports.begin(), ports.end(), dport) == ports.end()) continue;
    const int err = nfnl_ct_del(sock.get(), ct, 0);
    if (err < 0 && err != -NLE_OBJ_NOTFOUND) return NlError("delete entry", err);
    if (err >= 0) ++deleted;
  }
  return deleted;
}

}  // namespace nodegate::conntrack
