#!/usr/bin/python3
"""The table of bench/podstart/bench.sh, from the driver's sets and perf's events.

Usage: report.py SETS_DIR PERF_TXT PLUGIN_PREFIX NOOP OTHERS [VETH_FLOOR]

SETS_DIR holds SET-OTHERS-ROUND.json (driver.py's lines: each sandbox's CRI calls, CLOCK_MONOTONIC
seconds). PERF_TXT is `perf script -F pid,tid,time,event,trace` of sched_process_fork, _exec and
_exit: each process is timed from its fork to the exit of its last thread. A plugin is a
process that exec'd a file under PLUGIN_PREFIX; it belongs to the sandbox whose RunPodSandbox
was running when it was forked. NOOP is the static no-op's path (the floor). VETH_FLOOR has
one line per set, "ADD_NS DEL_NS": the kernel's cost of making and of deleting a veth pair.
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


def bridge_own_ms(add):
    """bridge's time without the host-local process it exec'd, if one ran inside its span (our
    bridge runs this build's host-local in its own process: then its whole time)."""
    bridge_s, bridge_e = add["bridge"]
    ipam = add.get("host-local")
    if ipam and bridge_s <= ipam[0] and ipam[1] <= bridge_e:
        return ((bridge_e - bridge_s) - (ipam[1] - ipam[0])) * 1000
    return (bridge_e - bridge_s) * 1000


def pct(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    k = (len(values) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def processes(perf_txt):
    """[(start, end, path)] of every process that exec'd, from fork (or exec) to last exit.

    A process ID comes back: pid_max is 32,768 on these machines, and a loaded one (builds,
    tests) goes through them in minutes. Each fork of an ID therefore starts a new process,
    whose exec and exits are not the earlier one's (keyed by ID alone, a plugin took the exit
    of whatever reused its ID later: "ADD chain 71710.5 ms"). An exec into a process that has
    already exited (its fork event lost) starts one at the exec."""
    live, done = {}, []
    with open(perf_txt) as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            tgid, t, event, trace = int(m.group(1)), float(m.group(3)), m.group(4), m.group(5)
            fields = dict(re.findall(r"(\w+)=(\S+)", trace))
            if event == "sched_process_fork":
                child = int(fields["child_pid"])
                if child in live:
                    done.append(live.pop(child))
                live[child] = {"start": t, "path": None, "end": None}
            elif event == "sched_process_exec":
                # a process may exec more than once (a shell's exec): the last one names it
                rec = live.get(tgid)
                if rec is None or rec["end"] is not None:
                    if rec is not None:
                        done.append(rec)
                    rec = live[tgid] = {"start": t, "path": None, "end": None}
                rec["path"] = fields["filename"]
            elif event == "sched_process_exit" and tgid in live:
                rec = live[tgid]
                rec["end"] = max(t, rec["end"] or 0.0)
    return [(r["start"], r["end"], r["path"]) for r in done + list(live.values())
            if r["path"] is not None and r["end"] is not None]


def cell(value, width=6, digits=1):
    """A median for the table: "n/a" when nothing was measured (no NaN, ever)."""
    if value != value:  # NaN: no sample
        return "n/a".rjust(width)
    return "%*.*f" % (width, digits, value)


def compared(n, name, ours, reference, keys):
    """Whether every median the comparison of set `name` needs was measured (in both sets);
    if not, says which were not, instead of printing NaN and recording it."""
    nan = lambda v: v != v
    # the floor is ours alone (the reference set's is not compared)
    missing = [k for k in keys if nan(ours[k]) or (k != "floor" and nan(reference[k]))]
    if missing:
        print("%s other mappings, %s: not compared, no sample of %s (perf lost the events, or "
              "no call ended inside its CRI call)" % (n, name, ", ".join(missing)))
    return not missing


def main():
    sets_dir, perf_txt, prefix, noop, others = sys.argv[1:6]
    veth_add, veth_del = [], []
    if len(sys.argv) > 6 and os.path.exists(sys.argv[6]):
        for line in open(sys.argv[6]):
            a, d = line.split()
            veth_add.append(int(a) / 1e6)
            veth_del.append(int(d) / 1e6)
    pair_add, pair_del = pct(veth_add, 50), pct(veth_del, 50)
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
                # ADD's plugins end before RunPodSandbox returns; a later end is not theirs
                if t0 <= s <= t1 and e <= t1 and p not in add:
                    add[p] = (s, e)
            for p, (s, e) in add.items():
                if p in g:
                    g[p].append((e - s) * 1000)
            if "bridge" in add and "bandwidth" in add:
                g["chain"].append((add["bandwidth"][1] - add["bridge"][0]) * 1000)
            if "bridge" in add:
                g["bridge-own"].append(bridge_own_ms(add))
            if all(p in add for p in OURS):
                g["three"].append(sum(add[p][1] - add[p][0] for p in OURS) * 1000)
            if "stop" in row:
                s0, s1 = row["stop"]
                seen = set()
                for s, e, p in plugin_procs:
                    if s0 <= s <= s1 and e <= s1 and p not in seen:
                        seen.add(p)
                        g["del-" + p].append((e - s) * 1000)
        previous_end = max(r.get("remove", r["run"])[1] for r in rows)

    set_names = [s for s in ("ours", "ourbridge", "reference", "other")
                 if any(k[0] == s for k in groups)]
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
            print("%-7s %-10s | %s / %s | %s / %s | %s | %s | %s | %s | %s | %s | %s | %s" % (
                n, s, cell(m["run"], 7), cell(pct(g["run"], 90), 7), cell(m["stop"], 7),
                cell(pct(g["stop"], 90), 7), cell(m["chain"]), cell(m["bridge-own"]),
                cell(m["host-local"]), cell(m["portmap"]), cell(m["bandwidth"]), cell(m["three"]),
                cell(m["loopback"]), cell(m["floor"], 6, 2)))
    print()
    print("DEL under StopPodSandbox, median ms (bridge's own / host-local / portmap / bandwidth):")
    for n in others.split():
        for s in set_names:
            g = groups.get((s, n))
            if g:
                print("  %-5s %-10s %s" % (n, s, " / ".join(
                    cell(pct(g["del-" + p], 50), 0) for p in ("bridge", "host-local", "portmap",
                                                              "bandwidth"))))
    print()
    for n in others.split():
        o, r = med.get(("ours", n)), med.get(("reference", n))
        if not o or not r or not compared(n, "ours", o, r, ("run", "chain", "three", "bridge-own",
                                                             "bridge", "floor") + OURS):
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
    # The whole chain ours (our bridge too): against the reference chain, and bridge's own
    # share against the floor (the static exec; the kernel's cost of a veth pair, which the
    # issue adds to the floor, is not measured here). An exec'd host-local runs while bridge
    # makes the links, so "own" (bridge minus host-local) is a lower bound and bridge the upper;
    # our bridge runs this build's host-local in its own process, and both are its whole time.
    for n in others.split():
        b, r = med.get(("ourbridge", n)), med.get(("reference", n))
        if not b or not r or not compared(n, "ourbridge", b, r, ("run", "chain", "bridge-own",
                                                                 "bridge", "floor", "del-bridge")):
            continue
        print("%s other mappings, whole chain ours: RunPodSandbox %.2fx faster than the reference "
              "chain (%.1f vs %.1f ms); ADD chain %.1f vs %.1f ms; bridge (own) %.1f to %.1f ms "
              "(%+.1f to %+.1f over a static exec, %.2f) vs the reference's %.1f; bridge DEL %.1f "
              "vs %.1f ms" % (
                  n, r["run"] / b["run"], b["run"], r["run"], b["chain"], r["chain"],
                  b["bridge-own"], b["bridge"], b["bridge-own"] - b["floor"],
                  b["bridge"] - b["floor"], b["floor"], r["bridge-own"], b["del-bridge"],
                  r["del-bridge"]))
        if veth_add and pair_add == pair_add and pair_del == pair_del:
            floor_add, floor_del = b["floor"] + pair_add, b["floor"] + pair_del
            # issue 53's bridge targets are judged back to back (bench/chain); shown here under
            # containerd's rhythm
            print("bridge ADD against the floor (static exec %.2f + a veth pair's "
                  "%.2f = %.2f) at %s others: own %.1f to %.1f ms, %+.1f to %+.1f: %s" % (
                      b["floor"], pair_add, floor_add, n, b["bridge-own"], b["bridge"],
                      b["bridge-own"] - floor_add, b["bridge"] - floor_add,
                      "within 2 ms" if b["bridge-own"] - floor_add <= 2 else "over 2 ms"))
            print("bridge DEL against the floor (static exec + deleting a pair "
                  "%.2f = %.2f) at %s others: %.1f ms with its host-local DEL, %+.1f: %s" % (
                      pair_del, floor_del, n, b["del-bridge"], b["del-bridge"] - floor_del,
                      "within 2 ms" if b["del-bridge"] - floor_del <= 2 else "over 2 ms"))
        record("podstart", "RunPodSandbox p50, whole chain ours (our bridge), %s other mappings"
               % n, b["run"], r["run"])
        record("podstart", "CNI ADD chain, whole chain ours, %s other mappings" % n, b["chain"],
               r["chain"])
        record("podstart", "bridge ADD (whole process, with its host-local), %s other mappings"
               % n, b["bridge"], r["bridge"])
        record("podstart", "bridge DEL (with its host-local), %s other mappings" % n,
               b["del-bridge"], r["del-bridge"])
        want = 3.0 if n == "1000" else 2.0
        ratio = r["run"] / b["run"]
        print("target: RunPodSandbox with our whole chain at least %.0fx faster than the "
              "reference chain at %s others (%.2fx): %s" % (want, n, ratio,
                                                            "met" if ratio >= want else "MISSED"))
    if any(k[0] == "other" for k in med):
        for n in others.split():
            o, x = med.get(("ours", n)), med.get(("other", n))
            if o and x and compared(n, "other", x, o, ("portmap", "run")):
                print("A/B at %s others: portmap %.1f (this build) vs %.1f (OTHER_PORTMAP); "
                      "RunPodSandbox %.1f vs %.1f" % (n, o["portmap"], x["portmap"], o["run"],
                                                      x["run"]))


if __name__ == "__main__":
    main()
