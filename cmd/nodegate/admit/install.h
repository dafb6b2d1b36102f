#pragma once
// InstallFileAtomically: write `contents` to DIR/FILENAME so that a reader (the kubelet's file
// source) sees either the old file or the complete new one: a hidden temporary file in the same
// folder (the kubelet ignores dot-files), fsync, rename over the target, fsync of the folder.
// An existing target keeps its permission bits; a new one gets 0600 (as kubeadm writes them).

#include <string>
#include <string_view>

#include "lib/base/result.h"

namespace nodegate::admit {

nodegate::Status InstallFileAtomically(const std::string& dir, const std::string& filename,
                                       std::string_view contents);

}  // namespace nodegate::admit
