#!/usr/bin/env python3
"""Writes docs/performance.md from the last `make bench` run (bench/run.sh calls it).

Usage: write_performance.py RUN_DIR SRC_DIR OUT_FILE

RUN_DIR holds what bench/run.sh collected:
  results.tsv     the sections' figures (bench/lib/results.sh: section, label, ours, reference,
                  unit), one row per figure;
  sections.tsv    area, status (passed, failed, not run), seconds;
  out/AREA.txt    each section's printed output, as the terminal showed it;
  run.env         KEY=VALUE lines: quick, build, commit (the tree the run started from),
                  load_start, load_end, started, ended.
The file is the run's and nothing else: its header names the machine, kernel, date and commit,
the summary lists every row with its ratio, and each section follows with its own table and
its printed output. Nothing in it is edited by hand.
"""

import collections
import os
import platform
import subprocess
import sys

TITLES = {
    "podstart": "Pod start under containerd (RunPodSandbox)",
    "chain": "The CNI chain, back to back and paused",
    "startup": "Start-up: a bare VERSION exec",
    "ipam": "host-local",
    "cluster-ipam": "cluster-ipam",
    "portmap": "portmap",
    "bandwidth": "bandwidth",
    "admit": "nodegate admit",
    "ports": "nodegate ports",
    "webhook": "nodegate webhook",
}
ANALYSES = "Why the kernel bounds these figures: [docs/performance/](performance/)."


def read_env(path):
    env = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                key, _, value = line.rstrip("\n").partition("=")
                env[key] = value
    return env


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_gib = 0.0
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem_gib = int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    os_name = platform.system()
    try:
        with open("/etc/os-release") as f:
            fields = dict(l.rstrip("\n").split("=", 1) for l in f if "=" in l)
            os_name = fields.get("PRETTY_NAME", os_name).strip('"')
    except OSError:
        pass
    return "%s, %d CPUs, %.1f GiB, %s" % (model, os.cpu_count() or 0, mem_gib, os_name)


def commit(src):
    def git(*args):
        return subprocess.run(["git", "-C", src] + list(args), capture_output=True,
                              text=True).stdout.strip()
    head = git("rev-parse", "--short=12", "HEAD") or "unknown"
    if git("status", "--porcelain", "--untracked-files=no"):
        head += " with uncommitted changes"
    return head


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


def fmt(value):
    if value is None:
        return "–"
    if value >= 100:
        return "%.0f" % value
    if value >= 10:
        return "%.1f" % value
    if value >= 0.1 or value == 0:
        return "%.2f" % value
    return "%.3f" % value


def ratio(ours, reference):
    if ours is None or reference is None or ours <= 0:
        return ""
    r = reference / ours
    return "%.0fx" % r if r >= 10 else "%.1fx" % r


def table(rows, with_section):
    head = ("| section " if with_section else "") + "| | ours | reference | reference / ours |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for section, label, ours, reference, unit in rows:
        o, r = number(ours), number(reference)
        cells = ([section] if with_section else []) + [
            "%s (%s)" % (label, unit), fmt(o), fmt(r) if reference else "–", ratio(o, r)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main():
    run_dir, src, out_file = sys.argv[1:4]
    env = read_env(os.path.join(run_dir, "run.env"))
    rows = []
    results = os.path.join(run_dir, "results.tsv")
    if os.path.exists(results):
        with open(results) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) == 5:
                    rows.append(parts)
    by_section = collections.OrderedDict()
    for row in rows:
        by_section.setdefault(row[0], []).append(row)
    sections = []
    with open(os.path.join(run_dir, "sections.tsv")) as f:
        for line in f:
            area, status, seconds = line.rstrip("\n").split("\t")
            sections.append((area, status, seconds))

    ran = [a for a, s, _ in sections if s != "not run"]
    skipped = [a for a, s, _ in sections if s == "not run"]
    failed = [a for a, s, _ in sections if s == "failed"]
    out = [
        "# Performance",
        "",
        "Written by `make bench` (bench/run.sh, bench/write_performance.py) from its last run; "
        "not edited by hand. Run `make bench` to write it again on your machine. " + ANALYSES,
        "",
        "| | |",
        "|---|---|",
        "| Date (UTC) | %s to %s |" % (env.get("started", "?"), env.get("ended", "?")),
        "| Machine | %s |" % machine(),
        "| Kernel | %s %s |" % (platform.release(), platform.machine()),
        "| Commit | %s (executables from `%s/bin`) |" % (env.get("commit") or commit(src),
                                                          env.get("build", "?")),
        "| Load average (1 min) at start / end | %s / %s |" % (env.get("load_start", "?"),
                                                            env.get("load_end", "?")),
        "| Mode | %s |" % ("quick (`BENCH_QUICK=1`: fewer repetitions and sizes; see each "
                         "section's output)" if env.get("quick") == "1"
                         else "full (every section's default repetitions and sizes)"),
        "| Sections run | %s |" % (", ".join("%s (%s, %s s)" % (a, s, t) for a, s, t in sections
                                            if s != "not run") or "none"),
        "| Sections not run | %s |" % (", ".join(skipped) or "none"),
        "",
        "Times are medians of whole calls, fork and exec included, unless a row says otherwise. "
        "\"reference / ours\" is how many times longer the reference took. A machine shared "
        "with other work moves every figure; compare within a row, which was measured in the "
        "same run.",
        "",
    ]
    if failed:
        out += ["**Failed sections:** %s (their output below says why)." % ", ".join(failed), ""]
    out += ["## Summary: ours beside the reference", "",
            "Every row of this run that has a reference figure; the sections below hold the "
            "rest (our own figures, floors, throughput).", ""]
    compared = [r for r in rows if number(r[3]) is not None]
    if compared:
        out += table(compared, with_section=True)
    else:
        out.append("No section with a reference figure ran.")
    for area in ran:
        out += ["", "## " + TITLES.get(area, area), ""]
        status = dict((a, s) for a, s, _ in sections)[area]
        if status == "failed":
            out += ["This section failed in this run.", ""]
        if area in by_section:
            out += table(by_section[area], with_section=False) + [""]
        out += ["What the section printed:", "", "```"]
        path = os.path.join(run_dir, "out", area + ".txt")
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                out += [l.rstrip() for l in f.read().strip("\n").split("\n")]
        out.append("```")
    text = "\n".join(out) + "\n"
    tmp = out_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out_file)


if __name__ == "__main__":
    main()
