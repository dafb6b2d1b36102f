#pragma once
// Running one CNI plugin binary as a runtime does (spec 1.1.0 section 1.12 behaviour of
// libcni's pkg/invoke): find it in CNI_PATH, exec it with the CNI_* variables and the config
// on stdin, copy its stderr through, and turn its stdout into a result or the spec's error.
//
//   RealExecutor exec;
//   NG_ASSIGN_OR_RETURN(std::string binary, exec.FindInPath("bridge", {"/usr/lib/cni"}));
//   CniEnv env{.command = "ADD", .container_id = "c1", .netns = "/run/netns/c1",
//              .ifname = "eth0", .path = "/usr/lib/cni"};
//   NG_ASSIGN_OR_RETURN(cni::CniResult r, ExecPluginWithResult(exec, binary, env, conf, "1.0.0"));

#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/cni/types.h"

namespace nodegate::runtime {

// The CNI_* variables of one invocation. Empty values are not set (and inherited CNI_*
// variables are removed), so GC and STATUS run without a container ID, as libcni sends them.
struct CniEnv {
  std::string command;
  std::string container_id;
  std::string netns;
  std::string ifname;
  std::string args;  // CNI_ARGS, "K=V;K2=V2"
  std::string path;  // CNI_PATH, ':'-separated
};

// The invocation's CNI_* variables as "NAME=value", the empty ones left out (as libcni does).
std::vector<std::string> CniVariables(const CniEnv& env);

struct ExecOutput {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// The process boundary, replaceable in tests.
class Executor {
 public:
  virtual ~Executor() = default;
  // Runs `binary` with the environment and stdin. An error only when it could not be started.
  virtual Result<ExecOutput> Run(const std::string& binary, const CniEnv& env,
                                 const std::string& stdin_data) = 0;
  // First `<dir>/<type>` that is a regular file, dirs in order (libcni's FindInPath).
  virtual Result<std::string> FindInPath(const std::string& type,
                                         const std::vector<std::string>& dirs);
};

// fork/exec with pipes. Plugin stderr is captured and also copied to our stderr. An exec that
// fails with ETXTBSY ("text file busy", an installer is replacing the binary) is retried up to
// 5 more times, 1 s apart, as libcni does.
class RealExecutor : public Executor {
 public:
  Result<ExecOutput> Run(const std::string& binary, const CniEnv& env,
                         const std::string& stdin_data) override;
};

// Splits a CNI_PATH-style list on ':' (empty entries dropped).
std::vector<std::string> SplitPath(const std::string& path);

// Runs a plugin and returns its stdout. A non-zero exit becomes the plugin's error JSON from
// stdout, or, when stdout holds none, `netplugin failed: "<stderr>"` (libcni's wording).
Result<std::string> ExecPlugin(Executor& exec, const std::string& binary, const CniEnv& env,
                               const std::string& stdin_data);

// ExecPlugin plus decoding of the ADD result; a result without cniVersion gets the config's.
Result<cni::CniResult> ExecPluginWithResult(Executor& exec, const std::string& binary,
                                            const CniEnv& env, const std::string& stdin_data,
                                            const std::string& config_version);

// ExecPlugin for verbs without output (DEL, CHECK, GC, STATUS).
Status ExecPluginWithoutResult(Executor& exec, const std::string& binary, const CniEnv& env,
                               const std::string& stdin_data);

// The versions a plugin supports, asked with VERSION (libcni's GetVersionInfo): a plugin that
// answers "unknown CNI_COMMAND: VERSION" supports 0.1.0 only; a reply without
// supportedVersions is accepted only for cniVersion 0.2.0 (then 0.1.0 and 0.2.0).
Result<std::vector<std::string>> GetVersionInfo(Executor& exec, const std::string& binary);

}  // namespace nodegate::runtime
