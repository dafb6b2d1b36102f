#!/usr/bin/env bash
# The shipped executables (the four plugins and nodegate) as a node sees them, before any verb:
# what they need from the node and what they say about themselves.
#   - Self-contained: no ELF interpreter and no DT_NEEDED entry, so they run on any Linux
#     userland (glibc of any version, musl, none) as the reference's static builds do
#     (cmake/NodegateHelpers.cmake, ng_executable).
#   - Nothing loaded at run time. A static glibc loads shared objects only for dlopen, for NSS
#     modules, and for charset converters (gconv), and loading one aborts unless the host's
#     glibc is exactly the build's. Read from the unstripped executables' symbols and code:
#       * no NSS: none of glibc's NSS machinery or lookup functions is linked in (every name,
#         service and protocol lookup goes to lib/net/libc_name_lookup.cc);
#       * no code refers to dlopen, dlmopen, dlsym or dlvsym but glibc's own (nss_probe-style
#         code would call them; glibc itself links them into every static executable);
#       * glibc's internal loader (__libc_dlopen_mode) is referred to only by gconv, which
#         loads a converter only for a charset a program selects by naming a locale, and
#         nothing names one (setlocale is reached only from std::locale::global, which
#         nothing calls, and no std::locale is built from a name).
#   - No CNI_COMMAND: the about text (stderr, exit 0), like the reference.
#   - CNI_COMMAND=VERSION: every spec version we speak, as JSON on stdout.
#   - The about text is the reference release's: "CNI portmap plugin v<version>".
#   - In a native build, the functions a plugin call runs (cmake/text-order/<plugin>.txt) lie
#     together: the stretch of code they span is under twice their size (scattered by GNU ld's
#     input order, portmap's span 2.7 MB for 0.48 MB of them).
#   - No plugin links iostreams (their static initialisation would run on every exec).
#   - In a native build, a plugin asks at start for its data, heap and stack in one madvise each
#     (lib/sys/prefault.h), which a kernel of 5.14 or later grants.
# In a cross build (cmake/toolchains/debian-cross.cmake) CTest passes NODEGATE_TOOL_PREFIX (the
# target's binutils) and NODEGATE_EMULATOR (qemu-user, which runs the executables here); the
# checks are the same. NODEGATE_ARCH (Debian's name) is checked against each ELF header.
set -euo pipefail
BIN="${NODEGATE_BIN_DIR:?set by CTest}"
SRC="${NODEGATE_SOURCE_DIR:?set by CTest}"
TOOL="${NODEGATE_TOOL_PREFIX:-}"
RUN=()
[ -z "${NODEGATE_EMULATOR:-}" ] || RUN=("$NODEGATE_EMULATOR")
# shellcheck source=../../scripts/lib/build_outputs.sh
source "$SRC/scripts/lib/build_outputs.sh"  # project_version
# shellcheck source=../../scripts/lib/arch.sh
source "$SRC/scripts/lib/arch.sh"  # arch_elf_machine, HOST_ARCH
VERSION="$(project_version "$SRC")"
MACHINE="$(arch_elf_machine "${NODEGATE_ARCH:-$HOST_ARCH}")"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

NSS_SYMBOLS='^(__nss_|_nss_|__nscd_|(get(addr|name)info|gethost(byname2?|byaddr|ent)|get(pw|gr|sp)(nam|uid|gid|ent)|getgrouplist|getproto(byname|bynumber|ent)|getserv(byname|byport|ent)|getnet(byname|byaddr|ent|grent)|getrpc(byname|bynumber|ent)|getaliasbyname|ether_(hostton|ntohost)|initgroups|innetgr|setnetgrent)(_r)?$)'
DL_API='(___?dlopen|dlopen|__dlmopen|dlmopen|___?dlsym|dlsym|__dlvsym|dlvsym)'
LOCALE_BY_NAME='(setlocale|_ZNSt6locale6globalERKS_|_ZNSt6localeC[12]EPKc|_ZNSt6localeC[12]ERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE|_ZNSt6localeC[12]ERKS_PKci)'

# references EXE: "CALLER CALLEE" for every instruction of CALLER that names one of the
# functions above (a call, a jump, an address taken), CALLER != CALLEE. An AArch64 adrp names
# only the 4 KiB page an address is in, labelled with whatever symbol starts below it: not a
# reference (a call there is a bl, which names its target).
references() {
  "${TOOL}objdump" -d --no-show-raw-insn "$1" | awk -v pat="<(${DL_API}|__libc_dlopen_mode|${LOCALE_BY_NAME})[+>]" '
    /^[0-9a-f]+ <.*>:$/ { caller = substr($2, 2, length($2) - 3); next }
    $2 == "adrp" { next }
    $0 ~ pat {
      callee = $0; sub(/.*</, "", callee); sub(/[+>].*/, "", callee)
      if (callee != caller) print caller, callee
    }' | sort -u
}

for exe_name in portmap bandwidth host-local cluster-ipam bridge nodegate; do
  exe="$BIN/$exe_name"
  [ -x "$exe" ] || { fail "$exe missing"; continue; }
  machine=$("${TOOL}readelf" -hW "$exe" | sed -n 's/^ *Machine: *//p')
  [ "$machine" = "$MACHINE" ] || fail "$exe_name is for '$machine', not '$MACHINE'"
  headers=$("${TOOL}readelf" -lW "$exe") || { fail "$exe_name: readelf -l failed"; continue; }
  grep -q 'LOAD' <<<"$headers" || fail "$exe_name: no LOAD segment read"
  grep -q 'INTERP' <<<"$headers" &&
    fail "$exe_name has an ELF interpreter: $(grep -A1 INTERP <<<"$headers" | tail -1)"
  needed=$("${TOOL}readelf" -dW "$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  [ -z "$needed" ] || fail "$exe_name needs shared libraries: $(echo $needed)"

  # A lookup's own name at the address of our __wrap_NAME is ours (lib/net/libc_name_lookup.cc).
  symbols=$("${TOOL}nm" "$exe" | awk '$2 ~ /^[TtWwDdBb]$/ { at[$3] = $1; names[++n] = $3 }
    END { for (i = 1; i <= n; i++) if (at["__wrap_" names[i]] != at[names[i]]) print names[i] }') ||
    { fail "$exe_name: nm failed"; continue; }
  [ "$(wc -l <<<"$symbols")" -gt 1000 ] || fail "$exe_name: no symbol table (stripped?)"
  nss=$(grep -E "$NSS_SYMBOLS" <<<"$symbols" | tr '\n' ' ' || true)
  [ -z "$nss" ] || fail "$exe_name links glibc's NSS: $nss(route the lookup to lib/net/name_lookup.h)"

  refs=$(references "$exe")
  grep -q '__libc_dlopen_mode' <<<"$refs" ||
    fail "$exe_name: no reference to __libc_dlopen_mode found; is the disassembly read right?"
  while read -r caller callee; do
    [ -n "$caller" ] || continue
    case "$callee" in
      __libc_dlopen_mode)
        [ "$caller" = __gconv_find_shlib ] || fail "$exe_name: $caller loads shared objects ($callee)" ;;
      setlocale)
        [ "$caller" = _ZNSt6locale6globalERKS_ ] || fail "$exe_name: $caller sets the locale" ;;
      _ZNSt6locale*)
        fail "$exe_name: $(c++filt <<<"$caller") selects a locale by name ($(c++filt <<<"$callee"))" ;;
      *)  # the dl API
        fail "$exe_name: $(c++filt <<<"$caller") calls $callee" ;;
    esac
  done <<<"$refs"
done

# text_span EXE LIST: "FUNCTIONS BYTES SPAN" of the functions of LIST that EXE defines.
text_span() {
  "${TOOL}nm" -S "$1" | awk -v list="$2" '
    function hex(s,   i, v) { v = 0; for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
    BEGIN { while ((getline line < list) > 0) if (line !~ /^#/) wanted[line] = 1 }
    NF == 4 && $3 ~ /^[TtWw]$/ && ($4 in wanted) {
      a = hex($1); e = a + hex($2); n++; bytes += hex($2)
      if (n == 1 || a < low) low = a
      if (e > high) high = e
    }
    END { print n + 0, bytes + 0, high - low }'
}

for plugin in portmap bandwidth host-local cluster-ipam bridge; do
  exe="$BIN/$plugin"
  [ -x "$exe" ] || continue
  # No iostreams in a plugin (lib/sys/io.h's ProcessIo instead): their static initialisation
  # (the standard streams and their locale) would run on every exec.
  ! "${TOOL}nm" "$exe" | grep -q ' _ZNSt8ios_base4InitC1Ev$' ||
    fail "$plugin links iostreams (std::ios_base::Init): some object of its uses <iostream>"
  order="$SRC/cmake/text-order/$plugin.txt"
  if [ -z "$TOOL" ] && [ -f "$order" ]; then
    read -r count bytes span < <(text_span "$exe" "$order")
    [ "$count" -gt 300 ] || fail "$plugin defines only $count functions of $order (stale list?)"
    [ "$span" -lt $((2 * bytes)) ] ||
      fail "$plugin: the $count functions of its calls span $span bytes for $bytes (not ordered?)"
    populated=$(env -i CNI_COMMAND=VERSION strace -e trace=madvise "$exe" </dev/null 2>&1 >/dev/null |
      grep -c 'MADV_POPULATE_WRITE) = 0' || true)
    if [ "$(printf '%s\n' "$(uname -r)" 5.14 | sort -V | head -1)" = 5.14 ]; then
      [ "$populated" -eq 3 ] || fail "$plugin: $populated regions populated at start, not 3"
    fi
  fi
  about=$(env -i "${RUN[@]}" "$exe" </dev/null 2>&1 >/dev/null) || fail "$plugin: about text exits non-zero"
  [ "$(head -1 <<<"$about")" = "CNI $plugin plugin v$VERSION" ] ||
    fail "$plugin about text: '$(head -1 <<<"$about")', not 'CNI $plugin plugin v$VERSION'"
  grep -q "1.1.0" <<<"$about" || fail "$plugin about text lacks 1.1.0: $about"
  version=$(env -i CNI_COMMAND=VERSION "${RUN[@]}" "$exe" </dev/null) || fail "$plugin VERSION exits non-zero"
  for v in 0.3.1 0.4.0 1.0.0 1.1.0; do
    grep -q "\"$v\"" <<<"$version" || fail "$plugin VERSION lacks $v: $version"
  done
done
echo "executables_test: $failures failure(s)"
[ "$failures" -eq 0 ]
