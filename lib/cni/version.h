#pragma once
// CNI spec versions: parsing, ordering and the families that share a result schema.

#include <string>
#include <string_view>
#include <vector>

#include "lib/base/result.h"

namespace nodegate::cni {

// The spec version this library implements (printed by VERSION as "cniVersion").
inline constexpr std::string_view kSpecVersion = "1.1.0";

// The version of a config that names none (the spec's default).
inline constexpr std::string_view kDefaultVersion = "0.1.0";

// `version`, or kDefaultVersion when it is empty: how every reader of a config treats a
// missing or empty "cniVersion".
std::string EffectiveVersion(std::string_view version);

// Every version our plugins speak, oldest first.
const std::vector<std::string>& AllVersions();

// Result schema families: 0.1.0/0.2.0 ("020"), 0.3.0/0.3.1/0.4.0 ("040"), 1.0.0/1.1.0 ("100").
enum class ResultFamily { k020, k040, k100 };

struct SemVer {
  int major = 0, minor = 0, patch = 0;
  auto operator<=>(const SemVer&) const = default;
};

// Parses "X.Y.Z" (numbers only). Empty text is the spec's default "0.1.0".
Result<SemVer> ParseVersion(std::string_view text);

// Family of a supported version; an error (code 1) for versions no family covers.
Result<ResultFamily> FamilyOf(std::string_view version);

// a >= b, where both are valid versions (invalid text compares as 0.0.0).
bool VersionAtLeast(std::string_view a, std::string_view b);

// The first line a plugin prints without CNI_COMMAND, as the reference's release builds print
// it (their build sets the version to the release tag): "CNI portmap plugin v0.1.0".
std::string AboutText(std::string_view plugin_name);

// `["0.1.0" "0.2.0"]`, the reference's rendering of a version list in error details.
std::string QuoteVersionList(const std::vector<std::string>& versions);

}  // namespace nodegate::cni
