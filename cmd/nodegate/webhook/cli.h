#pragma once
// `nodegate webhook`: the API server's validating admission webhook for pods created with a
// fixed spec.nodeName (webhook/README.md). argv[0] is the subcommand name. Runs until SIGTERM
// or SIGINT; exit status 0 after a clean stop, 2 for unusable flags or configuration.

namespace nodegate::webhook {

int RunWebhookCli(int argc, char** argv);

}  // namespace nodegate::webhook
