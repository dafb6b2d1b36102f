// The bandwidth plugin binary: all behaviour lives in bandwidth_lib (plugins/bandwidth/plugin.h).
#include "lib/cni/skel.h"
#include "plugins/bandwidth/plugin.h"

int main() { return nodegate::cni::PluginMain(nodegate::bandwidth::MakePlugin()); }
