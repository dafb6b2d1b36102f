#!/usr/bin/python3
"""The nf_tables destroy work beside the chain's calls, from bench/chain/trace-destroy-work.sh.

Usage: destroy_work.py PERF_SCRIPT_TXT CHAIN_JSON

PERF_SCRIPT_TXT is `perf script -F comm,pid,time,event,trace` of a system-wide
`perf record -k mono` of the workqueue events of nf_tables_trans_destroy_work (queue_work:
a commit that removed something queued it, by the committing process; execute_start and
execute_end: one run of the worker, an RCU grace period and the frees) and the processes'
execs and exits. CHAIN_JSON holds bench/chain/driver.py's lines, whose windows are in the same
clock (CLOCK_MONOTONIC ms).

Prints, for each pod's DEL chain and the next pod's ADD of bridge (the first call of the ADD
chain, whose masquerade commit waits for the work in flight), in ms from the DEL chain's
start: who queued the work, the worker's runs, and when bridge's ADD started and ended. Then
the median number of runs in that stretch and the median time from the end of the last run
to the end of bridge's ADD.
"""

import json
import re
import statistics
import sys

LINE = re.compile(r"\s*(\S+)\s+(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)")


def load_events(path):
    """[(ms, kind, comm)] with kind "queue", "start" or "end"."""
    events = []
    with open(path) as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            comm, _, t, event, _ = m.groups()
            kind = {"workqueue:workqueue_queue_work": "queue",
                    "workqueue:workqueue_execute_start": "start",
                    "workqueue:workqueue_execute_end": "end"}.get(event)
            if kind:
                events.append((float(t) * 1000, kind, comm))
    return sorted(events)


def main():
    events = load_events(sys.argv[1])
    with open(sys.argv[2]) as f:
        pods = [json.loads(line) for line in f if line.strip()]
    if not events or len(pods) < 2:
        print("no destroy work or fewer than 2 pods traced")
        return 1
    counts, tails = [], []
    for pod, nxt in zip(pods, pods[1:]):
        t0 = pod["del_window"][0]
        add_start = nxt["add_window"][0]
        add_end = add_start + nxt["add"]["bridge"]
        within = [e for e in events if t0 <= e[0] <= add_end]
        queued = ", ".join("%s +%.1f" % (comm, t - t0) for t, kind, comm in within
                           if kind == "queue")
        runs, start = [], None
        for t, kind, _ in within:
            if kind == "start":
                start = t
            elif kind == "end" and start is not None:
                runs.append((start, t))
                start = None
        # A run still going at the ADD's end: its end is after this stretch.
        after = [t for t, kind, _ in events if kind == "end" and t > add_end]
        if start is not None and after:
            runs.append((start, after[0]))
        shown = ", ".join("+%.1f..+%.1f" % (a - t0, b - t0) for a, b in runs)
        print("pod %d: queued by %s; worker runs %s; bridge ADD +%.1f..+%.1f (%.1f ms)" % (
            pod["pod"], queued or "nobody", shown or "none", add_start - t0, add_end - t0,
            add_end - add_start))
        counts.append(len(runs))
        if runs:
            tails.append(add_end - runs[-1][1])
    print("median: %s worker runs from a DEL chain's start to the next bridge ADD's end; "
          "that ADD ended %.1f ms after the last run ended (negative: before)" % (
              statistics.median(counts), statistics.median(tails) if tails else float("nan")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
