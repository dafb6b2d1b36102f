# shellcheck shell=bash
# A podman of the test's own: its images, containers, events and temporary files all in one
# folder, so a test neither sees nor leaves anything in the machine's podman store.
#
#   podman_store_init DIR; P() { podman_store DIR "$@"; }; ...; podman_store_remove DIR

# podman_store_init DIR: DIR/containers.conf (runc, file events, ulimits that runc under a
# user namespace accepts) and DIR/storage.conf (vfs in DIR).
podman_store_init() {
  mkdir -p "$1/storage" "$1/run" "$1/tmp"
  printf '[storage]\ndriver = "vfs"\ngraphroot = "%s"\nrunroot = "%s"\n' "$1/storage" "$1/run" \
    >"$1/storage.conf"
  {
    echo '[containers]'
    echo 'default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]'
    echo '[engine]'
    echo 'runtime = "runc"'
    echo 'events_logger = "file"'
    echo "events_logfile_path = \"$1/events.log\""
    echo "tmp_dir = \"$1/tmp\""
  } >"$1/containers.conf"
}

# podman_store DIR ARGS...: podman ARGS with DIR's configuration.
podman_store() {
  local dir="$1"
  shift
  CONTAINERS_CONF="$dir/containers.conf" CONTAINERS_STORAGE_CONF="$dir/storage.conf" podman "$@"
}

# podman_store_remove DIR [PODMAN FLAGS...]: its containers and images removed, what podman
# mounted under DIR unmounted, DIR deleted. For an exit trap: never fails.
podman_store_remove() {
  local dir="$1"
  shift
  if [ -f "$dir/containers.conf" ]; then
    podman_store "$dir" "$@" rm -a -f -t 0 >/dev/null 2>&1
    podman_store "$dir" "$@" rmi -a -f >/dev/null 2>&1
  fi
  grep -o " ${dir}[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null
  rm -rf "$dir"
  return 0
}
