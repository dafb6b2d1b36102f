#pragma once
// The configuration validators of our own plugins, by plugin type, for `conf validate`:
// "portmap", "bandwidth", "bridge" (main plugin types), "host-local" and "cluster-ipam" (IPAM
// types). Each is the function the plugin itself runs before its first syscall.

#include <map>
#include <string>

#include "runtime/validate/validate.h"

namespace nodegate::runtime {

std::map<std::string, ConfigValidator> OurPluginValidators();

}  // namespace nodegate::runtime
