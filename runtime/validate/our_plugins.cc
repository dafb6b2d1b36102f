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
  validators["host-local"] = [](const cni::NetConf& conf) { return ipam::ValidateConfig(conf); };
#endif
#if defined(NODEGATE_HAVE_PORTMAP_LIB)
  validators["portmap"] = [](const cni::NetConf& conf) { return portmap::ValidateConfig(conf); };
#endif
#if defined(NODEGATE_HAVE_BANDWIDTH_LIB)
  validators["bandwidth"] = [](const cni::NetConf& conf) {
    return bandwidth::ValidateConfig(conf);
  };
#endif
  return validators;
}

}  // namespace nodegate::runtime
