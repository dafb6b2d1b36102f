#pragma once
// The bridge plugin's configuration: every key of the reference's NetConf (containernetworking/
// plugins plugins/main/bridge, Debian's v1.1.1 and the current upstream), parsed and validated
// in full before the plugin's first system call. Every problem is collected: the first is the
// error's message, all of them its details.
//
//   NG_ASSIGN_OR_RETURN(BridgeConfig config, ParseBridgeConfig(args.conf, args.args));
//
// What the reference checks late or not at all (an empty or too long bridge name, a MAC a
// veth cannot have, a negative or oversized MTU, a VLAN gateway interface name over 15 bytes)
// is refused here with code 7 before anything is created.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/cni/conf.h"
#include "lib/cni/types.h"

namespace nodegate::bridge {

inline constexpr char kDefaultBridgeName[] = "cni0";

enum class MasqBackend { kIptables, kNftables };

struct BridgeConfig {
  std::string network;  // the config's name
  std::string bridge = kDefaultBridgeName;
  bool is_gateway = false;          // isGateway (also implied by isDefaultGateway)
  bool is_default_gateway = false;  // isDefaultGateway
  bool force_address = false;
  bool ip_masq = false;
  std::optional<MasqBackend> masq_backend;  // ipMasqBackend; nullopt: chosen on the node
  uint32_t mtu = 0;                         // 0: the kernel's default
  bool hairpin = false;
  bool promisc = false;
  uint16_t vlan = 0;              // 0: none
  std::vector<uint16_t> trunk;    // vlanTrunk, sorted and unique
  bool vlan_trunk_given = false;  // vlanTrunk present (even empty): VLAN filtering on
  bool preserve_default_vlan = false;
  bool mac_spoof_check = false;  // macspoofchk
  bool enable_dad = false;       // enabledad
  bool disable_container_interface = false;
  bool port_isolation = false;
  std::string mac;         // the container interface's MAC ("" random), normalised
  std::string ipam_type;   // "" : layer 2 only
  cni::Dns dns;            // the config's own "dns"
  bool dns_given = false;  // any of its four fields set (the reference's dnsConfSet)

  bool layer3() const { return !ipam_type.empty(); }
  bool vlan_filtering() const { return vlan != 0 || vlan_trunk_given; }
  // "<bridge>.<vlan>": the gateway's interface when isGateway and vlan are both set.
  std::string VlanGatewayName() const;
};

// The reference's NetConf as Go decodes it (lib/cni/go_json.h).
const cni::gojson::Shape& ConfigShape();

// `cni_args` is CNI_ARGS (its MAC key is read, IgnoreUnknown honoured). Errors: code 7 (4 for
// CNI_ARGS), the first problem as the message, every problem in details when several.
Result<BridgeConfig> ParseBridgeConfig(const cni::NetConf& conf, const std::string& cni_args);

// The validation alone, for tools (`nodegate conf validate`).
Status ValidateConfig(const cni::NetConf& conf);

}  // namespace nodegate::bridge
