#pragma once
// The fields every plugin's stdin config shares (spec 1.1.0 "Network configuration" plus the
// per-invocation keys a runtime adds). Plugins read their own keys from `raw`.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/result.h"
#include "lib/cni/go_json.h"
#include "lib/cni/types.h"

namespace nodegate::cni {

struct Attachment {
  std::string container_id;
  std::string ifname;
  auto operator<=>(const Attachment&) const = default;
};

struct NetConf {
  std::string cni_version;  // "" in the input becomes "0.1.0" (the spec's default)
  std::string name;
  std::string type;
  Json raw = Json::object();             // the whole stdin object
  Json runtime_config = Json::object();  // "runtimeConfig", {} when absent
  Json args = Json::object();            // "args", {} when absent
  Json ipam = Json::object();            // "ipam", {} when absent
  Json prev_result_json;                 // raw "prevResult" (null when absent)
  std::optional<CniResult> prev_result;  // decoded in the config's version
  // Operator logging (our extension; the reference logs nothing).
  std::string log_file;
  std::string log_level;
  // Strictness::kNameAndVersion only: why fields were left unset (the plugin logs them).
  std::vector<std::string> unreadable;
};

// The reference's types.NetConf as Go decodes it (cniVersion, name, type, capabilities, ipam,
// dns, prevResult, GC's valid attachments, and our logFile/logLevel), with a plugin's own
// fields added: a plugin declares the struct it embeds NetConf into.
gojson::Shape NetConfShape(std::vector<gojson::Field> plugin_fields = {});

// How much of the config must be readable.
enum class Strictness {
  kAll,             // every known field (ADD, CHECK, GC, STATUS, tools)
  kNameAndVersion,  // DEL: only JSON, cniVersion and name; a bad prevResult, runtimeConfig,
                    // args, ipam, type or log field is noted in `unreadable` and left unset
};

// Parses stdin as Go would decode it into `shape` (lib/cni/go_json.h): every key below is
// read under the reference's spelling whatever case the runtime used. Errors: 6 for bad JSON
// or a malformed known field, 1 for an unknown version family in prevResult. Does not
// validate the network name (the dispatcher does).
Result<NetConf> ParseNetConf(std::string_view stdin_bytes,
                             const gojson::Shape& shape = NetConfShape(),
                             Strictness strictness = Strictness::kAll);

// The GC input list: "cni.dev/valid-attachments", or "cni.dev/attachments" (spec tag text).
Result<std::vector<Attachment>> ParseValidAttachments(const Json& raw);

}  // namespace nodegate::cni
