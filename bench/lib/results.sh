# shellcheck shell=bash
# Sourced by the bench sections: the figures a section prints, also as machine-readable rows
# that bench/write_performance.py turns into docs/performance.md (bench/run.sh sets the file).
#
#   bench_result SECTION LABEL OURS [REFERENCE] [UNIT]
#
# One row per figure: OURS and REFERENCE are numbers (REFERENCE empty where there is no
# reference to run); UNIT defaults to ms. Outside `make bench` (no NODEGATE_BENCH_RESULTS) it
# does nothing, so a section run by hand prints exactly what it printed before.
bench_result() {
  [ -n "${NODEGATE_BENCH_RESULTS:-}" ] || return 0
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:-}" "${5:-ms}" >>"$NODEGATE_BENCH_RESULTS"
}
