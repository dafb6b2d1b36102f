#pragma once
// Pod priority as the API server's Priority admission plugin sets it
// (plugin/pkg/admission/priority/admission.go) when a pod is created:
//   - spec.priorityClassName names a PriorityClass: spec.priority becomes its value;
//   - no name: the globalDefault class (the lowest value if several claim it) gives its name and
//     value; with no default the priority is 0;
//   - a name that no class has, or a spec.priority that differs from the computed one, makes
//     the API server refuse the pod.
// system-cluster-critical (2000000000) and system-node-critical (2000001000) always exist.
//
// The set is "complete" when it was read from a file (--priority-classes: every class of the
// cluster); then unknown names are errors and unnamed pods get the default. Without a file only
// the two built-in classes are known, and pods that name another class are left as they are:
// a user-defined class cannot exceed 1000000000, so it never makes a pod critical.
//
// Static pods are not resolved by anyone: the kubelet reads their manifests as they are.

#include <optional>
#include <string>
#include <vector>

#include "admit/api/load.h"
#include "admit/api/types.h"
#include "lib/base/result.h"

namespace nodegate::admit {

inline constexpr int32_t kHighestUserDefinablePriority = 1000000000;

struct PriorityClass {
  std::string name;
  int32_t value = 0;
  bool global_default = false;
};

class PriorityClasses {
 public:
  // BuiltIn: only system-cluster-critical and system-node-critical; not complete.
  static PriorityClasses BuiltIn();
  // FromDocuments: PriorityClass objects (alone, in a List or PriorityClassList, a JSON array or
  // a multi-document file), validated as the API server would; complete.
  static Result<PriorityClasses> FromDocuments(const std::vector<Document>& documents);

  const PriorityClass* Find(const std::string& name) const;
  // GlobalDefault: the lowest-valued class marked globalDefault, or nullptr.
  const PriorityClass* GlobalDefault() const;
  bool complete() const { return complete_; }

 private:
  std::vector<PriorityClass> classes_;
  bool complete_ = false;
};

// LoadPriorityClasses: FromDocuments on a file (or "-").
Result<PriorityClasses> LoadPriorityClasses(const std::string& path);

// ResolvePriority: what priority admission does to a pod being created. Errors name the field
// ("spec.priorityClassName: no PriorityClass with name x was found").
nodegate::Status ResolvePriority(Pod& pod, const PriorityClasses& classes);

}  // namespace nodegate::admit
