#pragma once
// `nodegate explain` (and `kubectl nodegate explain`): why a pod fits no node, node by node,
// naming who holds what (explain/README.md). argv[0] is the subcommand name.
// Exit status: 0 it fits somewhere (explain pod; explain daemonset: its pod runs or fits on
// every node it should run on; --pending: no Pending pod is blocked), 1 it fits nowhere (or a
// daemon pod is blocked on some node, or some Pending pod is), 2 unusable input (flags, a file
// that is not a pod, a pod or DaemonSet that does not exist), 3 what it needs could not be read
// (the API server unreachable, the credentials refused, a read forbidden).

namespace nodegate::explain_cli {

int RunExplainCli(int argc, char** argv);

}  // namespace nodegate::explain_cli
