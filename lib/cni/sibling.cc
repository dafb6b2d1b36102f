#include "lib/cni/sibling.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <cstring>
#include <utility>
#include <vector>

#include "lib/sys/fd.h"

namespace nodegate::cni {
namespace {

// The notes are in the first page of every executable the linkers we use write; a note
// segment further in is read on its own, up to this much.
constexpr size_t kHeadBytes = 4096;
constexpr size_t kMaxNoteSegment = 4096;

constexpr unsigned char kOwnClass = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;
#if defined(__x86_64__)
constexpr uint16_t kOwnMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kOwnMachine = EM_AARCH64;
#else
constexpr uint16_t kOwnMachine = EM_NONE;  // no sibling runs in-process
#endif

size_t AlignUp(size_t n, size_t align) { return (n + align - 1) / align * align; }

// Whether one note segment's bytes hold our note with `text`.
bool SegmentHasNote(const char* data, size_t size, size_t align, std::string_view text) {
  size_t at = 0;
  while (at + sizeof(ElfW(Nhdr)) <= size) {
    ElfW(Nhdr) header;
    std::memcpy(&header, data + at, sizeof(header));
    const size_t name_at = at + sizeof(header);
    const size_t desc_at = name_at + AlignUp(header.n_namesz, align);
    const size_t next = desc_at + AlignUp(header.n_descsz, align);
    if (header.n_namesz > size || header.n_descsz > size || next > size || next <= at) {
      return false;
    }
    if (header.n_type == kPluginNoteType && header.n_namesz == sizeof(kNoteOwner) &&
        std::memcmp(data + name_at, kNoteOwner, sizeof(kNoteOwner)) == 0 &&
        std::string_view(data + desc_at, header.n_descsz) == text) {
      return true;
    }
    at = next;
  }
  return false;
}

bool ReadAt(int fd, char* out, size_t size, off_t offset, size_t& got) {
  const ssize_t n = ::pread(fd, out, size, offset);
  if (n < 0) return false;
  got = static_cast<size_t>(n);
  return true;
}

std::vector<std::pair<std::string, Plugin (*)()>>& Siblings() {
  static std::vector<std::pair<std::string, Plugin (*)()>> siblings;
  return siblings;
}

}  // namespace

bool IsSiblingBinary(const std::string& path, std::string_view type) {
  if (kBuildToken.empty()) return false;
  std::string text(type);
  text.push_back('\0');
  text.append(kBuildToken);
  text.push_back('\0');

  sys::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) return false;
  char head[kHeadBytes];
  size_t got = 0;
  if (!ReadAt(fd.get(), head, sizeof(head), 0, got) || got < sizeof(ElfW(Ehdr))) return false;
  ElfW(Ehdr) ehdr;
  std::memcpy(&ehdr, head, sizeof(ehdr));
  // This machine's class, byte order and architecture: a sibling runs here or is not one.
  if (std::memcmp(ehdr.e_ident, ELFMAG, SELFMAG) != 0 || ehdr.e_ident[EI_CLASS] != kOwnClass ||
      ehdr.e_machine != kOwnMachine || ehdr.e_phentsize != sizeof(ElfW(Phdr))) {
    return false;
  }
  const size_t table_end = ehdr.e_phoff + size_t{ehdr.e_phnum} * sizeof(ElfW(Phdr));
  if (ehdr.e_phoff == 0 || table_end > got) return false;
  for (size_t i = 0; i < ehdr.e_phnum; ++i) {
    ElfW(Phdr) phdr;
    std::memcpy(&phdr, head + ehdr.e_phoff + i * sizeof(phdr), sizeof(phdr));
    if (phdr.p_type != PT_NOTE || phdr.p_filesz > kMaxNoteSegment) continue;
    const size_t align = phdr.p_align == 8 ? 8 : 4;
    if (phdr.p_offset + phdr.p_filesz <= got) {
      if (SegmentHasNote(head + phdr.p_offset, phdr.p_filesz, align, text)) return true;
      continue;
    }
    char segment[kMaxNoteSegment];
    size_t segment_got = 0;
    if (ReadAt(fd.get(), segment, phdr.p_filesz, static_cast<off_t>(phdr.p_offset), segment_got) &&
        SegmentHasNote(segment, segment_got, align, text)) {
      return true;
    }
  }
  return false;
}

void LinkSibling(std::string type, Plugin (*make_plugin)()) {
  Siblings().emplace_back(std::move(type), make_plugin);
}

Plugin (*LinkedSibling(std::string_view type))() {
  for (const auto& [linked_type, make] : Siblings()) {
    if (linked_type == type) return make;
  }
  return nullptr;
}

}  // namespace nodegate::cni
