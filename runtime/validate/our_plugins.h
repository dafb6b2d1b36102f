#pragma once
// File: runtime/validate/our_plugins.h
//
// The configuration validators of our own plugins, by plugin type, for `conf validate`:
// "portmap", "bandwidth" (main plugin types) and "host-local" (an IPAM type). Each is the
// function the plugin itself runs before its first syscall. A plugin library that is not part
// of this build contributes nothing (the build never depends on a plugin being finished).

#include <map>
#include <string>

#include "runtime/validate/validate.h"

namespace nodegate::runtime {

std::map<std::string, ConfigValidator> OurPluginValidators();

}  // namespace nodegate::runtime
