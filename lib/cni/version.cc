#include "lib/cni/version.h"

#include <charconv>

namespace nodegate::cni {

std::string EffectiveVersion(std::string_view version) {
  return std::string(version.empty() ? kDefaultVersion : version);
}

const std::vector<std::string>& AllVersions() {
  static const std::vector<std::string> kAll = {"0.1.0", "0.2.0", "0.3.0", "0.3.1",
                                                "0.4.0", "1.0.0", "1.1.0"};
  return kAll;
}

Result<SemVer> ParseVersion(std::string_view text) {
  if (text.empty()) {
    return SemVer{0, 1, 0};
  }
  SemVer v;
  int* parts[3] = {&v.major, &v.minor, &v.patch};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int i = 0; i < 3; ++i) {
    auto [next, ec] = std::from_chars(p, end, *parts[i]);
    if (ec != std::errc() || next == p) {
      return Error(kErrDecode, "invalid version \"" + std::string(text) + "\"");
    }
    p = next;
    if (i < 2) {
      if (p == end || *p != '.') {
        return Error(kErrDecode, "invalid version \"" + std::string(text) + "\"");
      }
      ++p;
    }
  }
  if (p != end) {
    return Error(kErrDecode, "invalid version \"" + std::string(text) + "\"");
  }
  return v;
}

Result<ResultFamily> FamilyOf(std::string_view version) {
  if (version.empty() || version == "0.1.0" || version == "0.2.0") {
    return ResultFamily::k020;
  }
  if (version == "0.3.0" || version == "0.3.1" || version == "0.4.0") {
    return ResultFamily::k040;
  }
  if (version == "1.0.0" || version == "1.1.0") {
    return ResultFamily::k100;
  }
  return Error(kErrIncompatibleVersion,
               "unsupported CNI result version \"" + std::string(version) + "\"");
}

bool VersionAtLeast(std::string_view a, std::string_view b) {
  auto va = ParseVersion(a);
  auto vb = ParseVersion(b);
  const SemVer sa = va.ok() ? *va : SemVer{};
  const SemVer sb = vb.ok() ? *vb : SemVer{};
  return sa >= sb;
}

std::string AboutText(std::string_view plugin_name) {
  return "CNI " + std::string(plugin_name) + " plugin v" NODEGATE_VERSION;
}

std::string QuoteVersionList(const std::vector<std::string>& versions) {
  std::string out = "[";
  for (size_t i = 0; i < versions.size(); ++i) {
    if (i > 0) {
      out += ' ';
    }
    out += '"' + versions[i] + '"';
  }
  return out + "]";
}

}  // namespace nodegate::cni
