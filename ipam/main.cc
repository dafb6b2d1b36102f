// Placeholder: answers every verb with "not implemented" until the plugin lands.
#include "lib/cni/skel.h"
#include "lib/cni/version.h"

int main() {
  nodegate::cni::Plugin plugin;
  plugin.name = "host-local";
  plugin.about = "CNI host-local plugin (nodegate)";
  plugin.supported_versions = nodegate::cni::AllVersions();
  return nodegate::cni::PluginMain(plugin);
}
