# shellcheck shell=bash
# Sourced by scripts/install.sh, deb.sh and image.sh and by tests/deploy: what they all read
# from the build.

# project_version SRC: the VERSION of CMakeLists.txt's project(nodegate VERSION ...), or "".
project_version() {
  sed -n 's/^project(nodegate VERSION \([0-9][0-9.]*\).*/\1/p' "$1/CMakeLists.txt"
}

# require_built WHO BIN_DIR NAME...: exits 1 with a hint unless every NAME is an executable in
# BIN_DIR (WHO prefixes the message).
require_built() {
  local who="$1" dir="$2" name
  shift 2
  for name in "$@"; do
    if [ ! -x "$dir/$name" ]; then
      echo "$who: $dir/$name is missing; run 'make build' first" >&2
      exit 1
    fi
  done
}
