#pragma once
// Delegating to another plugin from inside a plugin (a main plugin calling its IPAM), as the
// reference's pkg/invoke does it (docs/cni-library.md, "Delegation"):
//
//   1. the binary is the first `<dir>/<type>` of CNI_PATH that is a regular file;
//   2. it runs with this process's whole environment, CNI_COMMAND set to the delegated verb,
//      and this process's whole stdin config, byte for byte;
//   3. its stderr is copied to ours once it exits; an exec refused with ETXTBSY (an installer
//      is replacing the file) is retried up to 5 more times, 1 s apart;
//   4. a non-zero exit returns the error JSON it printed, unchanged; with nothing on stdout,
//      `netplugin failed: "<stderr>"`, or `netplugin failed with no error message: exit
//      status N` when stderr is empty too;
//   5. ADD's result without a cniVersion gets the config's.
//
// A call starts at once and is collected later, so the caller's own kernel work overlaps the
// delegate's run (it is a separate process: nothing is shared but the pipes):
//
//   NG_ASSIGN_OR_RETURN(auto ipam, DelegateCall::Start("host-local", Command::kAdd, args));
//   ... create links ...
//   NG_ASSIGN_OR_RETURN(CniResult r, ipam.WaitForResult(args.conf.cni_version));
//
// The child is spawned with posix_spawn (glibc's clone with CLONE_VM|CLONE_VFORK: no copy of
// this process's page tables, which a plugin that mapped its heap at start has many of).
//
// A delegate whose binary is this build's own plugin of that type, linked into this one
// (sibling.h), runs in this process instead, within Start: the same environment and stdin,
// its stdout and exit status taken through points 4 and 5 as a child's are.

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "lib/base/result.h"
#include "lib/cni/skel.h"
#include "lib/cni/types.h"
#include "lib/sys/fd.h"

namespace nodegate::cni {

class DelegateCall {
 public:
  // Finds `type` on args.path and starts it with CNI_COMMAND=`command` and args.stdin_data.
  // Errors: code 7 for a type it cannot find (the reference's words), 5 when it cannot start.
  static Result<DelegateCall> Start(const std::string& type, Command command, const CmdArgs& args);
  DelegateCall(DelegateCall&&) noexcept;
  DelegateCall& operator=(DelegateCall&&) = delete;
  DelegateCall(const DelegateCall&) = delete;
  ~DelegateCall();  // a call never collected is still waited for (no zombie, no orphan)

  // Waits for the plugin; its stdout on success, else its error (point 4 above).
  Result<std::string> Wait();
  // Wait, then decode ADD's result (point 5).
  Result<CniResult> WaitForResult(const std::string& config_version);

 private:
  DelegateCall() = default;

  std::string binary_;
  pid_t pid_ = -1;
  sys::UniqueFd stdin_, stdout_, stderr_;
  std::string input_;  // what is left to write to the child's stdin
  size_t written_ = 0;
  // A sibling run in-process and not collected yet: its exit status and stdout.
  std::optional<int> in_process_status_;
  std::string in_process_out_;
};

// "/opt/cni/bin:/usr/lib/cni" -> the binary `type` in the first folder that has it as a regular
// file. Errors (code 7): `failed to find plugin "<type>" in path [<dirs>]`, `no paths provided`.
Result<std::string> FindPluginInPath(const std::string& type, const std::string& cni_path);

// One-shot helpers for verbs without a result.
Status DelegateWithoutResult(const std::string& type, Command command, const CmdArgs& args);

}  // namespace nodegate::cni
