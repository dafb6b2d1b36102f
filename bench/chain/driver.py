#!/usr/bin/python3
"""The pod network's CNI chain exec'd as a runtime execs it (libcni), without the runtime, for
bench/chain/bench.sh.

Usage: driver.py PLUGIN_DIR CONFLIST NETNS_PREFIX COUNT FIRST_PORT PAUSE_MS OUT [NOOP]

For pod i in 0..COUNT-1 (container namespace /run/netns/NETNS_PREFIX<i>, made by the caller):
ADD of every plugin of CONFLIST in order, each given the previous one's result, then DEL of
every plugin in reverse order, each given the ADD chain's result (as libcni's cache gives it),
then the next pod's ADD. PAUSE_MS > 0 sleeps that long before each ADD chain and each DEL
chain (the paused rhythm); 0 runs them back to back, as a node starting and stopping many pods
does. Each pod has one TCP and one UDP host port (FIRST_PORT + i, to 8080 and 53) and the
bandwidth limits containerd gives the annotations `10M` each way.

Each plugin's exec is timed from this process (CLOCK_MONOTONIC around posix_spawn .. wait);
NOOP, when given, is a static no-op exec'd the same way before each ADD chain: the floor of
every call, paid in the same rhythm. Writes one JSON line per pod to OUT:
  {"pod": i, "add": {"bridge": ms, ...}, "del": {...}, "add_chain": ms, "del_chain": ms,
   "noop": ms, "add_window": [t0, t1], "del_window": [t0, t1]}
(the windows in CLOCK_MONOTONIC ms, the clock of `perf record -k mono`).
Exits non-zero on the first failed call (after a DEL chain for that pod).
"""

import json
import os
import subprocess
import sys
import time

# containerd 1.6's bandwidth for the annotation "10M": the rate in bits/s and a burst of
# 2^32-1 bits (tests/e2e/containerd_golden_inputs_test.cc).
BANDWIDTH = {"ingressRate": 10000000, "ingressBurst": 4294967295,
             "egressRate": 10000000, "egressBurst": 4294967295}


def now_ms():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) / 1e6


def run(path, env, stdin):
    """(ms, returncode, stdout) of one exec of path, the way libcni runs a plugin."""
    t0 = now_ms()
    p = subprocess.run([path], input=stdin, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, close_fds=True)
    return now_ms() - t0, p.returncode, p.stdout


def plugin_conf(conflist, plugin, prev, runtime):
    conf = dict(plugin)
    conf["name"] = conflist["name"]
    conf["cniVersion"] = conflist["cniVersion"]
    wanted = {k: v for k, v in runtime.items() if plugin.get("capabilities", {}).get(k)}
    if wanted:
        conf["runtimeConfig"] = wanted
    if prev is not None:
        conf["prevResult"] = prev
    return json.dumps(conf).encode()


def chain(plugin_dir, conflist, command, env, runtime, prev):
    """{type: ms}, the result (ADD) and an error message or None."""
    plugins = conflist["plugins"] if command == "ADD" else list(reversed(conflist["plugins"]))
    times, result = {}, prev
    env = dict(env, CNI_COMMAND=command)
    for plugin in plugins:
        stdin = plugin_conf(conflist, plugin, result if command == "ADD" else prev, runtime)
        ms, rc, out = run(os.path.join(plugin_dir, plugin["type"]), env, stdin)
        times[plugin["type"]] = ms
        if rc != 0:
            return times, result, "%s %s: exit %d: %s" % (command, plugin["type"], rc,
                                                          out.decode(errors="replace"))
        if command == "ADD":
            result = json.loads(out)
    return times, result, None


def main():
    plugin_dir, conflist_path, prefix, count, first_port, pause_ms, out = sys.argv[1:8]
    noop = sys.argv[8] if len(sys.argv) > 8 else None
    count, first_port, pause = int(count), int(first_port), float(pause_ms) / 1000
    with open(conflist_path) as f:
        conflist = json.load(f)
    rows, failed = [], None
    for i in range(count):
        env = {"CNI_CONTAINERID": "chain%s%d" % (prefix, i), "CNI_NETNS": "/run/netns/%s%d" % (
            prefix, i), "CNI_IFNAME": "eth0", "CNI_PATH": plugin_dir, "PATH": os.environ["PATH"]}
        runtime = {"portMappings": [
            {"hostPort": first_port + i, "containerPort": 8080, "protocol": "tcp"},
            {"hostPort": first_port + i, "containerPort": 53, "protocol": "udp"}],
            "bandwidth": BANDWIDTH}
        row = {"pod": i}
        if noop:
            row["noop"] = run(noop, env, b"")[0]
        time.sleep(pause)
        t0 = now_ms()
        row["add"], result, failed = chain(plugin_dir, conflist, "ADD", env, runtime, None)
        row["add_window"] = [t0, now_ms()]
        row["add_chain"] = row["add_window"][1] - t0
        time.sleep(pause)
        t0 = now_ms()
        row["del"], _, del_failed = chain(plugin_dir, conflist, "DEL", env, runtime, result)
        row["del_window"] = [t0, now_ms()]
        row["del_chain"] = row["del_window"][1] - t0
        failed = failed or del_failed
        rows.append(row)
        if failed:
            break
    with open(out, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    if failed:
        print("driver.py: pod %d: %s" % (len(rows) - 1, failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
