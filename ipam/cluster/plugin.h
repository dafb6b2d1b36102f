#pragma once
// The cluster-ipam executable's verbs (ADD, DEL, CHECK, GC, STATUS; VERSION is the
// dispatcher's): each loads the config, opens an etcd client whose deadline is the verb's
// (etcd.timeout from the start of the call) and runs the Allocator (allocator.h).

#include "lib/cni/skel.h"

namespace nodegate::ipam::cluster {

cni::Plugin MakePlugin();

}  // namespace nodegate::ipam::cluster
