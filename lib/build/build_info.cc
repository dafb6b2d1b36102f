#include "lib/build/build_info.h"

namespace nodegate {
namespace {

constexpr std::string_view Arch() {
#if defined(__x86_64__)
  return "amd64";
#elif defined(__aarch64__)
  return "arm64";
#elif defined(__arm__)
  return "arm";
#else
  return "unknown";
#endif
}

#define NG_STRINGIFY2(x) #x
#define NG_STRINGIFY(x) NG_STRINGIFY2(x)

constexpr std::string_view Compiler() {
#if defined(__clang__)
  return "clang++ " NG_STRINGIFY(__clang_major__) "." NG_STRINGIFY(
      __clang_minor__) "." NG_STRINGIFY(__clang_patchlevel__);
#elif defined(__GNUC__)
  return "g++ " NG_STRINGIFY(__GNUC__) "." NG_STRINGIFY(__GNUC_MINOR__) "." NG_STRINGIFY(
      __GNUC_PATCHLEVEL__);
#else
  return "unknown";
#endif
}

}  // namespace

const BuildInfo& Build() {
  static const BuildInfo info{NODEGATE_VERSION, NODEGATE_COMMIT, NODEGATE_SOURCE_DATE,
                              Compiler(),       Arch(),          NODEGATE_STATIC_BUILD != 0};
  return info;
}

}  // namespace nodegate
