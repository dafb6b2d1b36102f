#!/usr/bin/python3
"""Turns what containerd_e2e.sh's recording wrappers saved into golden plugin inputs.

Usage: cni_record.py RAW_DIR TEMP_DIR SANDBOX_ID OUT_DIR

RAW_DIR holds, named by a nanosecond timestamp:
  TS.PLUGIN.env    the CNI_* environment of one plugin call (env output)
  TS.PLUGIN.stdin  its stdin
  TS.phase         a marker the test writes before a CRI call ("stop", "remove")
Writes OUT_DIR/NN-PHASE-PLUGIN-COMMAND.json, {"env": {...}, "stdin": {...}}, in call order,
PHASE being run (RunPodSandbox), stop or remove. Random parts are made stable: TEMP_DIR ->
/tmp/NODEGATE_T, the sandbox ID -> 0123456789abcdef x4 (and the bwp ifb name derived from it),
the pod netns name, veth names and MAC addresses -> numbered placeholders.
"""

import glob
import hashlib
import json
import os
import re
import sys

FIXED_ID = "0123456789abcdef" * 4
NETWORK = "nodegate"  # the network name of conf/examples/10-standard.conflist


def bwp(container_id):  # bandwidth's ifb: "bwp" + sha512(network + ID)[:12]
    return "bwp" + hashlib.sha512((NETWORK + container_id).encode()).hexdigest()[:12]


def env_of(path):
    return dict(line.rstrip("\n").split("=", 1) for line in open(path) if "=" in line)


def main():
    raw, temp, sandbox, out = sys.argv[1:]
    entries = sorted(glob.glob(os.path.join(raw, "*.env")) + glob.glob(os.path.join(raw, "*.phase")),
                     key=lambda p: int(os.path.basename(p).split(".")[0]))
    calls = [e for e in entries if e.endswith(".env")]
    if not sandbox and calls:  # RunPodSandbox failed before it returned the ID
        sandbox = env_of(calls[0]).get("CNI_CONTAINERID", "")

    stable = {}  # random token -> (kind, placeholder), the same in every file

    def placeholder(kind, token):
        if token not in stable:
            n = sum(1 for v in stable.values() if v[0] == kind) + 1
            stable[token] = (kind, {"mac": "02:00:00:00:00:%02x" % n,
                                    "veth": "veth%08x" % n,
                                    "netns": "cni-00000000-0000-0000-0000-%012x" % n}[kind])
        return stable[token][1]

    def norm(s):
        s = s.replace(temp, "/tmp/NODEGATE_T")
        if sandbox:
            s = s.replace(sandbox, FIXED_ID).replace(bwp(sandbox), bwp(FIXED_ID))
        s = re.sub(r"cni-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
                   lambda m: placeholder("netns", m.group(0)), s)
        s = re.sub(r"\bveth[0-9a-f]{8}\b", lambda m: placeholder("veth", m.group(0)), s)
        return re.sub(r"\b(?:[0-9a-f]{2}:){5}[0-9a-f]{2}\b",
                      lambda m: placeholder("mac", m.group(0)), s)

    phase, n = "run", 0
    for entry in entries:
        if entry.endswith(".phase"):
            phase = open(entry).read().strip()
            continue
        n += 1
        base = entry[:-len(".env")]
        plugin = base.rsplit(".", 1)[1]
        env = {k: norm(v) for k, v in env_of(entry).items()}
        stdin = json.loads(norm(open(base + ".stdin").read()))
        name = "%02d-%s-%s-%s.json" % (n, phase, plugin, env.get("CNI_COMMAND", "NONE"))
        with open(os.path.join(out, name), "w") as f:
            json.dump({"env": env, "stdin": stdin}, f, indent=2, sort_keys=True)
            f.write("\n")
    print("  recorded %d plugin calls into %s" % (n, out))


if __name__ == "__main__":
    main()
