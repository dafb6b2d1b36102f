#!/usr/bin/python3
"""Where the chain's plugins wait: off-CPU time by kernel call path, from a per-task perf record
of bench/chain/driver.py (bench/chain/trace-waits.sh makes it).

Usage: waits.py PERF_SCRIPT_TXT CHAIN_JSON [TOP]

PERF_SCRIPT_TXT is `perf script --show-switch-events -F comm,pid,tid,time,event,ip,sym` of
`perf record -k mono -g --switch-events -e sched:sched_switch -e sched:sched_process_exec`
of the driver and its children: each sched_switch sample
carries the stack a task left the CPU with, and the task's next PERF_RECORD_SWITCH IN ends
the wait. A wait of a plugin's helper (a process of the same name that did not exec:
portmap's and bridge's socket release, bandwidth's ifb and bridge's pair deletion, the child
that execs host-local until it does) is marked "(helper)": it is not part of the call's time.
A wait is charged to the plugin (the task's comm), to ADD or DEL by the chain's windows in
CHAIN_JSON, and to the first frames of its stack that say why (the scheduler's
own and the generic wait helpers are skipped). A preemption (the task was runnable) is
"preempted", the CPU's load, not a wait of the call's.

Prints per (command, plugin): calls, median wall time, and the waits summed over all calls,
largest first, with their share per call.
"""

import collections
import json
import re
import sys

PLUGINS = ("bridge", "host-local", "portmap", "bandwidth")
GENERIC = {
    "__schedule", "schedule", "schedule_timeout", "schedule_preempt_disabled",
    "wait_for_completion", "wait_for_common", "__wait_for_common", "do_wait_for_common",
    "wait_for_completion_state", "wait_for_completion_killable", "io_schedule",
    "schedule_hrtimeout_range", "schedule_hrtimeout_range_clock", "do_nanosleep",
    "hrtimer_nanosleep", "__mutex_lock", "__mutex_lock_slowpath", "mutex_lock",
    "rwsem_down_write_slowpath", "rwsem_down_read_slowpath", "down_write", "down_read",
    "__cond_resched", "preempt_schedule_common", "_cond_resched", "__wait_rcu_gp",
    "synchronize_rcu_normal", "wait_rcu_exp_gp", "rtnl_lock", "__rtnl_lock", "rtnl_net_lock",
    "exit_to_user_mode_loop", "irqentry_exit_to_user_mode", "do_syscall_64",
    "entry_SYSCALL_64_after_hwframe", "mutex_lock_nested", "__mutex_lock_killable_slowpath",
    "mutex_lock_killable", "wait_woken", "sk_wait_data",
}
HEAD = re.compile(r"^(\S+)\s+(\d+)/(\d+)\s+([\d.]+):\s+(.*)$")
FRAME = re.compile(r"^\s+[0-9a-f]+\s+(\S+)")


def reason(frames, preempt):
    if preempt:
        return "preempted (runnable: the CPU's load)"
    named = [f.split("+")[0] for f in frames if not f.startswith("[")]
    useful = [f for f in named if f not in GENERIC]
    return " < ".join(useful[:3]) if useful else " < ".join(named[:3])


def waits(path):
    """([(comm, tgid, t_out_ms, t_in_ms, reason)], {tgids that exec'd}): a thread's waits are
    its process's."""
    out, pending, current, execd = [], {}, None, set()
    with open(path) as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = HEAD.match(lines[i])
        i += 1
        if not m:
            continue
        comm, tgid, tid = m.group(1), int(m.group(2)), int(m.group(3))
        t, rest = float(m.group(4)) * 1000, m.group(5)
        if rest.startswith("sched:sched_process_exec"):
            execd.add(tgid)
        elif rest.startswith("sched:sched_switch"):
            frames = []
            while i < len(lines) and FRAME.match(lines[i]):
                frames.append(FRAME.match(lines[i]).group(1))
                i += 1
            current = (tid, frames)
        elif rest.startswith("PERF_RECORD_SWITCH OUT"):
            frames = current[1] if current and current[0] == tid else []
            pending[tid] = (comm, tgid, t, reason(frames, "preempt" in rest))
        elif rest.startswith("PERF_RECORD_SWITCH IN") and tid in pending:
            c, g, t0, why = pending.pop(tid)
            out.append((c, g, t0, t, why))
    return out, execd


def main():
    perf_txt, chain_json = sys.argv[1:3]
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    rows = [json.loads(line) for line in open(chain_json)]
    windows = [(r["add_window"], "ADD") for r in rows] + [(r["del_window"], "DEL") for r in rows]
    total = collections.defaultdict(lambda: collections.Counter())
    count = collections.defaultdict(lambda: collections.Counter())
    found, execd = waits(perf_txt)
    for comm, pid, t0, t1, why in found:
        if comm not in PLUGINS:
            continue
        for (w0, w1), command in windows:
            if w0 <= t0 <= w1:
                if pid not in execd:
                    why = "(helper) " + why
                total[(command, comm)][why] += t1 - t0
                count[(command, comm)][why] += 1
                break
    n = len(rows)
    for command in ("ADD", "DEL"):
        for p in PLUGINS:
            key = (command, p)
            if key not in total:
                continue
            verb = "add" if command == "ADD" else "del"
            # host-local is exec'd by bridge: the driver does not time it
            walls = sorted(r[verb][p] for r in rows if p in r[verb])
            wall = "median %.1f ms" % walls[len(walls) // 2] if walls else "run by bridge"
            off = sum(total[key].values()) / n
            print("%s %s: %d calls, %s, off-CPU %.1f ms per call" % (command, p, n, wall, off))
            for why, ms in total[key].most_common(top):
                print("   %6.2f ms/call %4d waits  %s" % (ms / n, count[key][why], why))


if __name__ == "__main__":
    main()
