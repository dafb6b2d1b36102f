#pragma once
// Entry point of `nodegate cni`: run a conflist as a container runtime does. argv[0] is the
// subcommand name.

namespace nodegate::runtime {

int RunCniCli(int argc, char** argv);

}  // namespace nodegate::runtime
