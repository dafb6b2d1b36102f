#!/usr/bin/env bash
# Benchmarks of `nodegate webhook`, against the stand-in of the API server's contract
# (tests/webhook/standin.py; its README says what it cannot show):
#   1. the list decoder on a generated 150,000-pod list (kube_decode_bench): ours beside
#      nlohmann/json's SAX walk and its tree per item (kube/README.md says why simdjson);
#   2. review latency through HTTPS (p50, p99; one keep-alive connection, as the API server
#      reuses its connections) and reviews per second (16 connections) at 110 and 5,000 pods on
#      one node (bench.py). Targets: p99 < 5 ms at 110 pods; > 2,000 reviews/s;
#   3. a generated cluster at 10,000, 50,000 and 150,000 pods (cluster_bench.py): sync time,
#      memory after sync, after every node judged, and its peak through a 410 relist; review
#      latency while the stand-in makes 200 changes a second. Targets at 150,000 pods: peak
#      RSS < 256 MiB, sync < 10 s, review p99 < 2 ms.
# The generated clusters are kept in $NODEGATE_BENCH_CACHE (default /tmp/nodegate-bench-clusters)
# between runs: generating 150,000 pods takes about a minute.
# Usage: bench/webhook/bench.sh BUILD_DIR
set -euo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
HERE="$(cd "$(dirname "$0")" && pwd)"
SRC="$(cd "$HERE/../.." && pwd)"
CACHE="${NODEGATE_BENCH_CACHE:-/tmp/nodegate-bench-clusters}"
SIZES="${WEBHOOK_BENCH_SIZES:-10000,50000,150000}"
if ! command -v wrk >/dev/null; then
  echo "bench webhook: wrk is not installed (scripts/install-deps.sh)" >&2
  exit 1
fi
mkdir -p "$CACHE"
largest="${SIZES##*,}"
list="$CACHE/pods-$largest.json"
if [ ! -s "$list" ]; then
  python3 - "$SRC" "$largest" "$CACHE" "$list" <<'PY'
import sys
sys.path.insert(0, sys.argv[1] + "/tests/webhook")
import synthetic
cluster = synthetic.generate(nodes=int(sys.argv[2]) // 30, pods_per_node=30, seed=1,
                             cache_dir=sys.argv[3])
with open(sys.argv[4] + ".part", "wb") as f:
    f.write(b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[')
    f.write(b",".join(record[1] for record in cluster.records["pods"]))
    f.write(b"]}")
import os
os.rename(sys.argv[4] + ".part", sys.argv[4])
PY
fi
echo "-- the list decoder: $(du -m "$list" | cut -f1) MB, $largest pods"
"$BUILD_DIR/bin/kube_decode_bench" "$list"
echo
echo "-- review latency on one node"
python3 "$HERE/bench.py" "$BUILD_DIR/bin/nodegate" "${BENCH_SECONDS:-10}"
echo
echo "-- a generated cluster"
python3 "$HERE/cluster_bench.py" "$BUILD_DIR/bin/nodegate" "$SIZES" "$CACHE" "${BENCH_SECONDS:-10}"
