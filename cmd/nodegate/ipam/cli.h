#pragma once
// `nodegate ipam`: cluster-ipam's pool as an operator sees it (ipam/cluster/README.md):
//   show     pools, blocks by node and their use, borrowed addresses
//   check    duplicates, leaks (with --node and the runtime's CNI cache), blocks and handles of
//            nodes that are gone (with --nodes), values and keys that disagree
//   release  one handle (--handle ID/IFNAME), or the blocks of a removed node (--node NAME,
//            --handles to release its handles first)
//   import   a node's host-local reservations recorded in the pool (--node, --data-dir)
// The network, its etcd endpoints and certificates come from its CNI configuration (--conf, a
// .conflist or a folder; the plugin whose ipam type is cluster-ipam). Table or -o json.
// argv[0] is the subcommand name. Exit status: 0 done (check: no problem), 1 check found
// problems or release kept blocks or import refused addresses, 2 unusable input, 3 etcd failed.

namespace nodegate::ipam::cluster {

int RunIpamCli(int argc, char** argv);

}  // namespace nodegate::ipam::cluster
