#pragma once
// Runs a network configuration list the way a runtime's CNI library does (libcni, spec 1.1.0
// section 3):
//   ADD    plugins in order, each getting the previous plugin's result as prevResult; the
//          final result is cached (see cache.h). On failure the whole list is deleted again,
//          as runtimes do after a failed ADD, and the first error is returned.
//   DEL    plugins in reverse order, each with the cached result (list version >= 0.4.0);
//          keeps going after a plugin fails, so one broken plugin does not leak the others'
//          resources; the cache entry is removed only when every plugin succeeded.
//   CHECK  plugins in order with the cached result (list version >= 0.4.0, skipped when
//          disableCheck is set); an error when nothing is cached.
//   GC     DEL for every cached attachment of this network that is not in the valid list,
//          then GC on every plugin with "cni.dev/valid-attachments" (list version >= 1.1.0,
//          skipped when disableGC is set); keeps going and reports every failure.
//   STATUS every plugin in order (list version >= 1.1.0), stopping at the first failure.
// Each plugin's stdin is its object from the list with "name" and "cniVersion" of the list,
// "prevResult" when there is one, and "runtimeConfig" holding only the capability arguments
// the plugin declares in "capabilities" (libcni's injectRuntimeConfig).
//
//   RealExecutor exec;
//   Chain chain({.cni_path = {"/opt/cni/bin"}}, exec);
//   NG_ASSIGN_OR_RETURN(cni::CniResult r, chain.Add(list, {.container_id = "c1", ...}));

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/result.h"
#include "lib/cni/conf.h"
#include "lib/cni/types.h"
#include "runtime/chain/cache.h"
#include "runtime/conflist/conflist.h"
#include "runtime/invoke/invoke.h"

namespace nodegate::runtime {

// One attachment's runtime inputs (libcni's RuntimeConf).
struct RuntimeConf {
  std::string container_id;
  std::string netns;
  std::string ifname;
  std::vector<std::pair<std::string, std::string>> args;  // CNI_ARGS pairs
  cni::Json capability_args = cni::Json::object();        // {"portMappings": [...], ...}
};

struct ChainOptions {
  std::vector<std::string> cni_path;
  std::string cache_dir = kDefaultCacheDir;
};

// What STATUS did: every plugin answered, or the list version is below 1.1.0 (not asked).
enum class StatusOutcome { kAvailable, kNotSupportedByVersion };

class Chain {
 public:
  Chain(ChainOptions options, Executor& exec) : options_(std::move(options)), exec_(exec) {}

  Result<cni::CniResult> Add(const NetworkConfigList& list, const RuntimeConf& rt);
  Status Check(const NetworkConfigList& list, const RuntimeConf& rt);
  Status Del(const NetworkConfigList& list, const RuntimeConf& rt);
  Status Gc(const NetworkConfigList& list, const std::vector<cni::Attachment>& valid);
  Result<StatusOutcome> GetStatus(const NetworkConfigList& list);

  // The cached final ADD result converted to the list's version; nullopt when none.
  Result<std::optional<cni::CniResult>> CachedResult(const NetworkConfigList& list,
                                                     const RuntimeConf& rt) const;

  // `rt` completed from the cache: when the caller gave no capability arguments or CNI_ARGS,
  // those stored at ADD time are used (portmap needs its mappings to clean up on DEL); an
  // empty netns comes from the cache ("netns", or the result's sandbox for our interface).
  RuntimeConf WithCachedArgs(const NetworkConfigList& list, const RuntimeConf& rt) const;

  // The cached attachments of `network` whose network namespace still exists: what `gc`
  // keeps when the caller names no valid attachments.
  std::vector<cni::Attachment> LiveAttachments(const std::string& network) const;

 private:
  Status DelPlugins(const NetworkConfigList& list, const RuntimeConf& rt,
                    const std::optional<cni::CniResult>& prev);
  CniEnv Env(const std::string& command, const RuntimeConf& rt) const;

  ChainOptions options_;
  Executor& exec_;
};

// The stdin of one plugin: its object plus name, cniVersion, prevResult (encoded in the
// result's own version) and the runtimeConfig of declared capabilities. Compact JSON with
// sorted keys (what Go's map marshalling produces).
Result<std::string> BuildPluginConfig(const NetworkConfigList& list, const PluginConfig& plugin,
                                      const std::optional<cni::CniResult>& prev_result,
                                      const cni::Json& capability_args);

// "K=V;K2=V2".
std::string JoinCniArgs(const std::vector<std::pair<std::string, std::string>>& args);

}  // namespace nodegate::runtime
