#!/usr/bin/env python3
"""Regenerates cmake/text-order/<plugin>.txt, the functions a plugin call runs, for the linker
to place together at the start of the code (cmake/text-order/README.md says why).

Each plugin's VERSION, ADD and DEL run under valgrind's callgrind in throwaway network
namespaces, as a runtime calls them on a node with the default config (portmap: one TCP and one
UDP mapping in the iptables layout in nf_tables; bandwidth: both directions on a veth;
host-local: one range). Every function callgrind saw is listed, sorted by name so that a
change to the code shows as a small diff.

Two gaps are filled in: callgrind cannot follow the CLONE_VM helper that portmap and bandwidth
start at exit (lib/netfilter/release.h), so their profiles stop at that clone and the exit path
is taken from host-local's, which has no helper; and valgrind runs the AVX2 variants of glibc's
string functions where a newer CPU runs the EVEX ones, so every variant of a listed one is
listed.

    python3 scripts/text-order.py BUILD_DIR     # root (namespaces); needs valgrind
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(REPO, "cmake", "text-order")
PLUGINS = ["host-local", "portmap", "bandwidth"]
# glibc's ifunc'd string functions: "__memmove_avx_unaligned_erms" -> family "__memmove".
STRING_VARIANT = re.compile(r"^(__(?:mem|str|stp|wmem|wcs|raw)[a-z]*)_(?:avx|sse|evex|erms)")


def run(*args, **kwargs):
    return subprocess.run(args, check=True, **kwargs)


class Node:
    """A node namespace and a container namespace, removed on exit."""

    def __init__(self, tag):
        self.host = f"ngorder-{tag}-{os.getpid()}"
        self.container = self.host + "c"
        for ns in (self.host, self.container):
            run("ip", "netns", "add", ns)
        run("ip", "-n", self.host, "link", "set", "lo", "up")

    def close(self):
        for ns in (self.host, self.container):
            subprocess.run(["ip", "netns", "del", ns], check=False)


def plugin_calls(plugin, node, data_dir):
    """(config, verbs) of one plugin's calls, after any set-up they need in the namespaces."""
    sandbox = f"/run/netns/{node.container}"
    if plugin == "host-local":
        conf = {"cniVersion": "1.0.0", "name": "ordernet", "type": "bridge",
                "ipam": {"type": "host-local", "subnet": "10.250.0.0/24", "dataDir": data_dir}}
    elif plugin == "portmap":
        conf = {"cniVersion": "1.0.0", "name": "ordernet", "type": "portmap",
                "capabilities": {"portMappings": True},
                "runtimeConfig": {"portMappings": [
                    {"hostPort": 9000, "containerPort": 80, "protocol": "tcp"},
                    {"hostPort": 9001, "containerPort": 53, "protocol": "udp"}]},
                "prevResult": {"cniVersion": "1.0.0",
                               "interfaces": [{"name": "eth0", "sandbox": sandbox}],
                               "ips": [{"interface": 0, "address": "10.250.0.2/24",
                                        "gateway": "10.250.0.1"}]}}
    else:
        run("ip", "-n", node.host, "link", "add", "vorder0", "type", "veth", "peer", "name",
            "eth0", "netns", node.container)
        run("ip", "-n", node.host, "link", "set", "vorder0", "up")
        run("ip", "-n", node.container, "link", "set", "eth0", "up")
        conf = {"cniVersion": "1.0.0", "name": "ordernet", "type": "bandwidth",
                "capabilities": {"bandwidth": True},
                "runtimeConfig": {"bandwidth": {
                    "ingressRate": 10000000, "ingressBurst": 1000000,
                    "egressRate": 10000000, "egressBurst": 1000000}},
                "prevResult": {"cniVersion": "1.0.0",
                               "interfaces": [{"name": "vorder0"},
                                              {"name": "eth0", "sandbox": sandbox}],
                               "ips": [{"interface": 1, "address": "10.250.0.2/24",
                                        "gateway": "10.250.0.1"}]}}
    return json.dumps(conf), ["VERSION", "ADD", "DEL"]


def profile(binary, plugin, work):
    """Names of the functions callgrind saw in the plugin's calls."""
    node = Node(plugin)
    try:
        conf, verbs = plugin_calls(plugin, node, os.path.join(work, "ipam"))
        for verb in verbs:
            env = dict(os.environ, CNI_COMMAND=verb, CNI_CONTAINERID="textorder",
                       CNI_NETNS=f"/run/netns/{node.container}", CNI_IFNAME="eth0",
                       CNI_PATH="/usr/lib/cni")
            out = os.path.join(work, f"{plugin}.{verb}.%p")
            # A nonzero status is valgrind's abort at the helper's clone, after the dump; what
            # tells the call succeeded is its stdout.
            call = subprocess.run(["ip", "netns", "exec", node.host, "valgrind",
                                   "--tool=callgrind", "--demangle=no", "--dump-before=clone",
                                   f"--callgrind-out-file={out}", binary],
                                  input=conf, text=True, env=env, check=False,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            if '"code"' in call.stdout or (verb != "DEL" and not call.stdout.strip()):
                sys.exit(f"text-order: {plugin} {verb} failed: {call.stdout.strip()}")
    finally:
        node.close()
    names = set()
    for path in glob.glob(os.path.join(work, f"{plugin}.*")):
        with open(path) as f:
            for line in f:
                m = re.match(r"^c?fn=\(\d+\) (.+)$", line.rstrip("\n"))
                if m:
                    names.add(m.group(1))
    if not names:
        sys.exit(f"text-order: callgrind recorded nothing for {plugin}")
    return names


def defined_functions(binary):
    out = run("nm", "--defined-only", binary, capture_output=True, text=True).stdout
    return {f[2] for f in (line.split() for line in out.splitlines())
            if len(f) == 3 and f[1] in "tTwWi"}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    bin_dir = os.path.join(os.path.abspath(sys.argv[1]), "bin")
    os.makedirs(OUT_DIR, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ng-text-order.") as work:
        profiles = {p: profile(os.path.join(bin_dir, p), p, work) for p in PLUGINS}
    exit_path = profiles["host-local"]
    for plugin in PLUGINS:
        defined = defined_functions(os.path.join(bin_dir, plugin))
        names = profiles[plugin] | exit_path | {"__clone", "clone"}
        families = {m.group(1) for m in map(STRING_VARIANT.match, names) if m}
        names |= {s for s in defined
                  if (m := STRING_VARIANT.match(s)) and m.group(1) in families}
        names &= defined
        path = os.path.join(OUT_DIR, f"{plugin}.txt")
        with open(path, "w") as f:
            f.write(f"# {plugin}: generated by scripts/text-order.py; see README.md here.\n")
            f.write("".join(n + "\n" for n in sorted(names)))
        print(f"{path}: {len(names)} functions")


if __name__ == "__main__":
    main()
