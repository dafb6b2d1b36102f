#pragma once
// Sibling plugins: this build's own plugins, run in this process instead of exec'd.
//
// bridge delegates to its IPAM plugin as the reference does (delegate.h: the first
// `<dir>/<type>` of CNI_PATH). When that file is this same build's host-local, running the copy
// of host-local linked into bridge is the same code on the same input, without a second
// process: about 0.9 ms of a paused bridge ADD's 4 (docs/performance/chain.md). Any other file
// there (the reference's host-local, a wrapper script, another build's) is exec'd as before.
//
// How a binary says what it is: an ELF note in its first page, owner "nodegate", type
// kPluginNoteType, whose text is "<plugin type>\0<build token>\0". The build token is
// "<version>+<commit>" (lib/CMakeLists.txt); a build without a commit has an empty one, and
// its plugins run no sibling in-process. Plugins of one `make build` share the
// token; a developer who rebuilds one target alone may pair a bridge with an older host-local
// of the same commit, whose linked-in copy then runs instead of the file.
//
//   NODEGATE_PLUGIN_NOTE("host-local");                     // a plugin's main.cc
//   cni::LinkSibling("host-local", &ipam::MakePlugin);      // a delegating plugin's main.cc

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "lib/cni/build_token.h"  // generated: NODEGATE_BUILD_TOKEN
#include "lib/cni/skel.h"

namespace nodegate::cni {

inline constexpr char kNoteOwner[] = "nodegate";
inline constexpr uint32_t kPluginNoteType = 0x4e470001;  // "NG", 1

// This build's token; empty when the build has no commit.
inline constexpr std::string_view kBuildToken = NODEGATE_BUILD_TOKEN;

// The ELF note of a plugin binary (Elf64_Nhdr and Elf32_Nhdr are alike: three 32-bit words,
// then the owner and the text, each padded to 4 bytes).
template <size_t TypeSize, size_t TokenSize>
struct alignas(4) PluginNote {
  uint32_t namesz = sizeof(kNoteOwner);
  uint32_t descsz = TypeSize + TokenSize;
  uint32_t type = kPluginNoteType;
  char name[(sizeof(kNoteOwner) + 3) / 4 * 4] = {};
  char desc[(TypeSize + TokenSize + 3) / 4 * 4] = {};
};

template <size_t TypeSize, size_t TokenSize>
constexpr PluginNote<TypeSize, TokenSize> MakePluginNote(const char (&type)[TypeSize],
                                                         const char (&token)[TokenSize]) {
  PluginNote<TypeSize, TokenSize> note;
  for (size_t i = 0; i < sizeof(kNoteOwner); ++i) note.name[i] = kNoteOwner[i];
  for (size_t i = 0; i < TypeSize; ++i) note.desc[i] = type[i];
  for (size_t i = 0; i < TokenSize; ++i) note.desc[TypeSize + i] = token[i];
  return note;
}

// True when `path` is an ELF executable of this machine's class whose note names plugin `type`
// of this build. Reads at most two pages; any error, a missing note or an empty build token
// answers false (the caller execs).
bool IsSiblingBinary(const std::string& path, std::string_view type);

// Makes `type` runnable in-process by DelegateCall (delegate.h) when its binary on CNI_PATH is
// this build's (IsSiblingBinary). Called from a delegating plugin's main, before PluginMain.
void LinkSibling(std::string type, Plugin (*make_plugin)());

// The plugin LinkSibling linked for `type`, or null.
Plugin (*LinkedSibling(std::string_view type))();

}  // namespace nodegate::cni

// aligned(4): a note segment is 4-aligned, and without the attribute GCC aligns an object this
// size to 32 bytes on x86-64, which readers of notes reject.
#define NODEGATE_PLUGIN_NOTE(type)                                \
  [[gnu::used, gnu::section(".note.nodegate"),                    \
    gnu::aligned(4)]] static constexpr auto kNodegatePluginNote = \
      ::nodegate::cni::MakePluginNote(type, NODEGATE_BUILD_TOKEN)
