// The floor of a portmap call on an nf_tables node, for `make bench`: one exec of a static
// binary that sends one generation-checked batch appending one rule (a counter and a jump to
// chain TARGET) to `table ip nat` chain CHAIN, and waits for the kernel's answer. A plugin that
// writes the iptables layout into nf_tables cannot do less: it is exec'd, and its ADD adds at
// least one jump, after which the kernel validates the table's whole chain graph in the commit
// (nft_table_validate), a cost that grows with the table.
//
// With --dump it is the floor of the refusal (hostPortConflicts reject) on a node whose
// mappings are in the iptables layout: one dump of CHAIN's rules, the entry rules a refusal
// must see at least once, each read in full (nothing in nf_tables finds a rule by its port).
//
//   nft_floor CHAIN TARGET   exit 0 when the rule was added
//   nft_floor --dump CHAIN   exit 0 when every rule of CHAIN in `ip nat` was read
//   nft_floor --noop         exit 0 at once (the exec alone)
#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

// A netlink message under construction, attributes appended in order.
class Message {
 public:
  Message(uint16_t type, uint16_t flags, uint32_t seq, uint8_t family, uint16_t res_id) {
    nlmsghdr header{};
    header.nlmsg_type = type;
    header.nlmsg_flags = static_cast<uint16_t>(NLM_F_REQUEST | flags);
    header.nlmsg_seq = seq;
    Append(&header, sizeof(header));
    nfgenmsg gen{};
    gen.nfgen_family = family;
    gen.version = NFNETLINK_V0;
    gen.res_id = htons(res_id);
    Append(&gen, sizeof(gen));
  }
  void Attr(uint16_t type, const void* data, size_t len) {
    nlattr attr{static_cast<uint16_t>(NLA_HDRLEN + len), type};
    Append(&attr, sizeof(attr));
    Append(data, len);
    Pad();
  }
  void String(uint16_t type, const std::string& s) { Attr(type, s.c_str(), s.size() + 1); }
  size_t Begin(uint16_t type) {
    const size_t at = bytes_.size();
    nlattr attr{0, static_cast<uint16_t>(type | NLA_F_NESTED)};
    Append(&attr, sizeof(attr));
    return at;
  }
  void End(size_t at) {
    const auto len = static_cast<uint16_t>(bytes_.size() - at);
    std::memcpy(bytes_.data() + at, &len, sizeof(len));
  }
  std::vector<uint8_t> Done() {
    const auto len = static_cast<uint32_t>(bytes_.size());
    std::memcpy(bytes_.data(), &len, sizeof(len));
    return bytes_;
  }

 private:
  void Append(const void* data, size_t len) {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + len);
  }
  void Pad() { bytes_.resize(NLMSG_ALIGN(bytes_.size()), 0); }
  std::vector<uint8_t> bytes_;
};

// Reads answers until the one for `seq`: 0 on an ack, else the errno; `genid` is filled from a
// NEWGEN answer.
int Await(int fd, uint32_t seq, uint32_t* genid) {
  std::vector<uint8_t> buf(1 << 16);
  for (;;) {
    ssize_t got = recv(fd, buf.data(), buf.size(), 0);
    if (got <= 0) return EIO;
    auto n = static_cast<unsigned int>(got);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_type == NLMSG_ERROR) {
        const auto* err = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
        if (err->error != 0 || h->nlmsg_seq == seq) return -err->error;
        continue;
      }
      if (genid != nullptr && h->nlmsg_type == ((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWGEN)) {
        auto* attr = reinterpret_cast<nlattr*>(static_cast<uint8_t*>(NLMSG_DATA(h)) +
                                               NLMSG_ALIGN(sizeof(nfgenmsg)));
        int left = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof(nfgenmsg)));
        for (; left >= NLA_HDRLEN && attr->nla_len >= NLA_HDRLEN;
             left -= NLA_ALIGN(attr->nla_len),
             attr = reinterpret_cast<nlattr*>(reinterpret_cast<uint8_t*>(attr) +
                                              NLA_ALIGN(attr->nla_len))) {
          if ((attr->nla_type & NLA_TYPE_MASK) == NFTA_GEN_ID) {
            std::memcpy(genid, reinterpret_cast<uint8_t*>(attr) + NLA_HDRLEN, sizeof(*genid));
            *genid = ntohl(*genid);
          }
        }
        if (h->nlmsg_seq == seq) return 0;
      }
    }
  }
}

int OpenSocket() {
  const int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
  if (fd < 0) return -1;
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) return -1;
  return fd;
}

int Dump(const std::string& chain) {
  const int fd = OpenSocket();
  if (fd < 0) return 1;
  Message get((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETRULE, NLM_F_DUMP, 1, NFPROTO_IPV4, 0);
  get.String(NFTA_RULE_TABLE, "nat");
  get.String(NFTA_RULE_CHAIN, chain);
  const auto request = get.Done();
  if (send(fd, request.data(), request.size(), 0) < 0) return 1;
  std::vector<uint8_t> buf(1 << 16);
  for (;;) {
    const ssize_t got = recv(fd, buf.data(), buf.size(), 0);
    if (got <= 0) return 1;
    auto n = static_cast<unsigned int>(got);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_type == NLMSG_DONE) return 0;
      if (h->nlmsg_type == NLMSG_ERROR) return 1;
    }
  }
}

int Commit(const std::string& chain, const std::string& target) {
  const int fd = OpenSocket();
  if (fd < 0) return 1;

  auto get = Message((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETGEN, 0, 1, AF_UNSPEC, 0).Done();
  uint32_t genid = 0;
  if (send(fd, get.data(), get.size(), 0) < 0 || Await(fd, 1, &genid) != 0) return 1;

  std::vector<uint8_t> batch;
  Message begin(NFNL_MSG_BATCH_BEGIN, 0, 2, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
  const uint32_t be_genid = htonl(genid);
  begin.Attr(NFNL_BATCH_GENID, &be_genid, sizeof(be_genid));
  Message rule((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWRULE,
               NLM_F_CREATE | NLM_F_APPEND | NLM_F_ACK, 3, NFPROTO_IPV4, 0);
  rule.String(NFTA_RULE_TABLE, "nat");
  rule.String(NFTA_RULE_CHAIN, chain);
  const size_t exprs = rule.Begin(NFTA_RULE_EXPRESSIONS);
  const size_t elem = rule.Begin(NFTA_LIST_ELEM);
  rule.String(NFTA_EXPR_NAME, "counter");
  const size_t data = rule.Begin(NFTA_EXPR_DATA);
  const uint64_t zero = 0;
  rule.Attr(NFTA_COUNTER_BYTES, &zero, sizeof(zero));
  rule.Attr(NFTA_COUNTER_PACKETS, &zero, sizeof(zero));
  rule.End(data);
  rule.End(elem);
  // immediate: verdict register <- jump TARGET
  const size_t jump = rule.Begin(NFTA_LIST_ELEM);
  rule.String(NFTA_EXPR_NAME, "immediate");
  const size_t imm = rule.Begin(NFTA_EXPR_DATA);
  const uint32_t dreg = htonl(NFT_REG_VERDICT);
  rule.Attr(NFTA_IMMEDIATE_DREG, &dreg, sizeof(dreg));
  const size_t value = rule.Begin(NFTA_IMMEDIATE_DATA);
  const size_t verdict = rule.Begin(NFTA_DATA_VERDICT);
  const uint32_t code = htonl(static_cast<uint32_t>(NFT_JUMP));
  rule.Attr(NFTA_VERDICT_CODE, &code, sizeof(code));
  rule.String(NFTA_VERDICT_CHAIN, target);
  rule.End(verdict);
  rule.End(value);
  rule.End(imm);
  rule.End(jump);
  rule.End(exprs);
  Message end(NFNL_MSG_BATCH_END, 0, 4, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
  for (auto part : {begin.Done(), rule.Done(), end.Done()}) {
    batch.insert(batch.end(), part.begin(), part.end());
  }
  if (send(fd, batch.data(), batch.size(), 0) < 0) return 1;
  const int err = Await(fd, 3, nullptr);
  if (err != 0) {
    std::fprintf(stderr, "nft_floor: %s\n", std::strerror(err));
    return 1;
  }
  close(fd);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--noop") return 0;
  if (argc == 3 && std::string(argv[1]) == "--dump") return Dump(argv[2]);
  if (argc != 3) {
    std::fprintf(stderr, "usage: nft_floor CHAIN TARGET | --dump CHAIN | --noop\n");
    return 2;
  }
  return Commit(argv[1], argv[2]);
}
