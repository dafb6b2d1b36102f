#pragma once
// cluster-ipam's node-local agent, and the exec'd plugin's side of it (README.md, "The agent").
//
// An exec'd plugin opens a TLS connection to etcd on every call, which costs more than the
// rest of an ADD together. The agent (`cluster-ipam agent`, the same executable, run beside
// the installer by the DaemonSet) keeps its etcd connections warm and runs the very same verbs
// (plugin.h) in-process; the exec'd plugin forwards its call over a unix socket and prints the
// agent's answer. When there is no agent, or it does not answer, the plugin does the work
// itself, as it would without one: ADD and DEL are idempotent, so a call the agent may have
// half-answered is safe to do again.
//
// The protocol, one request per connection:
//   plugin -> agent  a JSON object, then shutdown(SHUT_WR); at most kMaxRequestBytes:
//                    {"agent": 1, "env": {"CNI_COMMAND": ..., "CNI_CONTAINERID": ...,
//                     "CNI_NETNS": ..., "CNI_IFNAME": ..., "CNI_ARGS": ..., "CNI_PATH": ...,
//                     "KUBERNETES_NODE_NAME": ...}, "hostname": "...", "stdin": "<the config>"}
//   agent -> plugin  "accepted\n" once the request is read and valid (the plugin waits
//                    kAcceptTimeout for it), then {"exit": 0 or 1, "stdout": "..."}: what the
//                    plugin would have printed and its exit status; then the agent closes.
// A request the agent refuses (too large, too slow, not JSON, a version it does not speak, a
// peer that is not root) is closed without "accepted": the plugin works directly.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "lib/base/result.h"
#include "lib/cni/skel.h"

namespace nodegate::ipam::cluster {

inline constexpr int kAgentProtocol = 1;
// A CNI config is a few KiB; a conflist's ipam object with every option under 64 KiB.
inline constexpr size_t kMaxRequestBytes = 1 << 20;
inline constexpr size_t kMaxAnswerBytes = 4 << 20;
// The plugin's wait for "accepted": the agent only reads and parses before sending it.
inline constexpr std::chrono::milliseconds kAcceptTimeout{1000};
// The agent's wait for the whole request once a connection is accepted.
inline constexpr std::chrono::milliseconds kRequestReadTimeout{2000};
// How long a request may wait behind others in the agent before it is answered with code 11.
inline constexpr std::chrono::milliseconds kQueueTimeout{10000};

// What the plugin forwards: the CNI environment and the node name's sources, and stdin.
struct AgentRequest {
  std::map<std::string, std::string> env;  // only the names in ForwardedEnvironment()
  std::string hostname;
  std::string stdin_data;
};

struct AgentAnswer {
  int exit_status = 0;
  std::string stdout_data;
};

// CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_ARGS, CNI_PATH,
// KUBERNETES_NODE_NAME.
const std::vector<std::string>& ForwardedEnvironment();

std::string EncodeAgentRequest(const AgentRequest& request);
// Strict: an object of exactly the protocol's keys and types (code 4 otherwise).
Result<AgentRequest> DecodeAgentRequest(std::string_view bytes);
std::string EncodeAgentAnswer(const AgentAnswer& answer);
Result<AgentAnswer> DecodeAgentAnswer(std::string_view bytes);

// The exec'd plugin's main: for ADD, DEL, CHECK, GC and STATUS, forwards the call to the agent
// at the config's ipam.agentSocket and prints its answer; without an answer (no socket, refused,
// silent, closed early), or for anything else, runs the verbs itself (PluginMain). Which one is
// logged at info (the config's logFile; stderr with NODEGATE_LOG_LEVEL=info), a failed agent
// at warning (stderr too), never on stdout.
int ClusterIpamMain(const cni::ProcessIo& io);

// `cluster-ipam agent [--socket PATH]`: serves until SIGTERM or SIGINT, then stops accepting,
// removes its socket, lets the requests it holds finish (at most kDrainTimeout) and exits 0.
int AgentMain(int argc, char** argv);
inline constexpr std::chrono::milliseconds kDrainTimeout{8000};

}  // namespace nodegate::ipam::cluster
