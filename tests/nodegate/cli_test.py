"""`nodegate` as people expect a cluster tool to behave: every command answers --help, the build
answers `version`, `completion bash|zsh` writes scripts the shells accept and that complete what
--help lists, the man page lists every flag --help shows, every report parses as JSON (and YAML)
with -o, and the exit status means the same everywhere (0 yes, 1 no, 2 unusable input, 3 could
not reach what it needs). Unit tier: it execs $NODEGATE_BIN_DIR/nodegate, loopback only.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import unittest

import yaml

BIN = os.environ["NODEGATE_BIN_DIR"]
SRC = os.environ["NODEGATE_SOURCE_DIR"]
NODEGATE = os.path.join(BIN, "nodegate")
MAN = os.path.join(BIN, "..", "share", "man", "man1", "nodegate.1")
ADMIT_DATA = os.path.join(SRC, "tests", "admit", "testdata")

OK, NO, USAGE, UNAVAILABLE = 0, 1, 2, 3


def run(*args, stdin=None, env=None):
    return subprocess.run([NODEGATE, *args], capture_output=True, text=True, input=stdin,
                          env=env, timeout=120)


def listed_commands():
    """The commands `nodegate --help` lists."""
    out = run("--help").stdout
    return re.findall(r"^  ([a-z][a-z-]*)  ", out, re.M)


def subcommands(help_text):
    """The subcommands a --help text lists (CLI11's SUBCOMMANDS section)."""
    if "Subcommands:" not in help_text:
        return []
    section = help_text.split("Subcommands:", 1)[1]
    return re.findall(r"^  ([a-z][a-z-]*)[\s,]", section, re.M)


def flags_of(help_text):
    """Every flag a --help text shows, in its OPTIONS and its subcommands' sections."""
    return set(re.findall(r"(?:^|[ ,])(--?[a-zA-Z][a-zA-Z0-9-]*)", "\n".join(
        line for line in help_text.splitlines() if line.startswith("  "))))


def unused_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Commands(unittest.TestCase):
    def test_every_command_and_subcommand_answers_help(self):
        commands = listed_commands()
        for want in ["admit", "guard", "ports", "cni", "conf", "webhook", "ipam", "explain",
                     "version", "completion"]:
            self.assertIn(want, commands)
        for c in commands + ["man"]:
            r = run(c, "--help")
            self.assertEqual(r.returncode, OK, f"{c} --help: {r.stderr}")
            self.assertIn(f"nodegate {c}", r.stdout, c)
            self.assertEqual(r.stderr, "", c)
            for sub in subcommands(r.stdout):
                rs = run(c, sub, "--help")
                self.assertEqual(rs.returncode, OK, f"{c} {sub} --help: {rs.stderr}")

    def test_top_level_help_usage_and_unknown(self):
        self.assertEqual(run("--help").returncode, OK)
        self.assertEqual(run("-h").returncode, OK)
        r = run()
        self.assertEqual(r.returncode, USAGE)
        self.assertIn("usage: nodegate", r.stderr)
        r = run("no-such-command")
        self.assertEqual(r.returncode, USAGE)
        self.assertIn("unknown command 'no-such-command'", r.stderr)

    def test_an_unknown_flag_is_usage_for_every_command(self):
        for c in listed_commands() + ["man"]:
            r = run(c, "--no-such-flag")
            self.assertEqual(r.returncode, USAGE, f"{c}: {r.stdout} {r.stderr}")
            self.assertIn("--help", r.stderr, c)
            self.assertEqual(r.stdout, "", c)

    def test_output_flag_refuses_an_unknown_format_everywhere(self):
        for words in [["version"], ["admit", "x.yaml"], ["ports"], ["cni", "status", "n"],
                      ["conf", "validate"], ["ipam", "show"], ["explain", "--pending"]]:
            r = run(*words, "-o", "xml")
            self.assertEqual(r.returncode, USAGE, f"{words}: {r.stderr}")


class Version(unittest.TestCase):
    FIELDS = ["version", "commit", "sourceDate", "compiler", "os", "arch", "static"]

    def test_text(self):
        r = run("version")
        self.assertEqual(r.returncode, OK, r.stderr)
        first = r.stdout.splitlines()[0]
        self.assertRegex(first, r"^nodegate \d+\.\d+\.\d+")
        for label in ["commit:", "source date:", "compiler:", "platform:", "static:"]:
            self.assertIn(label, r.stdout)
        self.assertEqual(run("--version").stdout, r.stdout)

    def test_json_and_yaml_hold_the_same_fields(self):
        j = json.loads(run("version", "-o", "json").stdout)
        self.assertEqual(list(j), self.FIELDS)
        self.assertRegex(j["version"], r"^\d+\.\d+\.\d+$")
        self.assertEqual(j["os"], "linux")
        self.assertIsInstance(j["static"], bool)
        self.assertEqual(json.loads(run("--version", "-o", "json").stdout), j)
        self.assertEqual(yaml.safe_load(run("version", "-o", "yaml").stdout), j)

    def test_version_is_the_projects(self):
        with open(os.path.join(SRC, "CMakeLists.txt")) as f:
            want = re.search(r"project\(nodegate VERSION (\S+)", f.read()).group(1)
        self.assertEqual(json.loads(run("version", "-o", "json").stdout)["version"], want)


class Completion(unittest.TestCase):
    def bash_complete(self, words):
        """What the bash completion offers for the command line `words` (the last is the word
        being completed)."""
        script = run("completion", "bash").stdout
        words_q = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
        program = (script + f"\nCOMP_WORDS=({words_q}); COMP_CWORD={len(words) - 1}\n"
                   "_nodegate; printf '%s\\n' \"${COMPREPLY[@]}\"\n")
        r = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return [w for w in r.stdout.splitlines() if w]

    def test_bash_completes_commands_subcommands_flags_and_values(self):
        self.assertEqual(sorted(self.bash_complete(["nodegate", "co"])), ["completion", "conf"])
        self.assertEqual(self.bash_complete(["nodegate", "conf", ""]), ["validate"])
        self.assertIn("--no-exec", self.bash_complete(["nodegate", "conf", "validate", "--"]))
        self.assertEqual(sorted(self.bash_complete(["nodegate", "ipam", "-o", ""])),
                         ["json", "table", "text", "yaml"])
        self.assertEqual(sorted(self.bash_complete(["nodegate", "completion", ""])),
                         ["bash", "zsh"])
        self.assertNotIn("man", self.bash_complete(["nodegate", "m"]))

    def test_bash_completes_every_flag_help_shows(self):
        for c in listed_commands():
            help_text = run(c, "--help").stdout
            offered = set(self.bash_complete(["nodegate", c, "-"]))
            own = flags_of(help_text.split("Subcommands:")[0])
            self.assertTrue(own, c)
            self.assertLessEqual(own, offered, c)

    def test_zsh_accepts_the_script(self):
        zsh = shutil.which("zsh")
        if zsh is None:
            self.skipTest("zsh is not installed (scripts/install-deps.sh installs it)")
        r = run("completion", "zsh")
        self.assertEqual(r.returncode, OK)
        self.assertTrue(r.stdout.startswith("#compdef nodegate kubectl-nodegate\n"))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "_nodegate")
            with open(path, "w") as f:
                f.write(r.stdout)
            check = subprocess.run([zsh, "-n", path], capture_output=True, text=True)
            self.assertEqual(check.returncode, 0, check.stderr)
            # Loaded by compinit from fpath, as a user's shell does.
            load = subprocess.run(
                [zsh, "-f", "-c", f"fpath=({d} $fpath); autoload -Uz compinit; "
                 "compinit -u -d " + os.path.join(d, "dump") + "; echo $_comps[nodegate]"],
                capture_output=True, text=True, timeout=60)
            self.assertEqual(load.stdout.strip(), "_nodegate", load.stderr)

    def test_the_build_wrote_them(self):
        for path, shell in [("bash-completion/completions/nodegate", "bash"),
                            ("zsh/site-functions/_nodegate", "zsh")]:
            with open(os.path.join(BIN, "..", "share", path)) as f:
                self.assertEqual(f.read(), run("completion", shell).stdout, path)


class ManPage(unittest.TestCase):
    def setUp(self):
        with open(MAN) as f:
            self.page = f.read()

    def test_lists_every_flag_help_shows(self):
        for c in listed_commands():
            help_text = run(c, "--help").stdout
            paths = [[c]] + [[c, s] for s in subcommands(help_text)]
            for words in paths:
                text = run(*words, "--help").stdout
                section = re.search(r"^\.SS nodegate " + r" ".join(words) + r"\n(.*?)(?=^\.S[SH] )",
                                    self.page, re.M | re.S)
                self.assertIsNotNone(section, f"no .SS nodegate {' '.join(words)}")
                for flag in flags_of(text.split("Subcommands:")[0]):
                    self.assertIn(r"\fB" + flag.replace("-", "\\-") + r"\fR", section.group(1),
                                  f"{' '.join(words)}: {flag}")

    def test_is_what_nodegate_man_writes_and_renders_cleanly(self):
        r = run("man", "--template", os.path.join(SRC, "deploy", "debian", "nodegate.1.in"))
        self.assertEqual(r.returncode, OK, r.stderr)
        self.assertEqual(r.stdout, self.page)
        self.assertNotIn("@OPTIONS@", self.page)
        for c in listed_commands():
            self.assertRegex(self.page, r"(?m)^\.B nodegate " + c + r"\b", c)
        if shutil.which("man") is None:
            self.skipTest("man is not installed (man-db)")
        with tempfile.TemporaryDirectory() as d:
            filled = os.path.join(d, "nodegate.1")
            with open(filled, "w") as f:
                f.write(self.page.replace("@VERSION@", "0").replace("@DATE@", "2026-01-01"))
            m = subprocess.run(["man", "--warnings", "-l", filled], capture_output=True,
                               text=True, env=dict(os.environ, MANWIDTH="80"))
            self.assertEqual(m.returncode, 0, m.stderr)
            self.assertEqual(m.stderr, "")

    def test_documents_every_exit_status(self):
        exit_section = self.page.split(".SH EXIT STATUS", 1)[1].split(".SH ", 1)[0]
        for status in ["0", "1", "2", "3"]:
            self.assertRegex(exit_section, r"\.B " + status + r"\b")


class Reports(unittest.TestCase):
    """-o json for every command that prints a report, parsed, with its exit status; -o yaml
    reads back as the same value."""

    def both(self, *args, want):
        j = run(*args, "-o", "json")
        self.assertEqual(j.returncode, want, f"{args}: {j.stderr}")
        value = json.loads(j.stdout)
        y = run(*args, "-o", "yaml")
        self.assertEqual(y.returncode, want, f"{args}: {y.stderr}")
        self.assertEqual(yaml.safe_load(y.stdout), value, args)
        return value

    def test_admit(self):
        node = os.path.join(ADMIT_DATA, "node.yaml")
        ok = self.both("admit", "--node", node, os.path.join(ADMIT_DATA, "candidates", "small.yaml"),
                       want=OK)
        self.assertIs(ok["admitted"], True)
        self.assertIn("pod", ok["pods"][0])
        no = self.both("admit", "--node", node, "--manifests", os.path.join(SRC, "conf", "manifests"),
                       os.path.join(SRC, "conf", "candidates", "coredns-hostnetwork.yaml"), want=NO)
        self.assertIs(no["admitted"], False)
        self.assertEqual(run("admit", "--node", node, "/nonexistent.yaml").returncode, USAGE)

    def test_guard(self):
        node = os.path.join(ADMIT_DATA, "node.yaml")
        with tempfile.TemporaryDirectory() as d:
            got = self.both("guard", "--node", node, "--manifests", d,
                            os.path.join(ADMIT_DATA, "candidates", "small.yaml"), want=OK)
            self.assertIs(got["installed"], True)

    def test_conf_validate(self):
        ok = self.both("conf", "validate", "--no-exec", os.path.join(SRC, "conf", "examples"),
                       want=OK)
        self.assertIs(ok["valid"], True)
        no = self.both("conf", "validate", "--no-exec", os.path.join(SRC, "conf", "invalid"),
                       want=NO)
        self.assertIs(no["valid"], False)
        self.assertTrue(no["findings"])
        self.assertEqual(run("conf", "validate", "/nonexistent").returncode, USAGE)

    def test_cni(self):
        # No such network: unusable input, and the CNI error object on stdout.
        err = self.both("cni", "status", "no-such-network", "--conf-dir",
                        os.path.join(SRC, "conf", "examples"), want=USAGE)
        self.assertEqual(sorted(err)[:2], ["code", "msg"])
        # --json is the older spelling of -o json.
        r = run("cni", "status", "no-such-network", "--conf-dir",
                os.path.join(SRC, "conf", "examples"), "--json")
        self.assertEqual(json.loads(r.stdout), err)
        # STATUS of a 1.1.0 list whose plugin is nowhere on the plugin path: the answer no.
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "10-x.conflist"), "w") as f:
                json.dump({"cniVersion": "1.1.0", "name": "x",
                           "plugins": [{"type": "no-such-plugin"}]}, f)
            got = self.both("cni", "status", "x", "--conf-dir", d, "--cni-path", d, want=NO)
            self.assertIn("code", got)
            self.assertIn("msg", got)

    def test_ipam_unreachable_etcd_is_three(self):
        port = unused_port()
        with tempfile.TemporaryDirectory() as d:
            conf = {"cniVersion": "1.0.0", "name": "pool", "plugins": [{
                "type": "bridge", "ipam": {
                    "type": "cluster-ipam", "etcd": {"endpoints": [f"http://127.0.0.1:{port}"],
                                                     "dialTimeout": "1s", "requestTimeout": "2s"},
                    "ranges": [[{"subnet": "10.88.0.0/16"}]]}}]}
            path = os.path.join(d, "pool.conflist")
            with open(path, "w") as f:
                json.dump(conf, f)
            r = run("ipam", "--conf", path, "-o", "json", "show")
            self.assertEqual(r.returncode, UNAVAILABLE, r.stderr)
            self.assertEqual(r.stdout, "")
            self.assertEqual(run("ipam", "--conf", "/nonexistent", "show").returncode, USAGE)

    def test_explain_unreachable_api_server_is_three(self):
        port = unused_port()
        with tempfile.TemporaryDirectory() as d:
            kubeconfig = os.path.join(d, "config")
            with open(kubeconfig, "w") as f:
                yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                                "clusters": [{"name": "k", "cluster": {
                                    "server": f"https://127.0.0.1:{port}",
                                    "insecure-skip-tls-verify": True}}],
                                "contexts": [{"name": "c", "context": {"cluster": "k",
                                                                       "user": "u"}}],
                                "users": [{"name": "u", "user": {"token": "t"}}]}, f)
            r = run("explain", "--kubeconfig", kubeconfig, "--request-timeout", "2", "-o", "json",
                    "--pending")
            self.assertEqual(r.returncode, UNAVAILABLE, r.stderr)

    def test_ports(self):
        if os.geteuid() != 0:
            self.skipTest("nodegate ports reads the kernel's mappings, which needs root")
        with tempfile.TemporaryDirectory() as d:
            got = self.both("ports", "--manifests", os.path.join(SRC, "conf", "manifests"),
                            "--cni-cache", d, want=OK)
            self.assertIn("ports", got)
            self.assertEqual(run("ports", "--pods", "/nonexistent").returncode, USAGE)


class Layers(unittest.TestCase):
    def test_no_library_includes_a_command_layer(self):
        """Imports run down: only cmd/ itself (and tests) include a file of cmd/."""
        files = subprocess.run(["git", "-C", SRC, "ls-files", "*.cc", "*.h"], capture_output=True,
                               text=True)
        listed = files.stdout.split()
        if files.returncode != 0:  # a copy without its git history: every source file but builds'
            listed = [os.path.relpath(os.path.join(d, f), SRC)
                      for d, dirs, names in os.walk(SRC)
                      for f in names if f.endswith((".cc", ".h"))
                      if not os.path.relpath(d, SRC).startswith(("build", "."))]
        self.assertTrue(any(f.startswith("cmd/nodegate/") for f in listed))
        up = []
        for f in listed:
            if f.startswith(("cmd/", "tests/")):
                continue
            with open(os.path.join(SRC, f), errors="replace") as text:
                up += [f"{f}: {line.strip()}" for line in text if line.startswith('#include "cmd/')]
        self.assertEqual(up, [])


class Webhook(unittest.TestCase):
    def test_unusable_configuration_is_two(self):
        r = run("webhook", "--tls-cert", "/nonexistent", "--tls-key", "/nonexistent",
                "--kubeconfig", "/nonexistent")
        self.assertEqual(r.returncode, USAGE, r.stderr)


if __name__ == "__main__":
    unittest.main()
