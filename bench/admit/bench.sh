#!/usr/bin/env bash
# Benchmark of `nodegate admit` (issue 6): one candidate against a node with 110, 1,000 and
# 10,000 existing pods from a PodList file. Inputs are generated into a temporary folder.
# Usage: bench/admit/bench.sh BUILD_DIR
# Targets: filter (predicate evaluation) at 10,000 pods < 5 ms; total <= 1.5 x parse.
set -euo pipefail
# shellcheck source=bench/lib/results.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/results.sh"
BUILD_DIR="$(cd "${1:-build}" && pwd)"
BENCH="$BUILD_DIR/bin/admit_bench"
NODEGATE="$BUILD_DIR/bin/nodegate"
if [ ! -x "$BENCH" ]; then
  echo "bench admit: $BENCH not built" >&2
  exit 1
fi
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

echo "in-process (median, ms):"
"$BENCH" "$TMP" | tee "$TMP/table.txt"

# The whole command, process start included (mean of 5 runs).
if [ -x "$NODEGATE" ]; then
  echo
  echo "nodegate admit -o json, whole process (mean of 5 runs, ms):"
  printf "%-8s %10s\n" pods "wall ms"
  for n in 110 1000 10000; do
    start=$(date +%s%N)
    for _ in 1 2 3 4 5; do
      rc=0
      "$NODEGATE" admit --node "$TMP/node.json" --pods "$TMP/pods-$n.json" -o json \
        "$TMP/candidate.json" >/dev/null || rc=$?
      if [ "$rc" -ne 0 ]; then
        echo "bench admit: nodegate admit exited $rc" >&2
        exit 1
      fi
    done
    end=$(date +%s%N)
    wall=$(awk -v ns="$((end - start))" 'BEGIN { printf "%.1f", ns / 5 / 1e6 }')
    printf "%-8s %10s\n" "$n" "$wall"
    bench_result admit "nodegate admit -o json, whole process, $n pods" "$wall"
  done
fi

while read -r n _ _ total _ filter _; do
  bench_result admit "predicate work (in-process), $n pods" "$filter"
  bench_result admit "parse + judge (in-process), $n pods" "$total"
done < <(awk '$1 ~ /^[0-9]+$/' "$TMP/table.txt")

# Verdict against the issue's targets (10,000 pods row).
awk '$1 == 10000 {
  ok = ($6 < 5 && $4 <= 1.5 * $3);
  printf "\ntargets at 10000 pods: filter %.3f ms (< 5), total/parse %.2f (<= 1.5): %s\n",
         $6, $4 / $3, ok ? "met" : "NOT met";
}' "$TMP/table.txt"
