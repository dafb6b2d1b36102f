#pragma once
// Loading a kernel module the way the iptables tools do before their first use of x_tables
// (xtables_load_ko): the kernel autoloads nf_tables' parts on demand, but not ip_tables and
// ip6_tables, whose socket options do not exist until the module is in (libiptc then fails
// with "iptables who? (do you need to insmod?)"). A node where nothing has used the legacy
// tables since boot needs this once.
//
//   if (!sys::KernelModuleLoaded("/proc/net/ip_tables_names")) {
//     NG_RETURN_IF_ERROR(sys::LoadKernelModule("ip_tables"));
//   }

#include <string>

#include "lib/base/result.h"

namespace nodegate::sys {

// The program the kernel itself runs for module requests (/proc/sys/kernel/modprobe), as the
// iptables tools read it; "/sbin/modprobe" when that cannot be read.
std::string ModprobeProgram();

// Whether a module is in, by a file it makes (`proof`, e.g. /proc/net/ip_tables_names).
bool KernelModuleLoaded(const std::string& proof);

// Runs `modprobe -q <name>` (ModprobeProgram() unless `modprobe` is given) with no input, its
// output discarded (a plugin's stdout is its result), and waits for it. Errors: code 100 naming
// the module when the program cannot run or exits non-zero.
Status LoadKernelModule(const std::string& name, const std::string& modprobe = "");

}  // namespace nodegate::sys
