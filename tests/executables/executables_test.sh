#!/usr/bin/env bash
# The shipped executables (the three plugins and nodegate) as a node sees them, before any verb:
# what they need from the node and what they say about themselves.
#   - Self-contained: no ELF interpreter and no DT_NEEDED entry, so they run on any x86_64 Linux
#     userland (glibc of any version, musl, none) as the reference's static builds do
#     (cmake/NodegateHelpers.cmake, ng_executable).
#   - No CNI_COMMAND: the about text (stderr, exit 0), like the reference.
#   - CNI_COMMAND=VERSION: every spec version we speak, as JSON on stdout.
set -euo pipefail
BIN="${NODEGATE_BIN_DIR:?set by CTest}"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

for exe_name in portmap bandwidth host-local nodegate; do
  exe="$BIN/$exe_name"
  [ -x "$exe" ] || { fail "$exe missing"; continue; }
  headers=$(readelf -lW "$exe") || { fail "$exe_name: readelf -l failed"; continue; }
  grep -q 'LOAD' <<<"$headers" || fail "$exe_name: no LOAD segment read"
  grep -q 'INTERP' <<<"$headers" &&
    fail "$exe_name has an ELF interpreter: $(grep -A1 INTERP <<<"$headers" | tail -1)"
  needed=$(readelf -dW "$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  [ -z "$needed" ] || fail "$exe_name needs shared libraries: $(echo $needed)"
done

for plugin in portmap bandwidth host-local; do
  exe="$BIN/$plugin"
  [ -x "$exe" ] || continue
  about=$(env -i "$exe" </dev/null 2>&1 >/dev/null) || fail "$plugin: about text exits non-zero"
  grep -q "CNI $plugin plugin" <<<"$about" || fail "$plugin about text: $about"
  grep -q "1.1.0" <<<"$about" || fail "$plugin about text lacks 1.1.0: $about"
  version=$(env -i CNI_COMMAND=VERSION "$exe" </dev/null) || fail "$plugin VERSION exits non-zero"
  for v in 0.3.1 0.4.0 1.0.0 1.1.0; do
    grep -q "\"$v\"" <<<"$version" || fail "$plugin VERSION lacks $v: $version"
  done
done
echo "executables_test: $failures failure(s)"
[ "$failures" -eq 0 ]
