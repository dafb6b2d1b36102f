#pragma once
// Resource-name classes of pkg/apis/core/v1/helper (which names the scheduler tracks and checks).

#include <string_view>

namespace nodegate::admit {

// IsPrefixedNativeResource: the name contains "kubernetes.io/".
bool IsPrefixedNativeResource(std::string_view name);
// IsNativeResource: no "/" in the name, or a prefixed native resource.
bool IsNativeResource(std::string_view name);
// IsHugePageResourceName: "hugepages-<size>".
bool IsHugePageResourceName(std::string_view name);
// IsAttachableVolumeResourceName: "attachable-volumes-<plugin>".
bool IsAttachableVolumeResourceName(std::string_view name);
// IsExtendedResourceName: not native, not "requests.*", and "requests.<name>" is a valid
// qualified name ("example.com/gpu").
bool IsExtendedResourceName(std::string_view name);
// IsScalarResourceName: tracked in the scheduler's scalar map and checked by NodeResourcesFit.
bool IsScalarResourceName(std::string_view name);
// IsQualifiedName: apimachinery validation.IsQualifiedName ("[prefix/]name").
bool IsQualifiedName(std::string_view value);
// IsValidLabelValue: empty or <=63 chars of [A-Za-z0-9_.-] beginning and ending alphanumeric.
bool IsValidLabelValue(std::string_view value);

}  // namespace nodegate::admit
