// The bandwidth plugin binary: all behaviour lives in bandwidth_lib (plugins/bandwidth/plugin.h).
#include "lib/cni/sibling.h"
#include "lib/cni/skel.h"
#include "lib/sys/detached.h"
#include "lib/sys/prefault.h"
#include "plugins/bandwidth/plugin.h"

NODEGATE_PREFAULT_AT_START();
NODEGATE_PLUGIN_NOTE("bandwidth");

int main() {
  // A plugin process exits right after its verb: DEL may leave the ifb's deletion to a helper.
  nodegate::sys::AllowDetachedWork();
  return nodegate::cni::PluginMain(nodegate::bandwidth::MakePlugin());
}
