#!/usr/bin/env bash
# Benchmark of `nodegate webhook` (issue 34): review latency through HTTPS (p50, p99; one
# keep-alive connection, as the API server reuses its connections) and reviews per second
# (16 connections), at 110 and 5,000 pods on the node, against the stand-in API server of
# tests/webhook. Load from wrk; every review is a dry run of a pod that fits.
# Usage: bench/webhook/bench.sh BUILD_DIR      Targets: p99 < 5 ms at 110 pods; > 2,000 reviews/s.
set -euo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
HERE="$(cd "$(dirname "$0")" && pwd)"
if ! command -v wrk >/dev/null; then
  echo "bench webhook: wrk is not installed (scripts/install-deps.sh)" >&2
  exit 1
fi
exec python3 "$HERE/bench.py" "$BUILD_DIR/bin/nodegate" "${BENCH_SECONDS:-10}"
