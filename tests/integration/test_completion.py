"""`redlock completion bash|zsh`: the scripts it prints are the files in completions/, the bash one
completes commands, options, durations and signals in a plain `bash -c`, both know every long
option of the front end, and any other shell is a usage error."""

import importlib.util
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import ROOT, main, redlock

COMPLETIONS = os.path.join(ROOT, "completions")


def load_documented_options():
    spec = importlib.util.spec_from_file_location("documented_options",
                                                  os.path.join(ROOT, "tests", "man", "documented_options.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Loads the printed script into a fresh bash and asks its function for the completions of the
# words given, the last one being completed.
COMPLETE = r'''
source "$1"
shift
COMP_WORDS=("$@")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_LINE=${LINE:-$*}
COMP_POINT=${#COMP_LINE}
COMPREPLY=()
complete -p redlock >/dev/null || exit 3
_redlock redlock "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
'''


class Bash(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="redlock-completion-")
        r = redlock(["completion", "bash"])
        if r.code != 0:
            raise RuntimeError("redlock completion bash: %r" % r)
        cls.script = os.path.join(cls.workdir, "redlock.bash")
        with open(cls.script, "wb") as f:
            f.write(r.out)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def complete(self, *words, line=None):
        """LINE: the command line as typed, when WORDS are not simply its words joined by spaces."""
        args = ["bash", "--norc", "--noprofile", "-c", COMPLETE, "bash", self.script, "redlock"] + list(words)
        env = dict(os.environ, LINE=line) if line else None
        p = subprocess.run(args, capture_output=True, text=True, timeout=30, cwd=self.workdir, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        return [w for w in p.stdout.split("\n") if w]

    def test_printed_script_is_the_file(self):
        with open(os.path.join(COMPLETIONS, "redlock.bash"), "rb") as f:
            self.assertEqual(redlock(["completion", "bash"]).out, f.read())

    def test_json_is_refused_not_answered_with_a_script(self):
        r = redlock(["--json", "completion", "bash"])
        self.assertEqual(r.code, 64, r)
        self.assertEqual(r.json()["error"]["message"], "completion prints a shell script, not JSON: leave out --json")

    def test_subcommands(self):
        self.assertEqual(self.complete("ac"), ["acquire"])
        self.assertEqual(sorted(self.complete("")),
                         sorted(["acquire", "extend", "release", "status", "run", "elect", "doctor", "list",
                                 "watch", "completion"]))
        # After global options and their values.
        self.assertEqual(self.complete("-S", "a:1,b:2", "--timeout", "1s", "st"), ["status"])

    def test_options_of_each_command(self):
        self.assertEqual(self.complete("run", "--si"), ["--signal"])
        self.assertEqual(self.complete("release", "job", "--f"), ["--force"])
        self.assertIn("--nonblock", self.complete("acquire", "--"))
        self.assertNotIn("--signal", self.complete("acquire", "--"))
        self.assertIn("--json", self.complete("status", "job", "--"))
        self.assertEqual(self.complete("doctor", "--tt"), ["--ttl"])
        self.assertEqual(self.complete("elect", "job", "--ob"), ["--observe"])
        self.assertIn("--signal", self.complete("elect", "job", "--"))
        self.assertNotIn("--observe", self.complete("run", "job", "--"))
        self.assertEqual(self.complete("watch", "job", "--un"), ["--until"])
        self.assertEqual(self.complete("li"), ["list"])

    def test_values(self):
        self.assertIn("30s", self.complete("acquire", "--ttl", ""))
        self.assertIn("250ms", self.complete("--timeout", ""))
        self.assertEqual(self.complete("run", "--ttl", "=", "5"), ["500ms", "5s", "5m"])
        signals = self.complete("run", "--signal", "")
        for sig in ("TERM", "INT", "HUP", "KILL", "USR1"):
            self.assertIn(sig, signals)
        self.assertEqual(self.complete("run", "--signal", "ki"), ["KILL"])
        self.assertEqual(self.complete("completion", ""), ["bash", "zsh"])
        self.assertEqual(self.complete("watch", "job", "--until", ""), ["released", "free"])
        open(os.path.join(self.workdir, "token-out"), "w").close()
        self.assertEqual(self.complete("acquire", "job", "--token-file", "token-"), ["token-out"])

    def test_words_split_at_colons(self):
        # Bash splits "redis://h:1" and "app:" at each ":" (COMP_WORDBREAKS), as it hands them over.
        url = ["redis", ":", "//127.0.0.1", ":", "7800"]
        self.assertEqual(self.complete("-S", *url, "st", line="redlock -S redis://127.0.0.1:7800 st"), ["status"])
        self.assertIn("sleep", self.complete("-S", *url, "run", "job", "--", "slee",
                                             line="redlock -S redis://127.0.0.1:7800 run job -- slee"))
        self.assertEqual(self.complete("--prefix", "app", ":", "rel", line="redlock --prefix app: rel"), ["release"])
        self.assertEqual(self.complete("-S", "unix", ":", "//tmp/r.sock", "run", "job", "--si",
                                       line="redlock -S unix://tmp/r.sock run job --si"), ["--signal"])
        # A file name with a colon: only what follows the last ":" is replaced.
        open(os.path.join(self.workdir, "a:token"), "w").close()
        self.assertEqual(self.complete("acquire", "job", "--token-file", "a", ":", "tok",
                                       line="redlock acquire job --token-file a:tok"), ["token"])

    def test_the_command_after_double_dash(self):
        self.assertIn("sleep", self.complete("run", "job", "--", "slee"))
        self.assertNotIn("--signal", self.complete("run", "job", "--", "sleep", "--si"))
        self.assertIn("sleep", self.complete("elect", "job", "--", "slee"))


# Types each line into an interactive zsh (in a pseudo-terminal) with the completion loaded from
# directory $1, followed by Tab and Return; `redlock` is a function there that prints its arguments.
# The echo of what is typed must never match what is waited for: hence the split words.
ZSH_DRIVER = r'''
zmodload zsh/zpty || exit 3
local dir=$1 out
shift
zpty z 'TERM=dumb zsh -f -i'
zpty -w z "PS1='> '; fpath=(${(q)dir} \$fpath); autoload -U compinit; compinit -u -D"
zpty -w z "redlock() { print -r -- \"[got\"\"] \$*\" }; print read''y"
zpty -r -m z out '*ready*' || exit 4
for line in "$@"; do
  zpty -w -n z "$line"$'\t\n'
  zpty -r -m z out '*\[got\] *'$'\n''*' || exit 5
  out=${out##*\[got\] }
  print -r -- "${out%%$'\r'*}"
done
zpty -d z
'''


@unittest.skipUnless(shutil.which("zsh"), "zsh is not installed")
class Zsh(unittest.TestCase):
    def test_completes_in_a_real_zsh(self):
        cases = [
            ("redlock ac", "acquire"),
            ("redlock --js", "--json"),
            ("redlock run --si", "run --signal"),
            ("redlock run job --signal ki", "run job --signal KILL"),
            ("redlock acquire job --ttl 30", "acquire job --ttl 30s"),
            ("redlock doctor --tt", "doctor --ttl"),
            ("redlock release job --f", "release job --force"),
            ("redlock completion z", "completion zsh"),
            ("redlock run job -- slee", "run job -- sleep"),
            ("redlock elect job --obs", "elect job --observe"),
            ("redlock elect job -- slee", "elect job -- sleep"),
        ]
        with tempfile.TemporaryDirectory(prefix="redlock-zsh-") as d:
            with open(os.path.join(d, "_redlock"), "wb") as f:
                f.write(redlock(["completion", "zsh"]).out)
            p = subprocess.run(["zsh", "-f", "-c", ZSH_DRIVER, "zsh", d] + [c[0] for c in cases],
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p)
        self.assertEqual(p.stdout.splitlines(), [c[1] for c in cases])


class BothShells(unittest.TestCase):
    def test_every_long_option_is_known_to_both_scripts(self):
        options = load_documented_options().cli_options()
        self.assertGreater(len(options), 30)
        for name in ("redlock.bash", "_redlock"):
            with open(os.path.join(COMPLETIONS, name)) as f:
                text = f.read()
            missing = [o for o in options if o not in text]
            self.assertEqual(missing, [], name)

    def test_printed_zsh_script_is_the_file(self):
        with open(os.path.join(COMPLETIONS, "_redlock"), "rb") as f:
            self.assertEqual(redlock(["completion", "zsh"]).out, f.read())

    @unittest.skipUnless(shutil.which("zsh"), "zsh is not installed")
    def test_zsh_script_parses(self):
        p = subprocess.run(["zsh", "-n", os.path.join(COMPLETIONS, "_redlock")], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual((p.returncode, p.stderr), (0, ""))

    def test_other_shells_are_a_usage_error(self):
        for args in (["completion", "fish"], ["completion"], ["completion", "bash", "zsh"]):
            r = redlock(args)
            self.assertEqual(r.code, 64, (args, r))
            self.assertTrue(r.stderr.startswith("redlock: error: "), r)
            self.assertEqual(r.out, b"")
        # The shells there are, in words that do not read as if $SHELL were unset.
        r = redlock(["completion", "fish"], env={"SHELL": "/usr/bin/fish"})
        self.assertEqual(r.stderr,
                         "redlock: error: no completion script for 'fish': there are scripts for bash and zsh\n")


if __name__ == "__main__":
    main()
