#include "runtime/validate/our_plugins.h"

// NODEGATE_HAVE_<LIB> is defined by runtime/CMakeLists.txt for each plugin library that exists.
#if defined(NODEGATE_HAVE_IPAM_LIB)
#include "ipam/config.h"
#endif
#if defined(NODEGATE_HAVE_PORTMAP_LIB)
#include "plugins/portmap/config.h"
#endif
#if defined(NODEGATE_HAVE_BANDWIDTH_LIB)
#include "plugins/bandwidth/config.h"
#endif

namespace nodegate::runtime {

std::map<std::string, ConfigValidator> OurPluginValidators() {
  std::map<std::string, ConfigValidator> validators;
#if defined(NODEGATE_HAVE_IPAM_LIB)
  validators["host-local"] = [](std::string_view text) -> Status {
    NG_ASSIGN_OR_RETURN(cni::NetConf conf, cni::ParseNetConf(text, ipam::ConfigShape()));
    return ipam::ValidateConfig(conf);
  };
#endif
#if defined(NODEGATE_HAVE_PORTMAP_LIB)
  validators["portmap"] = [](std::string_view text) -> Status {
    NG_ASSIGN_OR_RETURN(cni::NetConf conf, cni::ParseNetConf(text, portmap::ConfigShape()));
    return portmap::ValidateConfig(conf);
  };
#endif
#if defined(NODEGATE_HAVE_BANDWIDTH_LIB)
  validators["bandwidth"] = [](std::string_view text) -> Status {
    NG_ASSIGN_OR_RETURN(cni::NetConf conf, cni::ParseNetConf(text, bandwidth::ConfigShape()));
    return bandwidth::ValidateConfig(conf);
  };
#endif
  return validators;
}

}  // namespace nodegate::runtime
