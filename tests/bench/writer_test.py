"""docs/performance.md is written by make bench from its run, not by hand: the rows the
sections record (bench/lib/results.sh and results.py), the writer (bench/write_performance.py)
and bench/run.sh's plumbing, without running a benchmark."""

import os
import subprocess
import tempfile
import unittest

SRC = os.environ.get("NODEGATE_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WRITER = os.path.join(SRC, "bench", "write_performance.py")


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class RowsTest(unittest.TestCase):
    def test_shell_and_python_rows_go_to_the_file_only_under_make_bench(self):
        with tempfile.TemporaryDirectory() as tmp:
            rows = os.path.join(tmp, "results.tsv")
            script = ('source %s/bench/lib/results.sh; bench_result portmap "ADD, 0 mappings" 3.1 '
                      '59.4; bench_result admit "whole process" 317' % SRC)
            subprocess.run(["bash", "-c", script], check=True,
                           env=dict(os.environ, NODEGATE_BENCH_RESULTS=rows))
            py = ("import sys; sys.path.insert(0, %r); from results import record; "
                  "record('webhook', 'reviews per second', 9000.5, unit='reviews/s')"
                  % os.path.join(SRC, "bench", "lib"))
            subprocess.run(["python3", "-c", py], check=True,
                           env=dict(os.environ, NODEGATE_BENCH_RESULTS=rows))
            with open(rows) as f:
                self.assertEqual(f.read().splitlines(), [
                    "portmap\tADD, 0 mappings\t3.1\t59.4\tms",
                    "admit\twhole process\t317\t\tms",
                    "webhook\treviews per second\t9000\t\treviews/s"])
            # By hand (no NODEGATE_BENCH_RESULTS) a section records nothing and still succeeds.
            env = {k: v for k, v in os.environ.items() if k != "NODEGATE_BENCH_RESULTS"}
            subprocess.run(["bash", "-c", script], check=True, env=env)
            subprocess.run(["python3", "-c", py], check=True, env=env)
            self.assertEqual(sorted(os.listdir(tmp)), ["results.tsv"])


class WriterTest(unittest.TestCase):
    def run_writer(self, run, sections, rows, outputs):
        write(os.path.join(run, "run.env"), "quick=1\nbuild=/x/build\nstarted=2026-12-06 08:00\n"
              "load_start=1.5\nended=2026-12-06 08:30\nload_end=2.5\n")
        write(os.path.join(run, "sections.tsv"), "".join("\t".join(s) + "\n" for s in sections))
        write(os.path.join(run, "results.tsv"), "".join("\t".join(r) + "\n" for r in rows))
        for area, text in outputs.items():
            write(os.path.join(run, "out", area + ".txt"), text)
        out = os.path.join(run, "performance.md")
        subprocess.run(["python3", WRITER, run, SRC, out], check=True)
        with open(out) as f:
            return f.read()

    def test_header_summary_and_sections_come_from_the_run(self):
        with tempfile.TemporaryDirectory() as run:
            text = self.run_writer(
                run,
                [("podstart", "not run", "0"), ("portmap", "passed", "412"),
                 ("admit", "failed", "3")],
                [("portmap", "ADD, nft mode, 1000 mappings", "5.53", "286", "ms"),
                 ("portmap", "floor on nft nodes, 1000 mappings", "3.83", "", "ms"),
                 ("admit", "whole process, 10000 pods", "317", "", "ms")],
                {"portmap": "portmap ADD / DEL latency\n  0 | 3.33 3.10\n",
                 "admit": "bench admit: nodegate admit exited 2\n"})
        self.assertTrue(text.startswith("# Performance\n"))
        for fact in ("| Date (UTC) | 2026-12-06 08:00 to 2026-12-06 08:30 |",
                     "| Kernel | %s" % os.uname().release,
                     "| Load average (1 min) at start / end | 1.5 / 2.5 |",
                     "executables from `/x/build/bin`",
                     "| Mode | quick",
                     "| Sections run | portmap (passed, 412 s), admit (failed, 3 s) |",
                     "| Sections not run | podstart |",
                     "**Failed sections:** admit"):
            self.assertIn(fact, text)
        commit = subprocess.run(["git", "-C", SRC, "rev-parse", "--short=12", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        if commit:
            self.assertIn("| Commit | " + commit, text)
        summary = text.split("## Summary")[1].split("\n## ")[0]
        # Only rows with a reference in the summary, with the reference / ours ratio.
        self.assertIn("| portmap | ADD, nft mode, 1000 mappings (ms) | 5.53 | 286 | 52x |", summary)
        self.assertNotIn("floor on nft nodes", summary)
        self.assertNotIn("whole process", summary)
        portmap = text.split("## portmap")[1].split("\n## ")[0]
        self.assertIn("| floor on nft nodes, 1000 mappings (ms) | 3.83 | – |  |", portmap)
        self.assertIn("```\nportmap ADD / DEL latency\n  0 | 3.33 3.10\n```", portmap)
        admit = text.split("## nodegate admit")[1]
        self.assertIn("This section failed in this run.", admit)
        self.assertIn("bench admit: nodegate admit exited 2", admit)
        self.assertNotIn("## Pod start", text)


class RunTest(unittest.TestCase):
    def test_run_sh_writes_the_file_even_when_no_section_runs(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "build", "bin"))
            os.makedirs(os.path.join(tmp, "build", "bench"))
            out = os.path.join(tmp, "performance.md")
            p = subprocess.run(["bash", os.path.join(SRC, "bench", "run.sh"),
                                os.path.join(tmp, "build")],
                               env=dict(os.environ, BENCH_SECTIONS="none",
                                        NODEGATE_PERFORMANCE_MD=out),
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out) as f:
                text = f.read()
            self.assertIn("| Sections run | none |", text)
            self.assertIn("| Mode | full", text)
            head = subprocess.run(["git", "-C", SRC, "rev-parse", "--short=12", "HEAD"],
                                  capture_output=True, text=True).stdout.strip()
            if head:  # the commit the run started from, recorded by run.sh
                self.assertIn("| Commit | " + head, text)
            self.assertIn("No section with a reference figure ran.", text)
            for area in ("podstart", "portmap", "webhook"):
                self.assertIn(area, text.split("| Sections not run |")[1].split("\n")[0])


if __name__ == "__main__":
    unittest.main()
