"""The bench sections' figures as machine-readable rows (bench/lib/results.sh's twin).

record(section, label, ours, reference=None, unit="ms") appends one row to the file named by
NODEGATE_BENCH_RESULTS, which bench/run.sh sets and bench/write_performance.py reads; without
it (a section run by hand) it does nothing.
"""

import os


def record(section, label, ours, reference=None, unit="ms"):
    path = os.environ.get("NODEGATE_BENCH_RESULTS")
    if not path:
        return
    fmt = lambda v: "" if v is None else ("%.4g" % v if isinstance(v, float) else str(v))
    with open(path, "a") as f:
        f.write("%s\t%s\t%s\t%s\t%s\n" % (section, label, fmt(ours), fmt(reference), unit))
