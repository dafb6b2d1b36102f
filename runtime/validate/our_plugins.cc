#include "runtime/validate/our_plugins.h"

// NODEGATE_HAVE_<LIB> is defined by runtime/CMakeLists.txt for each plugin library that exists.

namespace nodegate::runtime {

std::map<std::string, ConfigValidator> OurPluginValidators() {
  std::map<std::string, ConfigValidator> validators;
  return validators;
}

}  // namespace nodegate::runtime
