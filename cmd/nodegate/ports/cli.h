#pragma once
// `nodegate ports`: every host-port claim on this node (declared, mapped, listening) joined
// into one row per (host IP, protocol, port) with a verdict. argv[0] is the subcommand name.
// Exit status: 0 the table was printed, 2 unusable input or an unreadable kernel state.

namespace nodegate::ports {

int RunPortsCli(int argc, char** argv);

}  // namespace nodegate::ports
