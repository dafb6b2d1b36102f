#!/usr/bin/env bash
# The plugin executables as a runtime sees them, before any verb: what they load and what
# they say about themselves.
#   - Shared libraries: only the loader and libc. Every other shared library costs its loading at
#     each exec (about 0.7 ms each measured here), and every plugin call is an exec
#     (cmake/NodegateHelpers.cmake); libiptc is opened only by the calls that use it (nf_tables is
#     spoken over raw netlink). So a node of another distribution needs nothing of Debian's but a glibc as new.
#   - No CNI_COMMAND: the about text (stderr, exit 0), like the reference.
#   - CNI_COMMAND=VERSION: every spec version we speak, as JSON on stdout.
set -euo pipefail
BIN="${NODEGATE_BIN_DIR:?set by CTest}"
ALLOWED='^(ld-linux-x86-64\.so\.2|libc\.so\.6)$'
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

for plugin in portmap bandwidth host-local; do
  exe="$BIN/$plugin"
  [ -x "$exe" ] || { fail "$exe missing"; continue; }
  needed=$(readelf -d "$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  [ -n "$needed" ] || fail "$plugin: no NEEDED entries read"
  for lib in $needed; do
    [[ "$lib" =~ $ALLOWED ]] || fail "$plugin loads $lib"
  done
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
