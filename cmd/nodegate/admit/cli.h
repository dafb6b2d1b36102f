#pragma once
// Entry points of `nodegate admit` and `nodegate guard`. argv[0] is the subcommand name.
// Exit status: 0 all admitted, 1 some rejected, 2 unusable input.

namespace nodegate::admit {

int RunAdmitCli(int argc, char** argv);
int RunGuardCli(int argc, char** argv);

}  // namespace nodegate::admit
