#include "lib/net/name_lookup.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include "lib/net/dns_query.h"
#include "lib/net/lookup_files.h"
#include "lib/sys/fd.h"
#include "lib/sys/io.h"

namespace nodegate::net {
namespace {

// /etc/hosts of ad-blocking set-ups runs to megabytes; nothing legitimate is near this.
constexpr size_t kMaxLookupFile = 64 << 20;
constexpr int kAddrInfoFlags = AI_PASSIVE | AI_CANONNAME | AI_NUMERICHOST | AI_NUMERICSERV |
                               AI_V4MAPPED | AI_ALL | AI_ADDRCONFIG;
constexpr int kNameInfoFlags = NI_NUMERICHOST | NI_NUMERICSERV | NI_NOFQDN | NI_NAMEREQD | NI_DGRAM;

// A missing or unreadable file reads as empty, as glibc's `files` treats it.
std::string ReadLookupFile(const std::string& path) {
  auto text = sys::ReadRegularFile(path, kMaxLookupFile);
  return text.ok() ? std::move(*text) : std::string();
}

std::optional<uint16_t> NumericPort(std::string_view text) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value > 65535) {
    return std::nullopt;
  }
  return static_cast<uint16_t>(value);
}

// One (socket type, protocol) an address is returned for, with its port.
struct SocketKind {
  int socktype;
  int protocol;
  uint16_t port;
};

// The socket kinds the hints ask for, each with the service's port; an EAI_* code on failure.
int SocketKinds(const LookupFiles& files, const char* service, const addrinfo& hints,
                std::vector<SocketKind>& kinds) {
  const SocketKind all[] = {
      {SOCK_STREAM, IPPROTO_TCP, 0}, {SOCK_DGRAM, IPPROTO_UDP, 0}, {SOCK_RAW, 0, 0}};
  for (const SocketKind& kind : all) {
    if (hints.ai_socktype != 0 && hints.ai_socktype != kind.socktype) continue;
    if (hints.ai_protocol != 0 && kind.socktype != SOCK_RAW && hints.ai_protocol != kind.protocol) {
      continue;
    }
    SocketKind chosen = kind;
    if (kind.socktype == SOCK_RAW) chosen.protocol = hints.ai_protocol;
    if (service != nullptr && kind.socktype == SOCK_RAW) {
      if (hints.ai_socktype == SOCK_RAW) return EAI_SERVICE;
      continue;  // a raw socket has no port
    }
    kinds.push_back(chosen);
  }
  if (kinds.empty()) return hints.ai_socktype != 0 ? EAI_SOCKTYPE : EAI_SERVICE;
  if (service == nullptr) return 0;
  if (const auto port = NumericPort(service)) {
    for (SocketKind& kind : kinds) kind.port = *port;
    return 0;
  }
  if ((hints.ai_flags & AI_NUMERICSERV) != 0) return EAI_NONAME;
  const std::string services = ReadLookupFile(files.services);
  std::vector<SocketKind> named;
  for (SocketKind kind : kinds) {
    const auto port =
        FindServicePort(services, service, kind.socktype == SOCK_STREAM ? "tcp" : "udp");
    if (!port) continue;
    kind.port = *port;
    named.push_back(kind);
  }
  if (named.empty()) return EAI_SERVICE;
  kinds = std::move(named);
  return 0;
}

IpAddress V4Mapped(const IpAddress& v4) {
  uint8_t bytes[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  std::memcpy(bytes + 12, v4.bytes().data(), 4);
  return IpAddress::FromBytes(Family::kV6, bytes);
}

// The addresses of `family` (AF_UNSPEC: all) among `found`, with AF_INET6's AI_V4MAPPED and
// AI_ALL applied.
std::vector<IpAddress> OfFamily(const std::vector<IpAddress>& found, int family, int flags) {
  std::vector<IpAddress> v4, v6;
  for (const IpAddress& a : found) (a.is_v4() ? v4 : v6).push_back(a);
  if (family == AF_INET) return v4;
  if (family == AF_UNSPEC) return found;
  const bool mapped = (flags & AI_V4MAPPED) != 0 && (v6.empty() || (flags & AI_ALL) != 0);
  if (mapped) {
    for (const IpAddress& a : v4) v6.push_back(V4Mapped(a));
  }
  return v6;
}

int DnsFailure(DnsOutcome a, DnsOutcome b) {
  if (a == DnsOutcome::kNoData || b == DnsOutcome::kNoData) return EAI_NODATA;
  if (a == DnsOutcome::kTryAgain || b == DnsOutcome::kTryAgain) return EAI_AGAIN;
  if (a == DnsOutcome::kFailed || b == DnsOutcome::kFailed) return EAI_FAIL;
  return EAI_NONAME;
}

struct HostAddresses {
  int error = 0;  // EAI_*
  std::string canonical_name;
  std::vector<IpAddress> addresses;
};

// A name that is not an address: /etc/hosts, then DNS, as `hosts: files dns` reads.
HostAddresses LookUpName(const LookupFiles& files, const std::string& name, int family, int flags) {
  HostAddresses out;
  HostsMatch listed = FindHostsAddresses(ReadLookupFile(files.hosts), name);
  out.addresses = OfFamily(listed.addresses, family, flags);
  if (!out.addresses.empty()) {
    out.canonical_name = std::move(listed.canonical_name);
    return out;
  }
  const bool want_v4 = family != AF_INET6 || (flags & AI_V4MAPPED) != 0;
  const bool want_v6 = family != AF_INET;
  DnsAddresses v6, v4;
  v6.outcome = v4.outcome = DnsOutcome::kNoSuchName;
  if (want_v6) v6 = DnsLookUpAddresses(name, Family::kV6);
  // AF_INET6 with AI_V4MAPPED asks for A records only when there is no AAAA (or AI_ALL).
  if (want_v4 && (family != AF_INET6 || v6.addresses.empty() || (flags & AI_ALL) != 0)) {
    v4 = DnsLookUpAddresses(name, Family::kV4);
  }
  std::vector<IpAddress> found = v6.addresses;
  found.insert(found.end(), v4.addresses.begin(), v4.addresses.end());
  out.addresses = OfFamily(found, family, flags);
  if (out.addresses.empty()) {
    out.error = DnsFailure(v6.outcome, v4.outcome);
    return out;
  }
  out.canonical_name = !v6.canonical_name.empty() ? v6.canonical_name : v4.canonical_name;
  return out;
}

// A numeric host, IPv6 with an optional "%scope" (an interface name or index).
std::optional<std::pair<IpAddress, uint32_t>> NumericHost(std::string_view text) {
  uint32_t scope = 0;
  if (const size_t percent = text.find('%'); percent != std::string_view::npos) {
    const std::string scope_text(text.substr(percent + 1));
    text = text.substr(0, percent);
    if (scope_text.empty()) return std::nullopt;
    scope = ::if_nametoindex(scope_text.c_str());
    if (scope == 0) {
      const auto [end, ec] =
          std::from_chars(scope_text.data(), scope_text.data() + scope_text.size(), scope);
      if (ec != std::errc() || end != scope_text.data() + scope_text.size()) return std::nullopt;
    }
  }
  const auto address = IpAddress::Parse(text);
  if (!address || (scope != 0 && address->is_v4())) return std::nullopt;
  return std::make_pair(*address, scope);
}

void FillSockaddr(const IpAddress& address, uint16_t port, uint32_t scope, sockaddr_storage& out,
                  socklen_t& length) {
  std::memset(&out, 0, sizeof(out));
  if (address.is_v4()) {
    auto* in = reinterpret_cast<sockaddr_in*>(&out);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    std::memcpy(&in->sin_addr, address.bytes().data(), 4);
    length = sizeof(sockaddr_in);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&out);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    in6->sin6_scope_id = scope;
    std::memcpy(&in6->sin6_addr, address.bytes().data(), 16);
    length = sizeof(sockaddr_in6);
  }
}

// Whether this host has a route to `address`: a UDP socket connects (no packet is sent).
bool Reachable(const IpAddress& address) {
  sockaddr_storage sa;
  socklen_t length = 0;
  FillSockaddr(address, 9, 0, sa, length);
  sys::UniqueFd fd(::socket(sa.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  return fd.valid() && ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&sa), length) == 0;
}

// One addrinfo and its address in one allocation, as FreeAddrInfo releases it.
struct AddrInfoNode {
  addrinfo info;
  sockaddr_storage address;
};

// Copies `text` into `out` of `size` bytes; false when it does not fit with its NUL.
bool CopyOut(const std::string& text, char* out, socklen_t size) {
  if (text.size() + 1 > size) return false;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return true;
}

struct ProtocolStorage {
  std::string name;
  std::vector<std::string> aliases;
  std::vector<char*> alias_pointers;
  protoent entry{};
};

protoent* StoreProtocol(const std::optional<ProtocolEntry>& found) {
  if (!found) return nullptr;
  thread_local ProtocolStorage storage;
  storage.name = found->name;
  storage.aliases = found->aliases;
  storage.alias_pointers.clear();
  for (std::string& alias : storage.aliases) storage.alias_pointers.push_back(alias.data());
  storage.alias_pointers.push_back(nullptr);
  storage.entry.p_name = storage.name.data();
  storage.entry.p_aliases = storage.alias_pointers.data();
  storage.entry.p_proto = found->number;
  return &storage.entry;
}

}  // namespace

void OrderForConnecting(std::vector<IpAddress>& addresses) {
  if (addresses.size() < 2) return;
  std::vector<std::pair<int, IpAddress>> ranked;
  for (const IpAddress& a : addresses) {
    ranked.emplace_back((Reachable(a) ? 0 : 2) + (a.is_v4() ? 1 : 0), a);
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  for (size_t i = 0; i < ranked.size(); ++i) addresses[i] = ranked[i].second;
}

int GetAddrInfo(const LookupFiles& files, const char* node, const char* service,
                const addrinfo* hints_or_null, addrinfo** result) {
  addrinfo hints{};
  hints.ai_flags = AI_V4MAPPED | AI_ADDRCONFIG;  // glibc's default without hints
  if (hints_or_null != nullptr) {
    hints.ai_flags = hints_or_null->ai_flags;
    hints.ai_family = hints_or_null->ai_family;
    hints.ai_socktype = hints_or_null->ai_socktype;
    hints.ai_protocol = hints_or_null->ai_protocol;
  }
  *result = nullptr;
  if ((hints.ai_flags & ~kAddrInfoFlags) != 0) return EAI_BADFLAGS;
  if ((hints.ai_flags & AI_CANONNAME) != 0 && node == nullptr) return EAI_BADFLAGS;
  if (node == nullptr && service == nullptr) return EAI_NONAME;
  if (hints.ai_family != AF_UNSPEC && hints.ai_family != AF_INET && hints.ai_family != AF_INET6) {
    return EAI_FAMILY;
  }
  if (hints.ai_socktype != 0 && hints.ai_socktype != SOCK_STREAM &&
      hints.ai_socktype != SOCK_DGRAM && hints.ai_socktype != SOCK_RAW) {
    return EAI_SOCKTYPE;
  }
  std::vector<SocketKind> kinds;
  if (const int error = SocketKinds(files, service, hints, kinds); error != 0) return error;

  HostAddresses host;
  uint32_t scope = 0;
  if (node == nullptr) {
    const bool passive = (hints.ai_flags & AI_PASSIVE) != 0;
    const uint8_t any6[16] = {};
    const uint8_t loopback6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    if (hints.ai_family != AF_INET) {
      host.addresses.push_back(IpAddress::FromBytes(Family::kV6, passive ? any6 : loopback6));
    }
    if (hints.ai_family != AF_INET6) {
      host.addresses.push_back(IpAddress::V4(passive ? INADDR_ANY : INADDR_LOOPBACK));
    }
  } else if (const auto numeric = NumericHost(node)) {
    host.addresses = OfFamily({numeric->first}, hints.ai_family, hints.ai_flags);
    if (host.addresses.empty()) return EAI_ADDRFAMILY;
    host.canonical_name = node;
    scope = numeric->second;
  } else if ((hints.ai_flags & AI_NUMERICHOST) != 0 || *node == '\0' ||
             std::strchr(node, '%') != nullptr) {
    return EAI_NONAME;  // not an address, no name, or an address whose scope does not parse
  } else {
    host = LookUpName(files, node, hints.ai_family, hints.ai_flags);
    if (host.error != 0) return host.error;
    OrderForConnecting(host.addresses);
  }

  addrinfo* head = nullptr;
  addrinfo** tail = &head;
  for (const IpAddress& address : host.addresses) {
    for (const SocketKind& kind : kinds) {
      auto* node_memory = static_cast<AddrInfoNode*>(std::calloc(1, sizeof(AddrInfoNode)));
      if (node_memory == nullptr) {
        FreeAddrInfo(head);
        return EAI_MEMORY;
      }
      addrinfo& info = node_memory->info;
      FillSockaddr(address, kind.port, scope, node_memory->address, info.ai_addrlen);
      info.ai_family = address.is_v4() ? AF_INET : AF_INET6;
      info.ai_socktype = kind.socktype;
      info.ai_protocol = kind.protocol;
      info.ai_addr = reinterpret_cast<sockaddr*>(&node_memory->address);
      *tail = &info;
      tail = &info.ai_next;
    }
  }
  if (head == nullptr) return EAI_NONAME;
  if ((hints.ai_flags & AI_CANONNAME) != 0) {
    head->ai_canonname = ::strdup(host.canonical_name.empty() ? node : host.canonical_name.c_str());
    if (head->ai_canonname == nullptr) {
      FreeAddrInfo(head);
      return EAI_MEMORY;
    }
  }
  *result = head;
  return 0;
}

void FreeAddrInfo(addrinfo* list) {
  while (list != nullptr) {
    addrinfo* next = list->ai_next;
    std::free(list->ai_canonname);
    // ai_addr shares the node's allocation, which starts with the addrinfo (AddrInfoNode).
    std::free(list);
    list = next;
  }
}

int GetNameInfo(const LookupFiles& files, const sockaddr* address, socklen_t length, char* host,
                socklen_t host_length, char* service, socklen_t service_length, int flags) {
  if ((flags & ~kNameInfoFlags) != 0) return EAI_BADFLAGS;
  if (address == nullptr) return EAI_FAMILY;
  IpAddress ip;
  uint16_t port = 0;
  uint32_t scope = 0;
  if (address->sa_family == AF_INET && length >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(address);
    ip = IpAddress::FromBytes(Family::kV4, reinterpret_cast<const uint8_t*>(&in->sin_addr));
    port = ntohs(in->sin_port);
  } else if (address->sa_family == AF_INET6 &&
             length >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
    ip = IpAddress::FromBytes(Family::kV6, reinterpret_cast<const uint8_t*>(&in6->sin6_addr));
    port = ntohs(in6->sin6_port);
    scope = in6->sin6_scope_id;
  } else {
    return EAI_FAMILY;
  }
  if (host == nullptr) host_length = 0;
  if (service == nullptr) service_length = 0;
  if (host_length == 0 && service_length == 0) return EAI_NONAME;

  if (host_length > 0) {
    std::optional<std::string> name;
    if ((flags & NI_NUMERICHOST) == 0) {
      name = FindHostsName(ReadLookupFile(files.hosts), ip);
      if (!name) {
        const DnsAddresses pointer = DnsLookUpPointer(ip);
        if (pointer.outcome == DnsOutcome::kFound) {
          name = pointer.canonical_name;
        } else if ((flags & NI_NAMEREQD) != 0) {
          return pointer.outcome == DnsOutcome::kTryAgain ? EAI_AGAIN : EAI_NONAME;
        }
      }
    }
    if (!name) {
      name = ip.ToString();
      if (scope != 0 && ip.IsLinkLocal()) {
        char interface[IF_NAMESIZE];
        const bool by_name = ::if_indextoname(scope, interface) != nullptr;
        *name += "%" + (by_name ? std::string(interface) : std::to_string(scope));
      }
    }
    if (!CopyOut(*name, host, host_length)) return EAI_OVERFLOW;
  }
  if (service_length > 0) {
    std::optional<std::string> name;
    if ((flags & NI_NUMERICSERV) == 0) {
      name = FindServiceName(ReadLookupFile(files.services), port,
                             (flags & NI_DGRAM) != 0 ? "udp" : "tcp");
    }
    if (!CopyOut(name ? *name : std::to_string(port), service, service_length)) {
      return EAI_OVERFLOW;
    }
  }
  return 0;
}

protoent* GetProtoByName(const LookupFiles& files, const char* name) {
  if (name == nullptr) return nullptr;
  return StoreProtocol(FindProtocolByName(ReadLookupFile(files.protocols), name));
}

protoent* GetProtoByNumber(const LookupFiles& files, int number) {
  return StoreProtocol(FindProtocolByNumber(ReadLookupFile(files.protocols), number));
}

hostent* GetHostByName(const LookupFiles& files, const char* name) {
  if (name == nullptr) return nullptr;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (GetAddrInfo(files, name, nullptr, &hints, &list) != 0) return nullptr;
  struct HostStorage {
    hostent entry{};
    std::string name;
    std::vector<in_addr> addresses;
    std::vector<char*> address_pointers;
    char* no_aliases[1] = {nullptr};
  };
  thread_local HostStorage storage;
  storage.name = name;
  storage.addresses.clear();
  for (const addrinfo* a = list; a != nullptr; a = a->ai_next) {
    storage.addresses.push_back(reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr);
  }
  FreeAddrInfo(list);
  if (storage.addresses.empty()) return nullptr;
  storage.address_pointers.clear();
  for (in_addr& address : storage.addresses) {
    storage.address_pointers.push_back(reinterpret_cast<char*>(&address));
  }
  storage.address_pointers.push_back(nullptr);
  storage.entry.h_name = storage.name.data();
  storage.entry.h_aliases = storage.no_aliases;
  storage.entry.h_addrtype = AF_INET;
  storage.entry.h_length = sizeof(in_addr);
  storage.entry.h_addr_list = storage.address_pointers.data();
  return &storage.entry;
}

}  // namespace nodegate::net
