#!/usr/bin/env bash
# Benchmark of `nodegate explain` (issue 50): `explain pod` of a Pending pod on clusters of
# 10,000, 50,000 and 150,000 pods (334, 1,667 and 5,000 nodes, 30 pods each) served by the
# stand-in of the API server's contract (tests/webhook/standin.py, its own process on this
# machine), with the wall time, the CPU time and the peak RSS of nodegate, and the stand-in's
# CPU time while it served the lists. Beside it, as the reference, what Debian's kubectl takes
# to read the same pods (kubectl get pods -A -o json), where it finishes.
# Usage: bench/explain/bench.sh BUILD_DIR     Targets at 150,000 pods: < 3 s wall, < 256 MiB.
# EXPLAIN_BENCH_SIZES="334 1667 5000" picks the node counts; EXPLAIN_BENCH_RUNS (3) the runs.
set -euo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
HERE="$(cd "$(dirname "$0")" && pwd)"
exec python3 "$HERE/bench.py" "$BUILD_DIR/bin/nodegate"
