#pragma once
// The portmap config its unit tests start from: the reference's setup as observed from Debian's
// portmap (v1.1.1), two mappings, and the parse the plugin does before any kernel call.

#include <string>

#include "lib/base/result.h"
#include "lib/cni/conf.h"
#include "plugins/portmap/config.h"

namespace nodegate::portmap::testing {

inline constexpr char kPrev[] = R"("prevResult":{"cniVersion":"1.0.0",
  "interfaces":[{"name":"eth0","sandbox":"/run/netns/x"}],
  "ips":[{"interface":0,"address":"10.88.0.2/16","gateway":"10.88.0.1"},
         {"interface":0,"address":"fd00:88::2/64"}]})";
inline constexpr char kMappings[] =
    R"([{"hostPort":8080,"containerPort":80,"protocol":"tcp","hostIP":"10.88.0.1"},
  {"hostPort":5353,"containerPort":53,"protocol":"udp"}])";

inline std::string ConfText(const std::string& extra, const std::string& mappings = kMappings,
                            bool with_prev = true) {
  return std::string(R"({"cniVersion":"1.0.0","name":"rnet","type":"portmap")") + extra +
         R"(,"runtimeConfig":{"portMappings":)" + mappings + "}" +
         (with_prev ? std::string(",") + kPrev : "") + "}";
}

// Parses as the plugin does for container `id` on eth0.
inline Result<Config> Parse(const std::string& text, Purpose purpose = Purpose::kAdd,
                            const std::string& id = "ctr1") {
  auto conf = cni::ParseNetConf(text, ConfigShape());
  if (!conf.ok()) return conf.error();
  return ParseConfig(*conf, {.container_id = id, .ifname = "eth0", .purpose = purpose});
}

}  // namespace nodegate::portmap::testing
