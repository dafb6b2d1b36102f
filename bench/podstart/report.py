#!/usr/bin/python3
"""The table of bench/podstart/bench.sh, from the driver's sets and perf's events.

Usage: report.py SETS_DIR PERF_TXT PLUGIN_PREFIX NOOP OTHERS

SETS_DIR holds SET-OTHERS-ROUND.json (driver.py's lines: each sandbox's CRI calls, CLOCK_MONOTONIC
seconds). PERF_TXT is `perf script -F pid,tid,time,event,trace` of sched_process_fork, _exec and
_exit: each process is timed from its fork to the exit of its last thread. A plugin is a
process that exec'd a file under PLUGIN_PREFIX; it belongs to the sandbox whose RunPodSandbox
was running when it was forked. NOOP is the static no-op's path (the floor).
"""

import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))
from results import record  # noqa: E402

LINE = re.compile(r"^\s*(\d+)/(\d+)\s+([\d.]+):\s+sched:(sched_process_\w+):\s+(.*)$")
PLUGINS = ("loopback", "bridge", "host-local", "portmap", "bandwidth")
OURS = ("host-local", "portmap", "bandwidth")


def pct(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    k = (len(values) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def processes(perf_txt):
    """[(start, end, path)] of every process that exec'd, from fork (or exec) to last exit."""
    forked, execs, exited = {}, {}, {}
    with open(perf_txt) as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            tgid, t, event, trace = int(m.group(1)), float(m.group(3)), m.group(4), m.group(5)
            fields = dict(re.findall(r"(\w+)=(\S+)", trace))
            if event == "sched_process_fork":
                forked[int(fields["child_pid"])] = t
            elif event == "sched_process_exec":
                # a process may exec more than once (a shell's exec): the last one names it
                execs[tgid] = (forked.get(tgid, t), fields["filename"])
            elif event == "sched_process_exit":
                exited[tgid] = max(t, exited.get(tgid, 0.0))
    return [(start, exited[pid], path) for pid, (start, path) in execs.items() if pid in exited]


def main():
    sets_dir, perf_txt, prefix, noop, others = sys.argv[1:]
    procs = processes(perf_txt)
    plugin_procs = sorted((s, e, os.path.basename(p)) for s, e, p in procs if p.startswith(prefix))
    noops = sorted((s, e) for s, e, p in procs if p == noop)

    groups = {}  # (set, others) -> figures
    sets = []
    for path in glob.glob(os.path.join(sets_dir, "*.json")):
        name = os.path.basename(path)[:-len(".json")]
        set_name, n_others, _ = name.rsplit("-", 2)
        rows = [json.loads(line) for line in open(path)]
        if rows:
            sets.append((rows[0]["run"][0], set_name, n_others, rows))
    sets.sort()
    previous_end = 0.0
    for first, set_name, n_others, rows in sets:
        g = groups.setdefault((set_name, n_others), {
            "run": [], "stop": [], "chain": [], "floor": [], "bridge-own": [], "three": [],
            **{p: [] for p in PLUGINS}, **{"del-" + p: [] for p in PLUGINS}})
        # the no-op's execs between the previous set and this one
        g["floor"] += [(e - s) * 1000 for s, e in noops if previous_end <= s < first]
        for row in rows:
            t0, t1 = row["run"]
            g["run"].append((t1 - t0) * 1000)
            if "stop" in row and "remove" in row:
                g["stop"].append((row["stop"][1] - row["stop"][0] +
                                  row["remove"][1] - row["remove"][0]) * 1000)
            add = {}
            for s, e, p in plugin_procs:
                if t0 <= s <= t1 and p not in add:
                    add[p] = (s, e)
            for p, (s, e) in add.items():
                if p in g:
                    g[p].append((e - s) * 1000)
            if "bridge" in add and "bandwidth" in add:
                g["chain"].append((add["bandwidth"][1] - add["bridge"][0]) * 1000)
            if "bridge" in add and "host-local" in add:
                g["bridge-own"].append(((add["bridge"][1] - add["bridge"][0]) -
                                        (add["host-local"][1] - add["host-local"][0])) * 1000)
            if all(p in add for p in OURS):
                g["three"].append(sum(add[p][1] - add[p][0] for p in OURS) * 1000)
            if "stop" in row:
                s0, s1 = row["stop"]
                seen = set()
                for s, e, p in plugin_procs:
                    if s0 <= s <= s1 and p not in seen:
                        seen.add(p)
                        g["del-" + p].append((e - s) * 1000)
        previous_end = max(r.get("remove", r["run"])[1] for r in rows)

    set_names = [s for s in ("ours", "reference", "other") if any(k[0] == s for k in groups)]
    print()
    print("pod start under containerd 1.6 (CRI), median ms unless marked; sets alternating; "
          "sandboxes measured: %s" % ", ".join(
              "%s at %s others %d" % (s, n, len(groups[(s, n)]["run"]))
              for n in others.split() for s in set_names if (s, n) in groups))
    cols = ["RunPodSandbox p50 / p90", "Stop+Remove p50 / p90", "ADD chain", "bridge (own)",
            "host-local", "portmap", "bandwidth", "our three", "loopback", "static exec"]
    print("%-7s %-10s | %s" % ("others", "plugins", " | ".join(cols)))
    med = {}
    for n in others.split():
        for s in set_names:
            g = groups.get((s, n))
            if not g:
                continue
            m = {k: pct(v, 50) for k, v in g.items()}
            med[(s, n)] = m
            print("%-7s %-10s | %7.1f / %7.1f | %7.1f / %7.1f | %6.1f | %6.1f | %6.1f | %6.1f | "
                  "%6.1f | %6.1f | %6.1f | %6.2f" % (
                      n, s, m["run"], pct(g["run"], 90), m["stop"], pct(g["stop"], 90),
                      m["chain"], m["bridge-own"], m["host-local"], m["portmap"], m["bandwidth"],
                      m["three"], m["loopback"], m["floor"]))
    print()
    print("DEL under StopPodSandbox, median ms (bridge's own / host-local / portmap / bandwidth):")
    for n in others.split():
        for s in set_names:
            g = groups.get((s, n))
            if g:
                print("  %-5s %-10s %s" % (n, s, " / ".join(
                    "%.1f" % pct(g["del-" + p], 50) for p in ("bridge", "host-local", "portmap",
                                                              "bandwidth"))))
    print()
    for n in others.split():
        o, r = med.get(("ours", n)), med.get(("reference", n))
        if not o or not r:
            continue
        print("%s other mappings: RunPodSandbox %.2fx faster with ours (%.1f vs %.1f ms); ADD "
              "chain %.1f vs %.1f ms; our three %.1f vs the reference's %.1f ms; bridge is "
              "%.0f%% of our chain (%.1f ms with the host-local it runs: %.1f)" % (
                  n, r["run"] / o["run"], o["run"], r["run"], o["chain"], r["chain"], o["three"],
                  r["three"], 100 * o["bridge-own"] / o["chain"], o["bridge-own"], o["bridge"]))
        record("podstart", "RunPodSandbox p50, %s other mappings" % n, o["run"], r["run"])
        record("podstart", "CNI ADD chain, %s other mappings" % n, o["chain"], r["chain"])
        for p in OURS:
            record("podstart", "%s ADD, %s other mappings" % (p, n), o[p], r[p])
        record("podstart", "static binary's bare exec (floor), %s other mappings" % n, o["floor"])
        for p in OURS:
            over = o[p] - o["floor"]
            print("target: %s ADD within 2 ms of a static binary's bare exec at %s others "
                  "(%.1f vs %.2f, %+.1f): %s" % (p, n, o[p], o["floor"], over,
                                                 "met" if over <= 2 else "MISSED"))
        if n == "1000":
            ratio = r["run"] / o["run"]
            print("target: RunPodSandbox at 1,000 other mappings at least 2.5x faster than with "
                  "the reference (%.2fx): %s" % (ratio, "met" if ratio >= 2.5 else "MISSED"))
    if any(k[0] == "other" for k in med):
        for n in others.split():
            o, x = med.get(("ours", n)), med.get(("other", n))
            if o and x:
                print("A/B at %s others: portmap %.1f (this build) vs %.1f (OTHER_PORTMAP); "
                      "RunPodSandbox %.1f vs %.1f" % (n, o["portmap"], x["portmap"], o["run"],
                                                      x["run"]))


if __name__ == "__main__":
    main()
