// What cluster-ipam's node agent reads from its socket, and what the plugin reads back
// (ipam/cluster/agent.h): the input is decoded as a request and as an answer. Each decoder
// either refuses it with a printable error, or gives a value whose encoding decodes to the same
// value; a decoded request only ever carries the forwarded CNI variables and a verb the agent
// runs.

#include <algorithm>

#include "ipam/cluster/agent.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/fuzz_target.h"

NG_FUZZ_TARGET(cluster_ipam_agent) {
  using namespace nodegate::ipam::cluster;
  using nodegate::fuzz::CheckErrorPrints;
  const auto request = DecodeAgentRequest(data);
  if (!request.ok()) {
    CheckErrorPrints(request.error());
  } else {
    const auto& forwarded = ForwardedEnvironment();
    for (const auto& [name, value] : request->env) {
      (void)value;
      NG_FUZZ_CHECK(std::find(forwarded.begin(), forwarded.end(), name) != forwarded.end());
    }
    const std::string command = request->env.at("CNI_COMMAND");
    NG_FUZZ_CHECK(command == "ADD" || command == "DEL" || command == "CHECK" || command == "GC" ||
                  command == "STATUS");
    // Text that is not UTF-8 is re-encoded with replacement characters: compare only the rest.
    if (nodegate::fuzz::IsValidUtf8(data)) {
      const auto again = DecodeAgentRequest(EncodeAgentRequest(*request));
      NG_FUZZ_CHECK(again.ok() && again->env == request->env &&
                    again->hostname == request->hostname &&
                    again->stdin_data == request->stdin_data);
    }
  }
  const auto answer = DecodeAgentAnswer(data);
  if (!answer.ok()) {
    CheckErrorPrints(answer.error());
  } else {
    NG_FUZZ_CHECK(answer->exit_status == 0 || answer->exit_status == 1);
    if (nodegate::fuzz::IsValidUtf8(data)) {
      const auto again = DecodeAgentAnswer(EncodeAgentAnswer(*answer));
      NG_FUZZ_CHECK(again.ok() && again->exit_status == answer->exit_status &&
                    again->stdout_data == answer->stdout_data);
    }
  }
}
