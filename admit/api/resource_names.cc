#include "admit/api/resource_names.h"

#include <string>

namespace nodegate::admit {
namespace {

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// Qualified-name part: <=63 chars, alphanumeric at both ends, [-_.A-Za-z0-9] inside.
bool IsQualifiedNamePart(std::string_view s) {
  if (s.empty() || s.size() > 63 || !IsAlnum(s.front()) || !IsAlnum(s.back())) {
    return false;
  }
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

// DNS-1123 subdomain: <=253 chars, dot-separated labels of [a-z0-9-], alphanumeric at ends.
bool IsDns1123Subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) {
    return false;
  }
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (label.empty()) {
      return false;
    }
    auto lower_alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    if (!lower_alnum(label.front()) || !lower_alnum(label.back())) {
      return false;
    }
    for (char c : label) {
      if (!lower_alnum(c) && c != '-') {
        return false;
      }
    }
    if (dot == std::string_view::npos) {
      return true;
    }
    start = dot + 1;
  }
}

}  // namespace

bool IsPrefixedNativeResource(std::string_view name) {
  return name.find("kubernetes.io/") != std::string_view::npos;
}

bool IsNativeResource(std::string_view name) {
  return name.find('/') == std::string_view::npos || IsPrefixedNativeResource(name);
}

bool IsHugePageResourceName(std::string_view name) { return name.starts_with("hugepages-"); }

bool IsAttachableVolumeResourceName(std::string_view name) {
  return name.starts_with("attachable-volumes-");
}

bool IsQualifiedName(std::string_view value) {
  size_t slash = value.find('/');
  if (slash == std::string_view::npos) {
    return IsQualifiedNamePart(value);
  }
  if (value.find('/', slash + 1) != std::string_view::npos) {
    return false;
  }
  return IsDns1123Subdomain(value.substr(0, slash)) && IsQualifiedNamePart(value.substr(slash + 1));
}

bool IsExtendedResourceName(std::string_view name) {
  if (IsNativeResource(name) || name.starts_with("requests.")) {
    return false;
  }
  std::string for_quota = "requests.";
  for_quota.append(name);
  return IsQualifiedName(for_quota);
}

bool IsScalarResourceName(std::string_view name) {
  return IsExtendedResourceName(name) || IsHugePageResourceName(name) ||
         IsPrefixedNativeResource(name) || IsAttachableVolumeResourceName(name);
}

bool IsValidLabelValue(std::string_view value) {
  return value.empty() || IsQualifiedNamePart(value);
}

}  // namespace nodegate::admit
