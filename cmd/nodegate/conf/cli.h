#pragma once
// Entry point of `nodegate conf` (validate CNI configuration). argv[0] is the subcommand name.

namespace nodegate::runtime {

int RunConfCli(int argc, char** argv);

}  // namespace nodegate::runtime
