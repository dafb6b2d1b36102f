#!/usr/bin/env python3
"""How CTest runs every test of the tree (cmake/NodegateHelpers.cmake: ng_test, ng_script_test,
ng_python_test register each test as this script around the test's own command).

  run-test.py --name CTEST_NAME --kind gtest|script|unittest -- COMMAND...

It counts what the test ran: each GoogleTest case (from the binary's XML report), each unittest
method, or the script as one check, and sees every skip with its reason:
  - gtest: GTEST_SKIP() and DISABLED_ cases; NODEGATE_SKIP_CASES (gtest filter patterns joined
    by ':') leaves matching cases out and reports them as skipped for NODEGATE_SKIP_REASON
    (tests/arm64/unit_tier.sh: what qemu-user cannot emulate);
  - script: exit status 77, the reason on a line "SKIP: ..." (scripts/lib/check.sh: skip_test);
  - unittest: skipTest() and the skip decorators, and NODEGATE_SKIP_CASES (Class.method
    globs joined by ':') as for gtest (the module is loaded and run here, so the
    test file needs nothing of its own).

Exit status: the test failed (a failed case, a non-zero exit, a missing report, no case run):
its own status, else 1. Otherwise 77 (the tests' SKIP_RETURN_CODE: CTest shows "Skipped") when
anything was skipped, 0 when nothing was. Under CI (CI=true) a skip that tests/allowed_skips.txt
does not list, with the reason the test gave, fails the test instead.

With NG_RESULTS_DIR set (scripts/lib/stages.sh sets it for each stage), the counts and skips go
to NG_RESULTS_DIR/CTEST_NAME.json, which scripts/count-tests.py sums per stage.
"""

import argparse
import ctypes
import fnmatch
import json
import os
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

SKIP_EXIT = 77
SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALLOW_LIST = os.path.join(SOURCE_DIR, "tests", "allowed_skips.txt")

_child = None  # the test's process, for the signal handler


def under_ci():
    return os.environ.get("CI") == "true"


def read_allow_list(path=ALLOW_LIST):
    """The entries of tests/allowed_skips.txt: (pattern, reason prefix, why CI accepts it)."""
    entries = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = [field.strip() for field in line.split(" | ")]
            if len(fields) != 3 or not all(fields):
                raise SystemExit(f"{path}:{number}: want 'TEST:CASE | reason | why', got: {line}")
            entries.append(tuple(fields))
    return entries


def allowance(entries, full_name, reason):
    """Why CI accepts this skip, or None: an entry whose pattern matches TEST:CASE (or TEST for a
    script) and whose reason prefix starts the skip's reason."""
    for pattern, prefix, why in entries:
        if fnmatch.fnmatchcase(full_name, pattern) and reason.startswith(prefix):
            return why
    return None


def _die_with_parent():
    # The test ends with this wrapper, whoever kills it (CTest's timeout kills only its child):
    # SIGTERM, so that a script's cleanup traps run. PR_SET_PDEATHSIG is 1.
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)


def _forward(signum, _frame):
    if _child is not None and _child.poll() is None:
        _child.send_signal(signum)


def run(command, env=None, capture=False):
    """Runs command, its output passed through; with capture, also returned (stderr merged)."""
    global _child
    stdout = subprocess.PIPE if capture else None
    stderr = subprocess.STDOUT if capture else None
    _child = subprocess.Popen(command, env=env, stdout=stdout, stderr=stderr,
                              preexec_fn=_die_with_parent)
    lines = []
    if capture:
        for raw in _child.stdout:
            sys.stdout.buffer.write(raw)
            sys.stdout.buffer.flush()
            lines.append(raw.decode("utf-8", "replace"))
    status = _child.wait()
    _child = None
    return status, "".join(lines)


class Counts:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.skips = []  # (case or "", reason)
        self.problems = []  # why the test failed beyond its failed cases

    def skip(self, case, reason):
        self.skips.append((case, reason.strip() or "no reason given"))


def gtest_cases(xml_path):
    """(case name, result, message) of each case in a GoogleTest XML report."""
    root = ElementTree.parse(xml_path).getroot()
    for case in root.iter("testcase"):
        name = f"{case.get('classname')}.{case.get('name')}"
        failure = case.find("failure")
        skipped = case.find("skipped")
        if failure is not None:
            yield name, "failed", failure.get("message", "")
        elif case.get("status") == "notrun":
            yield name, "skipped", "disabled (DISABLED_ in its name)"
        elif skipped is not None or case.get("result") == "skipped":
            message = skipped.get("message", "") if skipped is not None else ""
            # GoogleTest's message is "file:line\nwhat GTEST_SKIP() was given".
            yield name, "skipped", message.split("\n", 1)[-1]
        else:
            yield name, "passed", ""


def run_gtest(command, counts):
    env = dict(os.environ)
    left_out = os.environ.get("NODEGATE_SKIP_CASES", "")
    if left_out:
        if "GTEST_FILTER" in env:
            counts.problems.append("NODEGATE_SKIP_CASES and GTEST_FILTER are both set")
            return 1
        reason = os.environ.get("NODEGATE_SKIP_REASON", "")
        listing = subprocess.run(command + ["--gtest_list_tests", "--gtest_filter=" + left_out],
                                 stdout=subprocess.PIPE, text=True, check=False)
        if listing.returncode != 0:
            counts.problems.append(f"--gtest_list_tests exited {listing.returncode}")
            return listing.returncode or 1
        suite = ""
        for line in listing.stdout.splitlines():
            if not line.startswith(" "):
                suite = line.split("#")[0].strip()
            else:
                counts.skip(suite + line.split("#")[0].strip(), reason)
        env["GTEST_FILTER"] = "-" + left_out
    with tempfile.TemporaryDirectory(prefix="ng-gtest.") as tmp:
        report = os.path.join(tmp, "report.xml")
        status, _ = run(command + ["--gtest_output=xml:" + report], env=env)
        if not os.path.exists(report):
            counts.problems.append(f"exited {status} without its XML report (a crash?)")
            return status or 1
        for name, result, message in gtest_cases(report):
            if result == "passed":
                counts.passed += 1
            elif result == "failed":
                counts.failed += 1
            else:
                counts.skip(name, message)
    if status != 0 and counts.failed == 0:
        counts.problems.append(f"exited {status} with no failed case (a sanitizer at exit?)")
    return status


def run_script(command, counts):
    status, output = run(command, capture=True)
    if status == SKIP_EXIT:
        reasons = [line[len("SKIP: "):] for line in output.splitlines() if line.startswith("SKIP: ")]
        counts.skip("", reasons[-1] if reasons else "")
        return 0
    if status == 0:
        counts.passed = 1
    else:
        counts.failed = 1
    return status


def run_unittest(command, counts):
    """command is [python, test.py]: the module runs in a child python (unittest_child below)
    that writes its results to a file."""
    with tempfile.TemporaryDirectory(prefix="ng-unittest.") as tmp:
        report = os.path.join(tmp, "report.json")
        child = command[:-1] + [os.path.abspath(__file__), "--unittest-child", report, command[-1]]
        status, _ = run(child)
        if not os.path.exists(report):
            counts.problems.append(f"exited {status} without its report")
            return status or 1
        with open(report, encoding="utf-8") as f:
            result = json.load(f)
    counts.passed = result["passed"]
    counts.failed = result["failed"]
    for case, reason in result["skipped"]:
        counts.skip(case, reason)
    return status


def unittest_child(report, script):
    import importlib.util
    import unittest

    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    sys.argv = [script]
    spec = importlib.util.spec_from_file_location("ng_unittest_module", script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)

    def case(test):
        return test.id().removeprefix(spec.name + ".")

    # NODEGATE_SKIP_CASES: the cases left out here (tests/arm64/unit_tier.sh), each skipped
    # with NODEGATE_SKIP_REASON instead of run.
    left_out = [p for p in os.environ.get("NODEGATE_SKIP_CASES", "").split(":") if p]
    if left_out:
        reason = os.environ.get("NODEGATE_SKIP_REASON", "left out by NODEGATE_SKIP_CASES")

        def leave_out(tests):
            for test in tests:
                if isinstance(test, unittest.TestSuite):
                    leave_out(test)
                elif any(fnmatch.fnmatchcase(case(test), p) for p in left_out):
                    setattr(test, test._testMethodName,
                            unittest.skip(reason)(getattr(test, test._testMethodName)))

        leave_out(suite)
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stderr).run(suite)

    failed = {case(t) for t, _ in result.failures + result.errors}
    failed |= {case(t) for t in result.unexpectedSuccesses}
    skipped = [(case(t), reason) for t, reason in result.skipped]
    with open(report, "w", encoding="utf-8") as f:
        json.dump({"passed": result.testsRun - len(failed) - len(skipped), "failed": len(failed),
                   "skipped": skipped}, f)
    return 0 if result.wasSuccessful() else 1


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--unittest-child":
        return unittest_child(sys.argv[2], sys.argv[3])
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", required=True)
    parser.add_argument("--kind", required=True, choices=["gtest", "script", "unittest"])
    parser.add_argument("command", nargs="+")
    args = parser.parse_args()
    entries = read_allow_list()  # a malformed list stops every test, not just a skipping one
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _forward)

    counts = Counts()
    runner = {"gtest": run_gtest, "script": run_script, "unittest": run_unittest}[args.kind]
    status = runner(args.command, counts)

    skips = []
    refused = 0
    for case, reason in counts.skips:
        full_name = f"{args.name}:{case}" if case else args.name
        why = allowance(entries, full_name, reason)
        skips.append({"case": full_name, "reason": reason, "allowed": why})
        if why is None and under_ci():
            refused += 1
            print(f"run-test: SKIP NOT ALLOWED UNDER CI: {full_name}: {reason}\n"
                  f"  (fix what made it skip, or list it in tests/allowed_skips.txt with why)")
        else:
            print(f"run-test: skipped {full_name}: {reason}"
                  + (f"\n  allowed under CI: {why}" if why else "\n  (CI=true would fail it)"))
    ran = counts.passed + counts.failed + len(counts.skips)
    if ran == 0 and status == 0:
        counts.problems.append("ran no test case")
    for problem in counts.problems:
        print(f"run-test: {args.name}: {problem}")

    if status != 0 or counts.failed or counts.problems or refused:
        outcome, exit_status = "failed", status if status not in (0, SKIP_EXIT) else 1
    elif skips:
        outcome, exit_status = "skipped", SKIP_EXIT
    else:
        outcome, exit_status = "passed", 0

    results_dir = os.environ.get("NG_RESULTS_DIR")
    if results_dir:
        record = {"name": args.name, "kind": args.kind, "outcome": outcome,
                  "passed": counts.passed, "failed": counts.failed + refused,
                  "skipped": len(skips) - refused, "skips": skips, "problems": counts.problems}
        with open(os.path.join(results_dir, args.name + ".json"), "w", encoding="utf-8") as f:
            json.dump(record, f)
    return exit_status


if __name__ == "__main__":
    sys.exit(main())
