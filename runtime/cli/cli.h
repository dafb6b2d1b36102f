#pragma once
// Entry points of `nodegate cni` (run a conflist as a runtime does) and `nodegate conf`
// (validate CNI configuration). argv[0] is the subcommand name.

namespace nodegate::runtime {

int RunCniCli(int argc, char** argv);
int RunConfCli(int argc, char** argv);

}  // namespace nodegate::runtime
