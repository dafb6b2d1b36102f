#!/usr/bin/env bash
# make fuzz: builds the libFuzzer targets of tests/fuzz with clang (ASan+UBSan) and runs each
# for FUZZ_SECONDS (default 60), then prints executions, coverage, time and any crash per
# target. Exits non-zero when a target crashed (tests/fuzz/README.md says what to do then).
#
#   scripts/fuzz.sh [build-dir]     build-dir defaults to build-fuzz
#   FUZZ_SECONDS=600 FUZZ_JOBS=2 FUZZ_TARGETS="cni_args conflist" scripts/fuzz.sh
#
# Each target's working corpus is <build-dir>/corpus/<name>, seeded from tests/fuzz/corpus and
# kept between runs; crash inputs go to <build-dir>/artifacts/<name>/; the tree is not touched.
set -euo pipefail

FUZZ_DIR="${1:-build-fuzz}"
FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
FUZZ_JOBS="${FUZZ_JOBS:-1}"
BUILD_JOBS="${JOBS:-$(nproc)}"
SOURCE_DIR="$(cd "$(dirname "$0")/.." && pwd)"

# Warnings are errors in the GCC builds (the project's contract); clang's differ, so here only
# tests/fuzz itself is built with -Werror.
CC=clang CXX=clang++ bash "$SOURCE_DIR/scripts/configure.sh" "$FUZZ_DIR" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNODEGATE_FUZZ=ON -DNODEGATE_WERROR=OFF \
  -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld  # lld: a quarter of GNU ld's time on these links
cmake --build "$FUZZ_DIR" -j "$BUILD_JOBS" --target fuzzers
FUZZ_DIR="$(cd "$FUZZ_DIR" && pwd)"

if [ -n "${FUZZ_TARGETS:-}" ]; then
  read -r -a targets <<<"$FUZZ_TARGETS"
else
  mapfile -t targets <"$FUZZ_DIR/fuzz/targets.txt"
fi

# The targets that write files (host-local's state, conflist and manifest folders) do it
# under TMPDIR; keep that inside the build folder.
export TMPDIR="$FUZZ_DIR/tmp"
mkdir -p "$TMPDIR" "$FUZZ_DIR/logs"

# libFuzzer's options: one process unless FUZZ_JOBS asks for more; an input that runs for
# 25 s counts as a hang, and one that allocates 1 GiB at once or holds 2 GiB as running out
# of memory (both reported like a crash, with the input; without the limits an endless
# allocation left libFuzzer scanning a 2 GiB heap for minutes).
fuzzer_options() {
  local name="$1"
  echo "-max_total_time=$FUZZ_SECONDS -timeout=25 -malloc_limit_mb=1024 -rss_limit_mb=2048"
  echo "-print_final_stats=1"
  echo "-artifact_prefix=$FUZZ_DIR/artifacts/$name/"
  if [ "$FUZZ_JOBS" -gt 1 ]; then
    echo "-jobs=$FUZZ_JOBS -workers=$FUZZ_JOBS"
  fi
}

# Runs one target; its whole output (all jobs' logs) ends up in logs/<name>.log.
run_target() {
  local name="$1" log="$FUZZ_DIR/logs/$1.log" work="$FUZZ_DIR/work/$1"
  mkdir -p "$FUZZ_DIR/corpus/$name" "$FUZZ_DIR/artifacts/$name" "$work"
  cp -n "$SOURCE_DIR/tests/fuzz/corpus/$name/"* "$FUZZ_DIR/corpus/$name/" 2>/dev/null || true
  rm -f "$work"/fuzz-*.log
  local status=0
  # shellcheck disable=SC2046  # the options are words
  (cd "$work" && "$FUZZ_DIR/fuzz/fuzz_$name" $(fuzzer_options "$name") "$FUZZ_DIR/corpus/$name") \
    >"$log" 2>&1 || status=$?
  cat "$work"/fuzz-*.log >>"$log" 2>/dev/null || true
  return "$status"
}

# The executions: libFuzzer's final stats (summed over jobs); cov/ft: the last status line.
report_target() {
  local name="$1" seconds="$2" status="$3" log="$FUZZ_DIR/logs/$1.log"
  local execs cov ft crashes
  execs="$(awk '/^stat::number_of_executed_units/ {n += $NF} END {print n + 0}' "$log")"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)"
  ft="$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)"
  crashes="$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | sort -u | tr '\n' ' ')"
  local result="ok"
  if [ -n "$crashes" ]; then
    result="CRASH $crashes(log: $log)"
  elif [ "$status" -ne 0 ]; then
    result="FAILED exit $status (log: $log)"
  fi
  printf '%-18s %12s %7s %7s %6ss  %s\n' "$name" "$execs" "${cov:--}" "${ft:--}" "$seconds" "$result"
  [ "$result" = "ok" ]
}

summary=()
failed=0
for name in "${targets[@]}"; do
  echo "fuzz: $name for ${FUZZ_SECONDS}s" >&2
  start=$(date +%s)
  status=0
  run_target "$name" || status=$?
  seconds=$(($(date +%s) - start))
  line="$(report_target "$name" "$seconds" "$status")" || failed=1
  summary+=("$line")
done

printf '\n%-18s %12s %7s %7s %7s  %s\n' target executions cov ft time result
printf '%s\n' "${summary[@]}"
if [ "$failed" -ne 0 ]; then
  echo "fuzz: a target failed; see tests/fuzz/README.md for adding the input to crashes/" >&2
fi
exit "$failed"
