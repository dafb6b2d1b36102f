#!/usr/bin/env python3
"""What each stage of a test driver ran (scripts/lib/stages.sh: make test, make test-arm64,
.ci/run): per stage and in total, tests and cases in the form "N passed, N failed, N skipped".

  count-tests.py stage --log FILE --name NAME --status RC --seconds N --results DIR
      a ctest stage: CTest's JUnit report (DIR/junit.xml) for each test's outcome, and the
      records scripts/run-test.py wrote (DIR/<test>.json) for its cases and skips; prints the
      stage's skips with their reasons; appends the stage to FILE; exits 1 when the stage
      failed, also when a test ran without scripts/run-test.py (its skips would be unseen)
  count-tests.py step --log FILE --name NAME --status RC --seconds N
      a stage that runs no tests (a build, a root's bootstrap): appended to FILE as such
  count-tests.py table --log FILE --title TITLE
      every skip of every stage with its reason and whether CI accepts it, then one line per
      stage and the total; exits 1 when any stage failed

A "test" is one CTest test; a "case" is what it ran: each GoogleTest case, each unittest
method, or a script test as one case.
"""

import argparse
import json
import os
import sys
import xml.etree.ElementTree as ElementTree

KINDS = ("passed", "failed", "skipped")


def counted(c):
    return ", ".join(f"{c[k]} {k}" for k in KINDS)


def ctest_outcomes(junit):
    """{test name: passed|failed|skipped} from CTest's JUnit report."""
    outcomes = {}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        status = case.get("status")
        skipped = case.find("skipped")
        if status == "run":
            outcomes[case.get("name")] = "passed"
        elif status == "notrun" and skipped is not None and "SKIP_RETURN_CODE" in skipped.get(
                "message", ""):
            outcomes[case.get("name")] = "skipped"
        else:  # failed, timed out, could not start, disabled
            outcomes[case.get("name")] = "failed"
    return outcomes


def stage(args):
    row = {"name": args.name, "seconds": args.seconds, "tests": dict.fromkeys(KINDS, 0),
           "cases": dict.fromkeys(KINDS, 0), "skips": [], "problems": []}
    junit = os.path.join(args.results, "junit.xml")
    outcomes = ctest_outcomes(junit) if os.path.exists(junit) else {}
    if not outcomes:
        row["problems"].append("no test ran (ctest found none, or wrote no report)")
    for name, outcome in sorted(outcomes.items()):
        row["tests"][outcome] += 1
        path = os.path.join(args.results, name + ".json")
        if not os.path.exists(path):
            if outcome == "failed":  # a timeout or a crash of the runner: one failed case
                row["cases"]["failed"] += 1
            else:
                row["problems"].append(
                    f"{name} ran without scripts/run-test.py, so its skips cannot be seen: "
                    "register it with ng_test, ng_script_test or ng_python_test")
            continue
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
        for k in KINDS:
            row["cases"][k] += record[k]
        row["skips"] += [s for s in record["skips"]]
    failed = args.status != 0 or row["problems"] or row["tests"]["failed"]
    row["status"] = "FAILED" if failed else "passed"
    for s in row["skips"]:
        print(f"  skipped {s['case']}: {s['reason']}")
    for p in row["problems"]:
        print(f"  {p}")
    with open(args.log, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
    return 1 if failed else 0


def step(args):
    row = {"name": args.name, "seconds": args.seconds, "status":
           "passed" if args.status == 0 else "FAILED", "step": True, "skips": [], "problems": []}
    with open(args.log, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
    return 0 if args.status == 0 else 1


def table(args):
    rows = []
    if os.path.exists(args.log):
        with open(args.log, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
    skips = [(r["name"], s) for r in rows for s in r["skips"]]
    if skips:
        print(f"== {args.title}: every skip, with its reason")
        for name, s in skips:
            verdict = f"allowed under CI: {s['allowed']}" if s["allowed"] else \
                "not on tests/allowed_skips.txt: CI=true fails it"
            print(f"  {s['case']} ({name}): {s['reason']}\n      {verdict}")
    total_tests = dict.fromkeys(KINDS, 0)
    total_cases = dict.fromkeys(KINDS, 0)
    seconds = 0
    print(f"== {args.title}: what each stage ran (tests: CTest's; cases: what they ran)")
    for r in rows:
        seconds += r["seconds"]
        if r.get("step"):
            print(f"  {r['name']}: {r['status']}, no tests ({r['seconds']} s)")
            continue
        for k in KINDS:
            total_tests[k] += r["tests"][k]
            total_cases[k] += r["cases"][k]
        print(f"  {r['name']}: {r['status']} ({r['seconds']} s)\n"
              f"      tests {counted(r['tests'])}; cases {counted(r['cases'])}")
    print(f"  total: {len(rows)} stages, {seconds // 60} min {seconds % 60} s in them\n"
          f"      tests {counted(total_tests)}; cases {counted(total_cases)}")
    failed = [r["name"] for r in rows if r["status"] != "passed"]
    if not rows:
        print(f"{args.title}: FAILED: no stage ran")
        return 1
    if failed:
        print(f"{args.title}: FAILED: " + "; ".join(failed))
        return 1
    print(f"{args.title}: every stage passed")
    return 0


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="what", required=True)
    for what in ("stage", "step"):
        p = sub.add_parser(what)
        p.add_argument("--log", required=True)
        p.add_argument("--name", required=True)
        p.add_argument("--status", type=int, required=True)
        p.add_argument("--seconds", type=int, required=True)
        if what == "stage":
            p.add_argument("--results", required=True)
    p = sub.add_parser("table")
    p.add_argument("--log", required=True)
    p.add_argument("--title", required=True)
    args = parser.parse_args()
    return {"stage": stage, "step": step, "table": table}[args.what](args)


if __name__ == "__main__":
    sys.exit(main())
