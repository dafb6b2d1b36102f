#!/usr/bin/env bash
# Start-up: each plugin's bare VERSION exec beside a static no-op's (bench/startup/noop.c,
# linked as the plugins are), run in turn ROUNDS times (default 2000) by bench/startup/
# exec_timer.cc; the difference is what the plugin's own start-up costs: its size, relocations
# (IRELATIVE), static initialisers, the C++ runtime and the answer. Target (issue 31): within
# 0.3 ms of the no-op. Medians, with the 10th and 90th percentiles.
#
#   bash bench/startup/bench.sh BUILD_DIR       (ROUNDS=N)
set -euo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
ROUNDS="${ROUNDS:-2000}"
TIMER="$BUILD_DIR/bench/exec_timer"
NOOP="$BUILD_DIR/bench/startup_noop"
for f in "$TIMER" "$NOOP" "$BUILD_DIR"/bin/{portmap,bandwidth,host-local}; do
  [ -x "$f" ] || { echo "missing $f (build first)" >&2; exit 1; }
done
# shellcheck source=bench/lib/node.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/node.sh"
# shellcheck source=bench/lib/results.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/results.sh"
settle || true  # a busy machine: the rounds alternate, so the difference still holds

TIMES="$(mktemp)"
trap 'rm -f "$TIMES"' EXIT
"$TIMER" "$ROUNDS" "$NOOP" "$BUILD_DIR"/bin/{portmap,bandwidth,host-local} >"$TIMES"
awk -v rounds="$ROUNDS" '
    NR == 1 { noop = $2
      printf "bare exec, median ms (p10-p90) of %d rounds, each executable in turn\n", rounds
      printf "%-18s %8s %14s %12s  %s\n", "", "exec", "p10-p90", "over no-op", "target 0.3"
      printf "%-18s %8.3f %6.3f-%-7.3f\n", "static no-op", $2, $3, $4
      next }
    { n = split($1, path, "/"); over = $2 - noop
      printf "%-18s %8.3f %6.3f-%-7.3f %+12.3f  %s\n", path[n] " VERSION", $2, $3, $4, over,
        over <= 0.3 ? "met" : "missed" }' "$TIMES"
noop=$(awk 'NR == 1 { print $2 }' "$TIMES")
bench_result startup "static no-op, bare exec" "$noop"
awk 'NR > 1 { n = split($1, path, "/"); print path[n], $2 }' "$TIMES" | while read -r name ms; do
  bench_result startup "$name VERSION exec over the static no-op's" \
    "$(awk -v a="$ms" -v b="$noop" 'BEGIN { printf "%.3f", a - b }')"
done
