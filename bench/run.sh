#!/usr/bin/env bash
# make bench: every area's benchmark, ours beside the reference, in one run, then
# docs/performance.md written from that run (bench/write_performance.py).
# Each area keeps its benchmark in bench/<area>/bench.sh, called with the build directory; its
# figures also go, as rows, to $NODEGATE_BENCH_RESULTS (bench/lib/results.sh).
#
#   bash bench/run.sh [BUILD_DIR]
#     BENCH_SECTIONS="startup ipam"   only these sections (the file says which ran)
#     BENCH_QUICK=1                   fewer repetitions and sizes in every section
#     NODEGATE_PERFORMANCE_MD=FILE    where to write (default docs/performance.md of this tree)
set -uo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
HERE="$(cd "$(dirname "$0")" && pwd)"
SRC="$(cd "$HERE/.." && pwd)"
OUT_MD="${NODEGATE_PERFORMANCE_MD:-$SRC/docs/performance.md}"
ALL="podstart chain startup ipam cluster-ipam portmap bandwidth admit ports webhook explain"
SECTIONS="${BENCH_SECTIONS:-$ALL}"
QUICK="${BENCH_QUICK:-0}"
status=0
# Every section runs copies of the executables, as a node runs them (make install, the .deb, an
# image): a file the linker has just written sits in the page cache in small pieces and exec'd
# 0.3 ms slower per call here (bench/podstart/README.md).
STAGE="$(mktemp -d /tmp/ng-bench-stage.XXXXXX)"
trap 'rm -rf "$STAGE"' EXIT
cp -r "$BUILD_DIR/bin" "$BUILD_DIR/bench" "$STAGE/"
RUN="$STAGE/run"
mkdir -p "$RUN/out"
export NODEGATE_BENCH_RESULTS="$RUN/results.tsv"
: >"$NODEGATE_BENCH_RESULTS"
: >"$RUN/sections.tsv"
load() { cut -d' ' -f1 /proc/loadavg; }
{
  echo "quick=$QUICK"
  echo "build=$BUILD_DIR"
  # The tree the run started from: the bench's own scripts are part of what it measures.
  commit="$(git -C "$SRC" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
  [ -z "$(git -C "$SRC" status --porcelain --untracked-files=no 2>/dev/null)" ] ||
    commit="$commit with uncommitted changes"
  echo "commit=$commit"
  echo "started=$(date -u '+%Y-%m-%d %H:%M')"
  echo "load_start=$(load)"
} >"$RUN/run.env"

# The quick mode's settings per section (each section's header says what they mean).
quick_env() {
  case "$1" in
    podstart) echo "SET=6 ROUNDS=1" ;;
    chain) echo "PODS=8 ROUNDS=1" ;;
    startup) echo "ROUNDS=300" ;;
    ipam) echo "IPAM_BENCH_REPS=30 IPAM_BENCH_FIRST_REPS=2" ;;
    cluster-ipam) echo "CLUSTER_IPAM_BENCH_REPS=30" ;;
    portmap) echo "RUNS=5 REF_RUNS=3" ;;
    bandwidth) echo "BANDWIDTH_BENCH_ITER=10" ;;
    ports) echo "RUNS=3" ;;
    webhook) echo "WEBHOOK_BENCH_SIZES=10000 BENCH_SECONDS=3" ;;
    explain) echo "EXPLAIN_BENCH_SIZES=334 EXPLAIN_BENCH_RUNS=1" ;;
  esac
}

for area in $ALL; do
  script="$HERE/$area/bench.sh"
  if [ ! -f "$script" ] || [[ " $SECTIONS " != *" $area "* ]]; then
    printf '%s\tnot run\t0\n' "$area" >>"$RUN/sections.tsv"
    continue
  fi
  echo
  echo "=== $area ==="
  # podstart times containerd: under a lock, so that two benches on one machine do not time
  # each other.
  cmd=(bash "$script" "$STAGE")
  [ "$area" != podstart ] || cmd=(flock /tmp/nodegate-e2e.lock "${cmd[@]}")
  if [ "$QUICK" = 1 ]; then
    read -r -a quick <<<"$(quick_env "$area")"  # VAR=value pairs
    cmd=(env "${quick[@]}" "${cmd[@]}")
  fi
  start=$SECONDS
  "${cmd[@]}" 2>&1 | tee "$RUN/out/$area.txt"
  rc=${PIPESTATUS[0]}
  result=passed
  if [ "$rc" -ne 0 ]; then
    echo "bench $area: FAILED" >&2
    status=1
    result=failed
  fi
  printf '%s\t%s\t%s\n' "$area" "$result" "$((SECONDS - start))" >>"$RUN/sections.tsv"
done

{
  echo "ended=$(date -u '+%Y-%m-%d %H:%M')"
  echo "load_end=$(load)"
} >>"$RUN/run.env"
if python3 "$HERE/write_performance.py" "$RUN" "$SRC" "$OUT_MD"; then
  echo
  echo "written: $OUT_MD"
else
  echo "bench: writing $OUT_MD failed" >&2
  status=1
fi
exit $status
