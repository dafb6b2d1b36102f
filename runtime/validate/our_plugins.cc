#include "runtime/validate/our_plugins.h"

#include "ipam/cluster/config.h"
#include "ipam/config.h"
#include "plugins/bandwidth/config.h"
#include "plugins/bridge/config.h"
#include "plugins/portmap/config.h"

namespace nodegate::runtime {

std::map<std::string, ConfigValidator> OurPluginValidators() {
  std::map<std::string, ConfigValidator> validators;
  validators["host-local"] = [](std::string_view text) -> Status {
    NG_ASSIGN_OR_RETURN(cni::NetConf conf, cni::ParseNetConf(text, ipam::ConfigShape()));
    return ipam::ValidateConfig(conf);
  };
  validators["cluster-ipam"] = [](std::string_view text) -> Status {
    NG_ASSIGN_OR_RETURN(cni::NetConf conf, cni::ParseNetConf(text, ipam::cluster::ConfigShape()));
    return ipam::cluster::ValidateConfig(conf);
  };
  validators["portmap"] = [](std::string_view text) -> Status {
    NG_ASSIGN_OR_RETURN(cni::NetConf conf, cni::ParseNetConf(text, portmap::ConfigShape()));
    return portmap::ValidateConfig(conf);
  };
  validators["bandwidth"] = [](std::string_view text) -> Status {
    NG_ASSIGN_OR_RETURN(cni::NetConf conf, cni::ParseNetConf(text, bandwidth::ConfigShape()));
    return bandwidth::ValidateConfig(conf);
  };
  validators["bridge"] = [](std::string_view text) -> Status {
    NG_ASSIGN_OR_RETURN(cni::NetConf conf, cni::ParseNetConf(text, bridge::ConfigShape()));
    return bridge::ValidateConfig(conf);
  };
  return validators;
}

}  // namespace nodegate::runtime
