"""acquire, extend, release and status against five real servers: every success and failure path,
the exit codes, the JSON, the options and their REDLOCK_* variables."""

import contextlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import unittest

from harness import ClusterTest, clean_env, free_port, main, redlock, redlock_binary, settle, spawn, wait_for

TOKEN = re.compile(rb"^[0-9a-f]{32}\n$")


class Acquire(ClusterTest):
    def test_prints_a_token_and_holds_the_key_everywhere(self):
        r = self.rl("acquire", "job", "--ttl", "20s")
        self.assertEqual(r.code, 0, r)
        self.assertRegex(r.out, TOKEN)
        token = r.out.strip()
        for s in self.cluster.servers:
            self.assertEqual(s.get("job"), token)
            self.assertTrue(19000 < s.pttl("job") <= 20000)
            owner = s.get("{job}:redlock:owner")
            # Since when, the TTL it was taken with (which extend keeps), and who.
            self.assertRegex(owner, rb"^\d{13}/20000 \S+@\S+:\d+")
        # A new counter, the same on a quorum: the servers' clock in microseconds, to the second.
        fences = [s.get("{job}:redlock:fence") for s in self.cluster.servers]
        self.assertGreaterEqual(max(fences.count(f) for f in fences), 3, fences)
        self.assertTrue(all(int(f) % 10**6 == 0 for f in fences if f), fences)
        self.assertEqual(r.stderr, "")

    def test_busy_nonblocking_is_75_or_the_conflict_exit_code(self):
        self.assertEqual(self.rl("acquire", "job").code, 0)
        busy = self.rl("acquire", "-n", "job")
        self.assertEqual(busy.code, 75, busy)
        self.assertEqual(busy.out, b"")
        self.assertIn("busy", busy.stderr)
        self.assertEqual(self.rl("acquire", "-n", "-E", "3", "job").code, 3)
        self.assertEqual(self.rl("acquire", "--nonblock", "--conflict-exit-code", "0", "job").code, 0)
        # Whole numbers in decimal, leading zeros and all; never octal or hexadecimal.
        self.assertEqual(self.rl("acquire", "-n", "-E", "010", "job").code, 10)
        self.assertEqual(self.rl("acquire", "-n", "job", env={"REDLOCK_CONFLICT_EXIT_CODE": "012"}).code, 12)
        hexadecimal = self.rl("acquire", "-n", "-E", "0x10", "job")
        self.assertEqual((hexadecimal.code, hexadecimal.stderr), (64, "redlock: error: --conflict-exit-code: '0x10' "
                                                                      "is not a decimal number (see redlock acquire --help)\n"))
        for written in ("+010", " 012", "+0x10"):
            r = self.rl("acquire", "-n", "job", env={"REDLOCK_CONFLICT_EXIT_CODE": written})
            self.assertEqual(r.code, 64, (written, r))
            self.assertIn("is not a decimal number", r.stderr)

    def test_wait_gives_up_at_its_deadline(self):
        self.assertEqual(self.rl("acquire", "job").code, 0)
        r = self.rl("--json", "acquire", "-w", "0.4", "job")
        self.assertEqual(r.code, 75, r)
        self.assertGreaterEqual(r.elapsed, 0.4)
        self.assertLess(r.elapsed, 1.5)
        j = r.json()
        self.assertFalse(j["acquired"])
        self.assertEqual(j["reason"], "timeout")

    def test_a_wait_that_ran_out_is_worded_alike_by_acquire_and_run(self):
        self.assertEqual(self.rl("acquire", "job").code, 0)
        for args in (["acquire", "-w", "0.2", "job"], ["run", "-w", "0.2", "job", "true"]):
            r = self.rl(*args)
            self.assertEqual(r.code, 75, r)
            self.assertRegex(r.stderr, r"^redlock: job: still busy when the wait ran out: ", r)

    def test_version_in_json(self):
        r = self.rl("--json", "--version")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.json()["version"], 1)
        self.assertRegex(r.json()["redlock"], r"^\d+\.\d+\.\d+$")
        self.assertEqual(self.rl("--version").stdout, "redlock %s\n" % r.json()["redlock"])

    def test_wait_takes_the_lock_when_it_expires(self):
        self.assertEqual(self.rl("acquire", "--ttl", "600ms", "job").code, 0)
        r = self.rl("--json", "acquire", "-w", "5s", "job")
        self.assertEqual(r.code, 0, r)
        self.assertGreater(r.elapsed, 0.4)
        self.assertLess(r.elapsed, 2.0)

    def test_json_has_every_field_of_the_contract(self):
        r = self.rl("acquire", "job", "--json", "--ttl", "30s")
        self.assertEqual(r.code, 0, r)
        j = r.json()
        self.assertEqual(list(j)[:4], ["version", "command", "name", "key"])
        self.assertEqual(j["version"], 1)
        self.assertEqual(j["command"], "acquire")
        self.assertEqual(j["name"], "job")
        self.assertEqual(j["key"], "job")
        self.assertIs(j["acquired"], True)
        self.assertRegex(j["token"], r"^[0-9a-f]{32}$")
        self.assertIsInstance(j["fence"], int)
        self.assertEqual(j["ttl_ms"], 30000)
        self.assertTrue(29000 < j["validity_ms"] < 30000)
        self.assertGreaterEqual(j["elapsed_ms"], 0)
        self.assertEqual(j["attempts"], 1)
        self.assertEqual(j["quorum"]["needed"], 3)
        self.assertEqual(j["quorum"]["total"], 5)
        self.assertGreaterEqual(j["quorum"]["ok"], 3)
        self.assertEqual(len(j["servers"]), 5)
        for s in j["servers"]:
            self.assertEqual(set(s), {"server", "member", "resolved", "ok", "result", "latency_ms", "error", "role"})
            self.assertRegex(s["server"], r"^redis://127\.0\.0\.1:\d+$")
            self.assertIn(s["role"], ("master", None))  # None: not heard from when the outcome was known
        self.assertTrue(any(s["result"] == "locked" and s["ok"] for s in j["servers"]))
        busy = self.rl("acquire", "job", "-n", "--json").json()
        self.assertIs(busy["acquired"], False)
        self.assertEqual(busy["reason"], "busy")
        self.assertIsNone(busy["token"])

    def test_a_signal_ends_the_wait_with_128_plus_n(self):
        token = self.rl("acquire", "job").stdout.strip()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with self.subTest(sig=sig.name):
                p = spawn(["--json", "acquire", "job"], servers=self.cluster, stdout=subprocess.PIPE)
                time.sleep(0.3)
                p.send_signal(sig)
                out, _ = p.communicate(timeout=10)
                self.assertEqual(p.returncode, 128 + sig)
                j = json.loads(out)
                self.assertEqual((j["acquired"], j["reason"], j["interrupted_by"]), (False, "interrupted", sig.name), j)
        self.assertEqual(self.cluster.values("job"), [token.encode()] * 5)

    def test_a_signal_the_caller_ignores_does_not_end_the_wait(self):
        # nohup's SIGHUP: the wait goes on until the lock is free.
        token = self.rl("acquire", "job", "--ttl", "5s").stdout.strip()
        p = spawn(["acquire", "-w", "20s", "job"], servers=self.cluster, stdout=subprocess.PIPE,
                  preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
        time.sleep(0.3)
        p.send_signal(signal.SIGHUP)
        time.sleep(0.3)
        self.assertIsNone(p.poll())
        self.assertEqual(self.rl("release", "job", "--token", token).code, 0)
        out, _ = p.communicate(timeout=20)
        self.assertEqual(p.returncode, 0)
        self.assertEqual(self.cluster.values("job"), [out.strip()] * 5)

    def test_quorum_ok_counts_every_server_that_took_it(self):
        # The count agrees with the servers' results, including answers heard after the decision
        # (a server not heard from at all, on a busy machine, may hold it too: it is "not_waited_for").
        for i in range(5):
            j = self.rl("acquire", "-n", "job%d" % i, "--json").json()
            locked = sum(1 for s in j["servers"] if s["result"] == "locked")
            self.assertEqual(j["quorum"]["ok"], locked, j)
            heard = [s["result"] != "not_waited_for" for s in j["servers"]]
            values = self.cluster.values("job%d" % i)
            self.assertEqual(locked, sum(v is not None for v, h in zip(values, heard) if h), j)

    def test_token_reacquire_resets_the_ttl(self):
        self.assertEqual(self.rl("acquire", "--token", "mine", "--ttl", "2s", "job").code, 0)
        r = self.rl("acquire", "--token", "mine", "--ttl", "20s", "-n", "job")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.out, b"mine\n")
        self.assertTrue(all(s.pttl("job") > 19000 for s in self.cluster.servers))
        other = self.rl("acquire", "--token", "theirs", "-n", "job")
        self.assertEqual(other.code, 75)

    def test_a_failed_reacquire_gives_the_lock_up_everywhere(self):
        # Held with T everywhere; three servers freeze; re-acquiring with T gets no quorum (69).
        # The caller is told it holds nothing, so nothing holds the lock for it: the release
        # follows the acquire on every server, the frozen ones included.
        self.assertEqual(self.rl("acquire", "--token", "T", "--ttl", "60s", "job").code, 0)
        frozen = self.cluster.servers[2:]
        for s in frozen:
            s.freeze()
        try:
            r = self.rl("--timeout", "200ms", "acquire", "--token", "T", "-n", "job")
            self.assertEqual(r.code, 69, r)
        finally:
            for s in frozen:
                s.thaw()
        wait_for(lambda: self.cluster.values("job") == [None] * 5, timeout=5, what="the release everywhere")

    def test_verbose_says_the_outcome_and_twice_verbose_each_servers_answer(self):
        urls = [s.url for s in self.cluster.servers]
        r = self.rl("-vv", "acquire", "job")
        self.assertEqual(r.code, 0, r)
        token = r.out.decode().strip()
        lines = r.stderr.splitlines()
        self.assertEqual(len(lines), 6, r)
        for url, line in zip(urls, lines):
            # A server still out when the quorum decided was not waited for (rare, on a busy machine).
            self.assertRegex(line, r"^redlock: %s: (locked \(\d+\.\d\dms\)|not_waited_for \(the outcome was known "
                             r"before its answer came\))$" % re.escape(url))
        # The summary counts the servers that said yes by the time the outcome was decided:
        # as many as the lines above say locked (answers that arrive together all count).
        locked = sum(" locked (" in line for line in lines[:5])
        self.assertGreaterEqual(locked, 3, r)
        # The servers not heard from are counted as such, not among those that failed.
        unheard = "" if locked == 5 else " (%d not waited for)" % (5 - locked)
        self.assertRegex(lines[5], r"^redlock: acquired job on %d of 5 servers%s, fence [1-9]\d*$"
                         % (locked, re.escape(unheard)))
        r = self.rl("-v", "extend", "job", "--token", token)
        # (Put back where the acquire's vote, not waited for, never landed: rarer still.)
        self.assertRegex(r.stderr, r"^redlock: extended job on ([345]) of 5 servers( \(\d not waited for\))?"
                         r"(, put back on 1 of 5 servers)?, valid for \S+\n$")
        r = self.rl("-vv", "status", "job")
        self.assertEqual([line.split(": ")[2].split(" ")[0] for line in r.stderr.splitlines()], ["held"] * 5, r)
        r = self.rl("-v", "release", "job", "--token", token)
        self.assertEqual(r.stderr, "redlock: released job: deleted on 5 of 5 servers\n")
        # -q wins over -v: nothing on stderr but errors.
        r = self.rl("-q", "-vv", "acquire", "job")
        self.assertEqual((r.code, r.stderr), (0, ""), r)

    def test_token_file_is_private_from_the_first_byte(self):
        d = self.scratch_dir()
        path = os.path.join(d, "token")
        old = os.umask(0)
        try:
            r = self.rl("acquire", "--token-file", path, "job")
        finally:
            os.umask(old)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        with open(path, "rb") as f:
            self.assertEqual(f.read(), r.out)
        self.assertEqual(os.listdir(d), ["token"])

    def test_a_token_file_that_cannot_be_written_is_78_before_anything_is_taken(self):
        d = self.scratch_dir()
        for path in (os.path.join(d, "no", "token"), d):
            with self.subTest(path=path):
                r = self.rl("acquire", "--token-file", path, "job")
                self.assertEqual(r.code, 78, r)
                self.assertEqual(r.out, b"")
                self.assertEqual(len(r.stderr.splitlines()), 1, r)
                self.assertIn("--token-file", r.stderr)
                # Not taken and given back: never taken (the fencing counter never moved).
                self.assertEqual(self.cluster.values("job"), [None] * 5)
                self.assertEqual(self.cluster.values("{job}:redlock:fence"), [None] * 5)
        self.assertEqual(os.listdir(d), [])

    def test_flags_beat_environment_beats_defaults(self):
        r = self.rl("acquire", "job", env={"REDLOCK_TTL": "5s"})
        self.assertEqual(r.code, 0, r)
        self.assertTrue(4000 < self.cluster.servers[0].pttl("job") <= 5000)
        r = self.rl("acquire", "job2", "--ttl", "9s", env={"REDLOCK_TTL": "5s"})
        self.assertTrue(8000 < self.cluster.servers[0].pttl("job2") <= 9000)
        # REDLOCK_SERVERS separated by whitespace; --servers given twice.
        spaced = " \n".join(s.address for s in self.cluster.servers)
        r = redlock(["acquire", "job3"], servers=spaced)
        self.assertEqual(r.code, 0, r)
        args = []
        for s in self.cluster.servers:
            args += ["-S", s.url]
        r = redlock(args + ["--json", "acquire", "job4"])
        self.assertEqual(r.json()["quorum"]["total"], 5)

    def test_an_option_given_twice_is_named_and_nothing_is_taken(self):
        # Which value was meant cannot be told: `--token "$UNSET" --token x` must not fall back.
        cases = [(["acquire", "--ttl", "5s", "job", "--ttl", "9s"], "--ttl is given 2 times"),
                 (["--timeout", "1ms", "--timeout=2s", "run", "job", "--", "true"], "--timeout is given 2 times"),
                 (["run", "--ttl", "1s", "-n", "--ttl", "9s", "job", "--", "true"], "--ttl is given 2 times"),
                 (["acquire", "--token", "", "--token", "x", "job"], "--token is given 2 times"),
                 (["acquire", "-w", "1s", "-w2s", "--wait=3s", "job"], "--wait is given 3 times")]
        for args, said in cases:
            r = self.rl(*args)
            self.assertEqual(r.code, 64, (args, r))
            self.assertIn("redlock: error: " + said + ": give it once", r.stderr, args)
            self.assertNotIn("At Most", r.stderr)
        self.assertEqual(self.cluster.values("job"), [None] * 5)
        # A flag given twice is the flag; -S adds a server each time.
        self.assertEqual(self.rl("acquire", "-n", "-n", "job").code, 0)

    def test_a_flag_beats_the_environment_of_an_option_it_excludes(self):
        self.rl("acquire", "job")
        # -n on the command line, REDLOCK_WAIT in the environment: one attempt, busy at once.
        for flag in ("-n", "--nonblock"):
            r = self.rl("acquire", flag, "job", env={"REDLOCK_WAIT": "5s"})
            self.assertEqual(r.code, 75, r)
            self.assertLess(r.elapsed, 2)
        # -w on the command line, REDLOCK_NONBLOCK in the environment: waits, up to its deadline.
        for flag in (["-w", "300ms"], ["--wait=300ms"], ["-w300ms"]):
            r = self.rl("acquire", *flag, "job", env={"REDLOCK_NONBLOCK": "1"})
            self.assertEqual(r.code, 75, r)
            self.assertGreater(r.elapsed, 0.25, (flag, r))
        # Both on the command line, or both in the environment: still a usage error.
        self.assertEqual(self.rl("acquire", "-n", "-w", "1s", "job").code, 64)
        self.assertEqual(self.rl("acquire", "job", env={"REDLOCK_NONBLOCK": "1", "REDLOCK_WAIT": "1s"}).code, 64)
        # release --token beats REDLOCK_FORCE: a token that is not the holder's frees nothing.
        r = self.rl("release", "job", "--token", "not-mine", env={"REDLOCK_FORCE": "1"})
        self.assertEqual(r.code, 1, r)
        self.assertNotIn(None, self.cluster.values("job"))
        self.assertEqual(self.rl("release", "job", env={"REDLOCK_FORCE": "1"}).code, 0)
        self.assertEqual(self.cluster.values("job"), [None] * 5)

    def test_prefix_forms_the_key(self):
        r = self.rl("--prefix", "locks:", "acquire", "job")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.cluster.servers[0].get("locks:job"), r.out.strip())
        self.assertIsNone(self.cluster.servers[0].get("job"))
        self.assertEqual(self.rl("release", "job", "--prefix", "locks:", "--token", r.stdout.strip()).code, 0)

    def test_global_options_also_after_the_subcommand(self):
        r = self.rl("acquire", "job", "--json", "-q")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.json()["command"], "acquire")


class EveryOptionFromTheEnvironment(unittest.TestCase):
    """The contract: every long option can also be set as REDLOCK_<OPTION> (upper case, - as _)."""

    def options_and_help(self, *command):
        r = redlock(list(command) + ["--help"])
        self.assertEqual(r.code, 0, r)
        entries, current = [], None
        for line in r.stdout.splitlines():
            if re.match(r"^  -", line):
                current = [line]
                entries.append(current)
            elif current is not None and line.startswith("    "):
                current.append(line)
            else:
                current = None
        for entry in entries:
            text = " ".join(entry)
            for name in re.findall(r"(?:^|[ ,])(--[a-z][a-z-]*)", entry[0]):
                yield name, text

    def test_each_long_option_names_its_variable(self):
        seen = 0
        for command in ([], ["acquire"], ["extend"], ["release"], ["status"], ["run"], ["elect"], ["doctor"]):
            for name, text in self.options_and_help(*command):
                if name in ("--help", "--version"):
                    continue
                variable = "REDLOCK_" + name[2:].upper().replace("-", "_")
                with self.subTest(command=command, option=name):
                    self.assertIn(variable, text)
                    seen += 1
        self.assertGreater(seen, 40)

    def test_the_variables_work(self):
        # A few read by hand rather than by CLI11: the servers, and --token for extend.
        r = redlock(["status", "job"], env={"REDLOCK_SERVERS": "127.0.0.1:1", "REDLOCK_TIMEOUT": "50ms",
                                             "REDLOCK_JSON": "1"})
        self.assertEqual(r.code, 69, r)
        self.assertEqual(r.json()["servers"][0]["server"], "redis://127.0.0.1:1")
        r = redlock(["extend", "job"], env={"REDLOCK_SERVERS": "127.0.0.1:1", "REDLOCK_TIMEOUT": "50ms",
                                             "REDLOCK_TOKEN": "t"})
        self.assertEqual(r.code, 69, r)


SYNOPSES = {
    "acquire": ["acquire NAME [OPTIONS]"],
    "extend": ["extend NAME --token TOKEN [--ttl DUR]"],
    "release": ["release NAME (--token TOKEN | --force)"],
    "status": ["status NAME"],
    "run": ["run [OPTIONS] NAME [OPTIONS] [--] CMD [ARG...]", "run [OPTIONS] NAME [OPTIONS] -c STR"],
    "elect": ["elect [OPTIONS] NAME [OPTIONS] [--] CMD [ARG...]", "elect [OPTIONS] NAME [OPTIONS] -c STR",
              "elect NAME --observe"],
    "doctor": ["doctor [--ttl DUR]"],
    "list": ["list [PATTERN]"],
    "watch": ["watch NAME [--until released|free]"],
}
COMMANDS = "acquire, extend, release, status, run, elect, doctor, list, watch, completion"


class Help(unittest.TestCase):
    def test_each_command_shows_its_synopsis_and_the_global_options(self):
        for command, lines in SYNOPSES.items():
            with self.subTest(command=command):
                r = redlock([command, "--help"])
                self.assertEqual((r.code, r.stderr), (0, ""), r)
                for line in lines:
                    self.assertIn("redlock [GLOBAL OPTIONS] " + line + "\n", r.stdout)
                globals_at = r.stdout.index("\nGlobal options (before or after the command):\n")
                for option in ("-S,--servers", "--timeout", "--json", "-v,--verbose", "--prefix"):
                    self.assertIn(option, r.stdout[globals_at:])
        # completion reads no server: no global option applies to it.
        r = redlock(["completion", "--help"])
        self.assertIn("Usage: redlock completion bash|zsh\n", r.stdout)
        self.assertNotIn("--servers", r.stdout)
        # The top-level help lists every synopsis.
        top = redlock(["--help"]).stdout
        for lines in SYNOPSES.values():
            for line in lines:
                self.assertIn("redlock [GLOBAL OPTIONS] " + line + "\n", top)
        self.assertIn("redlock help [COMMAND]\n", top)

    def test_help_is_the_help_flag(self):
        cases = [(["help"], ["--help"]), (["help", "help"], ["--help"]), (["-q", "help"], ["--help"])]
        cases += [(["help", c], [c, "--help"]) for c in list(SYNOPSES) + ["completion"]]
        for words, same in cases:
            with self.subTest(words=words):
                r = redlock(words)
                self.assertEqual((r.code, r.stderr), (0, ""), r)
                self.assertEqual(r.stdout, redlock(same).stdout)
        for words, shown in ((["help", "bogus"], "help: unknown command 'bogus'"),
                             (["help", "run", "job"], "help takes one command")):
            r = redlock(words)
            self.assertEqual((r.code, r.stdout), (64, ""), r)
            self.assertEqual(r.stderr, "redlock: error: %s (commands: %s)\n" % (shown, COMMANDS))


class ErrorsNameWhatWasWrong(unittest.TestCase):
    """Each usage error says what was wrong, in one line, with what to read next."""

    def error(self, args, env=None):
        r = redlock(args, servers="127.0.0.1:1", env=env)
        self.assertEqual((r.code, r.stdout), (64, ""), (args, r))
        self.assertEqual(r.stderr.count("\n"), 1, r)
        return r.stderr

    def test_a_stray_word_is_named(self):
        self.assertEqual(self.error(["acquire", "x", "extra"]),
                         "redlock: error: unexpected argument: 'extra' (see redlock acquire --help)\n")
        self.assertEqual(self.error(["status", "x", "y", "-n"]),
                         "redlock: error: unexpected arguments: 'y' -n (see redlock status --help)\n")

    def test_a_value_out_of_range_is_named_with_the_range_as_written(self):
        self.assertEqual(self.error(["acquire", "x", "--drift", "0.9"]),
                         "redlock: error: --drift: '0.9' is not a number from 0 to 0.5 (see redlock acquire --help)\n")
        self.assertEqual(self.error(["acquire", "x", "-E", "abc"]), "redlock: error: --conflict-exit-code: 'abc' is "
                         "not a number from 0 to 255 (see redlock acquire --help)\n")
        self.assertIn("REDLOCK_DRIFT: '2' is not a number from 0 to 0.5",
                      self.error(["acquire", "x"], env={"REDLOCK_DRIFT": "2"}))

    def test_options_bundled_in_one_word_are_each_seen(self):
        for bundle in ("-nw5s", "-nwJUNK", "-qnw1s", "-vnE3"):
            with self.subTest(bundle=bundle):
                message = self.error(["acquire", "x", bundle] if "w" in bundle else ["acquire", "x", bundle, "-w1s"])
                self.assertIn("--nonblock and --wait exclude each other", message)
        # From the environment, the variables are named.
        self.assertIn("REDLOCK_NONBLOCK and REDLOCK_WAIT exclude each other",
                      self.error(["acquire", "x"], env={"REDLOCK_NONBLOCK": "1", "REDLOCK_WAIT": "1s"}))

    def test_an_empty_value_after_an_equals_sign_is_the_value(self):
        # Not the next word taken for it (CLI11's reading), which left "a command is required".
        self.assertIn("--timeout: '' is empty", self.error(["status", "x", "--timeout="]))
        for args in (["--prefix=", "status", "x"], ["status", "x", "--prefix="]):
            r = redlock(["--timeout", "50ms"] + args, servers="127.0.0.1:1")
            self.assertEqual(r.code, 69, (args, r))  # the prefix empty, as with --prefix ''
        r = redlock(["--timeout", "50ms", "run", "-n", "x", "--", "echo", "--foo="], servers="127.0.0.1:1")
        self.assertEqual(r.code, 69, r)  # CMD's words are CMD's: no quorum, not a usage error

    def test_an_empty_password_file_is_a_script_s_unset_variable(self):
        self.assertEqual(self.error(["--password-file", "", "status", "x"]),
                         "redlock: error: --password-file: must not be empty\n")

    def test_a_control_character_in_any_message_is_shown_escaped(self):
        r = redlock(["status", "x"], servers="redis://127.0.0.1:75\x1b99")
        self.assertEqual(r.code, 78, r)
        self.assertEqual(r.stderr, "redlock: error: bad port '75\\x1b99' in server URL 'redis://127.0.0.1:75\\x1b99'\n")

    def test_an_enclosing_runs_variable_of_the_wrong_shape_is_ignored(self):
        for value in ('[{"key":"enc","token":"zzz","fence":"x","servers":5}]', "garbage", '{"a":'):
            r = redlock(["--timeout", "50ms", "acquire", "-n", "enc"], servers="127.0.0.1:1",
                        env={"REDLOCK_ENCLOSING": value})
            self.assertEqual(r.code, 69, (value, r))
            self.assertNotIn("internal error", r.stderr)

    def test_a_count_past_any_number_is_an_error_not_a_crash(self):
        self.assertEqual(self.error(["--verbose=99999999999999999999", "status", "x"]),
                         "redlock: error: --verbose: the count is out of range (see redlock status --help)\n")
        self.assertIn("REDLOCK_VERBOSE: the count is out of range",
                      self.error(["status", "x"], env={"REDLOCK_VERBOSE": "-9223372036854775809"}))

    def test_a_word_that_may_be_a_mistyped_options_value_is_not(self):
        for args in (["acquire", "x", "--pasword", "s3cr3t"], ["acquire", "x", "--pasword=s3cr3t"],
                     ["acquire", "x", "-ps3cr3t"], ["acquire", "x", "-p", "s3cr3t"],
                     ["--pasword", "s3cr3t", "acquire", "x"], ["--pasword=s3cr3t", "status", "x"],
                     ["--pasword", "s3cr3t"], ["run", "x", "--pasword", "s3cr3t", "true"],
                     ["release", "x", "--force", "--pasword", "s3cr3t", "-q"]):
            with self.subTest(args=args):
                message = self.error(args)
                self.assertNotIn("s3cr3t", message)
                self.assertRegex(message, r"(--pasword|-p)\b")
        self.assertEqual(self.error(["acquire", "x", "--pasword", "s3cr3t"]),
                         "redlock: error: unexpected argument: --pasword (and the word after it, not shown: it may be "
                         "its value) (see redlock acquire --help)\n")
        r = redlock(["--json", "acquire", "x", "--pasword", "s3cr3t"])
        self.assertEqual(r.json()["error"]["code"], 64)
        self.assertNotIn("s3cr3t", r.stdout + r.stderr)
        # A word after an option that holds its value is no value: it is named.
        self.assertIn("'extra'", self.error(["acquire", "x", "--pasword=s3cr3t", "extra"]))

    def test_an_unknown_option_before_the_command_is_named(self):
        self.assertEqual(self.error(["--bogus"]), "redlock: error: unknown option --bogus (commands: %s)\n" % COMMANDS)
        self.assertEqual(self.error(["--bogus", "status", "x"]),
                         "redlock: error: unknown option --bogus (see redlock --help)\n")
        self.assertEqual(self.error([]), "redlock: error: a command is required (commands: %s)\n" % COMMANDS)

    def test_a_commands_option_before_the_command_says_where_it_goes(self):
        self.assertEqual(self.error(["-n", "run", "job", "true"]),
                         "redlock: error: -n is an option of acquire/run/elect: put it after the command "
                         "(redlock run -n ...)\n")
        self.assertEqual(self.error(["--ttl", "5s", "acquire", "x"]),
                         "redlock: error: --ttl is an option of acquire/extend/run/elect/doctor: put it after the command "
                         "(redlock acquire --ttl ...)\n")
        self.assertEqual(self.error(["-qn", "--ttl=5s", "status", "x"]),
                         "redlock: error: -n is an option of acquire/run/elect, not of status (see redlock status --help)\n")

    def test_a_commands_error_points_at_its_help(self):
        self.assertEqual(self.error(["status"]), "redlock: error: NAME is required (see redlock status --help)\n")
        self.assertEqual(self.error(["acquire", "job", "--bogus"]),
                         "redlock: error: unexpected argument: --bogus (see redlock acquire --help)\n")
        self.assertEqual(self.error(["release", "job", "--token"]),
                         "redlock: error: --token: 1 required TEXT missing (see redlock release --help)\n")

    def test_a_bad_variable_is_named_not_its_option(self):
        message = self.error(["status", "job"], env={"REDLOCK_JSON": "junk"})
        self.assertEqual(message, "redlock: error: REDLOCK_JSON: 'junk' is not a valid value (a flag is 1, true, "
                         "yes or on, or 0, false, no or off) (see redlock status --help)\n")
        for variable, value, args, text in (
                ("REDLOCK_TTL", "x", ["acquire", "job"], "REDLOCK_TTL: 'x' is not a duration"),
                ("REDLOCK_TTL", "1ms", ["acquire", "job"], "REDLOCK_TTL=1ms leaves no validity"),
                ("REDLOCK_TTL", "5s", ["run", "--renew", "20s", "job", "true"],
                 "--renew 20s must be shorter than REDLOCK_TTL=5s"),
                ("REDLOCK_TIMEOUT", "soon", ["status", "job"], "REDLOCK_TIMEOUT: 'soon' is not a duration"),
                ("REDLOCK_NONBLOCK", "maybe", ["acquire", "job"], "REDLOCK_NONBLOCK: 'maybe' is not a valid value"),
                ("REDLOCK_CONFLICT_EXIT_CODE", "300", ["acquire", "job"], "REDLOCK_CONFLICT_EXIT_CODE: "),
                ("REDLOCK_KILL_AFTER", "x", ["run", "job", "true"], "REDLOCK_KILL_AFTER: 'x' is not a duration")):
            with self.subTest(variable=variable, value=value):
                message = self.error(args, env={variable: value})
                self.assertIn(text, message)
                self.assertNotIn("--" + variable[8:].lower().replace("_", "-"), message)
        # Given on the command line too, the option is what counts, and what is named.
        self.assertIn("--ttl: 'y' is not a duration",
                      self.error(["acquire", "job", "--ttl", "y"], env={"REDLOCK_TTL": "x"}))
        # From the configuration file: the variable and where it is set, and a configuration error.
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "config")
            with open(path, "w") as f:
                f.write("# locks\nREDLOCK_TTL=soon\n")
            r = redlock(["acquire", "job"], servers="127.0.0.1:1", env={"REDLOCK_CONFIG": path})
            self.assertEqual((r.code, r.stdout, r.stderr.count("\n")), (78, "", 1), r)
            self.assertIn("REDLOCK_TTL (%s:2): 'soon' is not a duration" % path, r.stderr)


class TokenNobodySaw(ClusterTest):
    """A token that cannot be written to stdout is a lock nobody could release: it is given back."""
    N = 3

    def acquire_to(self, stdout, *extra):
        env = clean_env(None)
        env["REDLOCK_SERVERS"] = self.cluster.spec
        return subprocess.run([redlock_binary()] + list(extra) + ["acquire", "job"], env=env, stdout=stdout,
                              stderr=subprocess.PIPE, timeout=30)

    def test_a_full_disk_or_a_closed_stdout(self):
        for extra in ([], ["--json"]):
            with self.subTest(extra=extra), open("/dev/full", "w") as full:
                p = self.acquire_to(full, *extra)
                self.assertEqual(p.returncode, 78, p)
                self.assertIn(b"stdout: No space left on device", p.stderr)
                self.assertEqual(self.cluster.values("job"), [None] * 3)

    def test_a_closed_stdout(self):
        # No connection takes its place (the token written into it would be lost, the lock kept).
        env = clean_env(None)
        env["REDLOCK_SERVERS"] = self.cluster.spec
        p = subprocess.run(["sh", "-c", 'exec "$0" acquire job >&-', redlock_binary()], env=env,
                           stderr=subprocess.PIPE, timeout=30)
        self.assertEqual(p.returncode, 78, p)
        self.assertIn(b"stdout: Bad file descriptor", p.stderr)
        self.assertEqual(self.cluster.values("job"), [None] * 3)

    def test_any_output_that_cannot_be_written_is_no_success(self):
        # status, completion, --version: 78 and one line, where the answer was 0; another answer
        # keeps its status (69: no quorum) and the line is said all the same.
        env = clean_env(None)
        self.assertEqual(self.rl("acquire", "held").code, 0)
        for args, servers, code in ((["status", "held"], self.cluster.spec, 78), (["completion", "bash"], None, 78),
                                    (["--version"], None, 78),
                                    (["--timeout", "50ms", "status", "job"], "127.0.0.1:1", 69)):
            with self.subTest(args=args), open("/dev/full", "w") as full:
                e = dict(env, REDLOCK_SERVERS=servers) if servers else env
                p = subprocess.run([redlock_binary()] + args, env=e, stdout=full, stderr=subprocess.PIPE, timeout=30)
                self.assertEqual(p.returncode, code, p)
                self.assertEqual(p.stderr.decode().splitlines()[-1], "redlock: error: stdout: No space left on device")

    def test_a_reader_that_went_away(self):
        r, w = os.pipe()
        os.close(r)
        try:
            p = self.acquire_to(w)
        finally:
            os.close(w)
        self.assertEqual(p.returncode, 78, p)
        self.assertEqual(p.stderr.decode().splitlines(), ["redlock: error: stdout: Broken pipe; the lock was given back"])
        self.assertEqual(self.cluster.values("job"), [None] * 3)

    def test_every_answer_to_a_reader_that_went_away_is_78_not_a_signal(self):
        # SIGPIPE would end the command unheard (141), after a release had taken effect.
        token = self.rl("acquire", "held").out.decode().strip()
        env = dict(clean_env(None), REDLOCK_SERVERS=self.cluster.spec)
        for args in (["status", "held"], ["--json", "status", "held"], ["list"], ["--version"], ["--help"],
                     ["help", "run"], ["completion", "bash"], ["--json", "release", "held", "--token", token]):
            with self.subTest(args=args):
                r, w = os.pipe()
                os.close(r)
                try:
                    p = subprocess.run([redlock_binary()] + args, env=env, stdout=w, stderr=subprocess.PIPE,
                                       timeout=30)
                finally:
                    os.close(w)
                self.assertEqual(p.returncode, 78, p)
                self.assertEqual(p.stderr.decode().splitlines()[-1:], ["redlock: error: stdout: Broken pipe"], p)
        self.assertEqual(self.cluster.values("held"), [None] * 3)  # the release took effect, and said so


class Names(ClusterTest):
    N = 3

    def assert_held_with(self, name, token):
        # The name reaches the servers byte for byte: the key holds the token on a quorum (a server
        # whose answer came after the decision may not have it yet) and nothing else anywhere.
        with contextlib.ExitStack() as stack:
            values = [stack.enter_context(s.client()).call("GET", name) for s in self.cluster.servers]
        self.assertGreaterEqual(values.count(token), 2, values)
        self.assertEqual(set(values) - {token, None}, set(), values)

    def roundtrip(self, name):
        r = self.rl("acquire", name)
        self.assertEqual(r.code, 0, r)
        token = r.out.strip()
        self.assert_held_with(name, token)
        st = self.rl("--json", "status", name)
        self.assertEqual(st.code, 0, st)
        self.assertEqual(self.rl("release", name, "--token", token).code, 0)
        for s in self.cluster.servers:
            with s.client() as c:
                self.assertEqual(c.call("EXISTS", name), 0)

    def test_spaces(self):
        self.roundtrip("nightly backup job")

    def test_newlines_and_tabs(self):
        self.roundtrip("a\nb\tc\r\n")

    def test_utf8(self):
        self.roundtrip("verrou-été-锁-🔒")

    def test_three_kilobytes(self):
        self.roundtrip("x" * 1024 + "é" * 1024)

    def test_binary_bytes(self):
        name = b"bin\x01\x02\xff\xfe"
        r = redlock([b"acquire", name], servers=self.cluster)
        self.assertEqual(r.code, 0, r)
        self.assert_held_with(name, r.out.strip())
        j = redlock([b"--json", b"status", name], servers=self.cluster).json()
        self.assertEqual(j["state"], "held")

    def test_messages_escape_control_characters(self):
        self.rl("acquire", "evil\nname")
        r = self.rl("acquire", "-n", "evil\nname")
        self.assertEqual(r.code, 75)
        self.assertEqual(r.stderr.count("\n"), 1, r)
        self.assertIn("evil\\nname", r.stderr)


class Extend(ClusterTest):
    def test_extend_resets_the_expiry(self):
        token = self.rl("acquire", "job", "--ttl", "2s").stdout.strip()
        r = self.rl("extend", "job", "--token", token, "--ttl", "30s")
        self.assertEqual(r.code, 0, r)
        self.assertTrue(all(s.pttl("job") > 29000 for s in self.cluster.servers))
        j = self.rl("--json", "extend", "job", "--ttl", "30s", env={"REDLOCK_TOKEN": token}).json()
        self.assertIs(j["extended"], True)
        self.assertTrue(29000 < j["validity_ms"] < 30000)
        # Decided as soon as a quorum agreed; the others were extended too.
        self.assertGreaterEqual(j["quorum"]["ok"], 3)
        self.assertTrue(all(s.pttl("job") > 29000 for s in self.cluster.servers))

    def test_quiet_keeps_an_answer_off_stderr_but_not_an_error(self):
        # -q: nothing on stderr but errors. "Not held with this token" is an answer (exit 1).
        self.rl("acquire", "job")
        env = {"REDLOCK_KEY": "job", "REDLOCK_TOKEN": "not-mine"}
        for args, inside in ((["extend", "job", "--token", "nope"], None), (["release", "job", "--token", "nope"], None),
                             (["acquire", "-n", "job"], env)):
            with self.subTest(args=args):
                loud = self.rl(*args, env=inside)
                self.assertEqual(loud.code, 1 if args[0] != "acquire" else 75, loud)
                self.assertEqual(len(loud.stderr.splitlines()), 1, loud)
                quiet = self.rl("-q", *args, env=inside)
                self.assertEqual((quiet.code, quiet.stderr), (loud.code, ""), quiet)
                dead = redlock(["-q", "--timeout", "200ms"] + args, servers="127.0.0.1:1", env=inside)
                self.assertEqual(dead.code, 69, dead)
                self.assertRegex(dead.stderr, r"^redlock: error: job: [^\n]*\n$")

    def test_wrong_token_is_1_and_changes_nothing(self):
        token = self.rl("acquire", "job", "--ttl", "10s").stdout.strip()
        before = [s.pttl("job") for s in self.cluster.servers]
        r = self.rl("--json", "extend", "job", "--token", "not-mine", "--ttl", "60s")
        self.assertEqual(r.code, 1, r)
        j = r.json()
        self.assertIs(j["extended"], False)
        self.assertEqual(j["reason"], "not_held")
        after = [s.pttl("job") for s in self.cluster.servers]
        self.assertTrue(all(a <= b for a, b in zip(after, before)))
        self.assertEqual(self.cluster.values("job"), [token.encode()] * 5)

    def test_extend_puts_the_lock_back_where_a_server_lost_it_and_nowhere_else(self):
        token = self.rl("acquire", "job", "--ttl", "10s").stdout.strip()
        servers = self.cluster.servers
        with servers[1].client() as c:
            c.call("DEL", "job")  # as after a restart without persistence
        with servers[3].client() as c:
            c.call("SET", "job", "other", "PX", "10000")  # another holder's: never taken over
        r = self.rl("--json", "extend", "job", "--token", token, "--ttl", "30s")
        self.assertEqual(r.code, 0, r)
        results = [s["result"] for s in r.json()["servers"]]
        self.assertEqual(results[1], "healed", results)
        self.assertEqual(self.cluster.values("job"), [token.encode()] * 3 + [b"other", token.encode()])
        self.assertGreater(servers[1].pttl("job"), 29000)
        # -v says so.
        with servers[1].client() as c:
            c.call("DEL", "job")
        r = self.rl("-v", "extend", "job", "--token", token, "--ttl", "30s")
        self.assertEqual(r.code, 0, r)
        self.assertRegex(r.stderr, r"^redlock: extended job on 3 of 5 servers( \(1 not waited for\))?, put back on 1 "
                         r"of 5 servers, valid for \S+\n$")
        self.assertEqual(servers[1].get("job"), token.encode())

    def test_expired_lock_cannot_be_extended(self):
        token = self.rl("acquire", "job", "--ttl", "100ms").stdout.strip()
        time.sleep(0.2)
        self.assertEqual(self.rl("extend", "job", "--token", token).code, 1)
        self.assertEqual(self.cluster.values("job"), [None] * 5)

    def test_zero_ttl_and_missing_token_are_usage_errors(self):
        token = self.rl("acquire", "job").stdout.strip()
        for args in (["extend", "job", "--token", token, "--ttl", "0"],
                     ["extend", "job", "--token", token, "--ttl", "-5s"],
                     ["extend", "job", "--token", token, "--ttl", "2ms"],  # no validity left, as for acquire
                     ["extend", "job"]):
            r = self.rl(*args)
            self.assertEqual(r.code, 64, (args, r))
            self.assertTrue(r.stderr.startswith("redlock: error: "), r)
        self.assertEqual(self.cluster.values("job"), [token.encode()] * 5)

    def test_a_quorum_that_extends_too_late_is_no_quorum_not_not_held(self):
        token = self.rl("acquire", "job", "--ttl", "10s").stdout.strip()
        # Three of five servers run a script for 400ms: their yes comes after a 100ms validity.
        busy = ('local s = redis.call("TIME") while true do local n = redis.call("TIME") '
                'if (n[1] - s[1]) * 1000000 + (n[2] - s[2]) > 400000 then return 1 end end')
        procs = [subprocess.Popen(["redis-cli", "-p", str(s.port), "EVAL", busy, "0"], stdout=subprocess.DEVNULL)
                 for s in self.cluster.servers[1:4]]
        try:
            time.sleep(0.1)
            r = self.rl("--json", "--timeout", "2s", "extend", "job", "--token", token, "--ttl", "100ms")
        finally:
            for p in procs:
                p.wait(timeout=10)
        self.assertEqual(r.code, 69, r)
        j = r.json()
        self.assertEqual((j["extended"], j["reason"]), (False, "no_quorum"), j)
        self.assertGreaterEqual(j["quorum"]["ok"], j["quorum"]["needed"], j)
        self.assertIn("only after the new validity had run out", j["message"])


class Release(ClusterTest):
    def test_extend_and_release_read_the_token_from_a_file(self):
        # acquire --token-file writes it; extend and release read it: never in argv, where ps shows it.
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        tf = os.path.join(d, "token")
        self.assertEqual(self.rl("acquire", "job", "--ttl", "5s", "--token-file", tf).code, 0)
        r = self.rl("extend", "job", "--ttl", "30s", "--token-file", tf)
        self.assertEqual(r.code, 0, r)
        self.assertTrue(all(s.pttl("job") > 29000 for s in self.cluster.servers))
        r = self.rl("release", "job", env={"REDLOCK_TOKEN_FILE": tf})
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.cluster.values("job"), [None] * 5)
        for args, code, message in (
                (["release", "job", "--token-file", os.path.join(d, "missing")], 78, "No such file or directory"),
                (["release", "job", "--token", "x", "--token-file", tf], 64, "not both"),
                (["extend", "job", "--token-file", os.devnull], 78, "holds no token")):
            r = self.rl(*args)
            self.assertEqual(r.code, code, r)
            self.assertIn(message, r.stderr)

    def test_release_deletes_and_reports(self):
        token = self.rl("acquire", "job").stdout.strip()
        r = self.rl("--json", "release", "job", "--token", token)
        self.assertEqual(r.code, 0, r)
        j = r.json()
        self.assertIs(j["released"], True)
        self.assertEqual(j["deleted"], 5)
        self.assertEqual(self.cluster.values("job"), [None] * 5)
        self.assertEqual(self.cluster.values("{job}:redlock:owner"), [None] * 5)
        # The fence counter outlives the lock.
        self.assertNotIn(None, self.cluster.values("{job}:redlock:fence"))

    def test_wrong_token_is_1_and_touches_nothing(self):
        token = self.rl("acquire", "job", "--ttl", "20s").stdout.strip()
        r = self.rl("--json", "release", "job", "--token", "stale")
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.json()["deleted"], 0)
        self.assertEqual(self.cluster.values("job"), [token.encode()] * 5)
        self.assertTrue(all(s.pttl("job") > 19000 for s in self.cluster.servers))

    def test_force_deletes_a_lock_whoever_holds_it(self):
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("SET", "job", "someone-else", "PX", 60000)
        r = self.rl("release", "job", "--force")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.cluster.values("job"), [None] * 5)

    @staticmethod
    def hash_field(server):
        with server.client() as c:
            return c.call("HGET", "appdata", "field")

    def assert_force_refused(self, found, where):
        """release --force refuses, exit 1, naming FOUND on the servers WHERE, -q or not, and in the JSON."""
        for fmt in ([], ["-q"], ["--json"]):
            r = self.rl(*fmt, "release", "appdata", "--force")
            self.assertEqual(r.code, 1, (fmt, r))
            named = ", ".join("%s (%s)" % (self.cluster.servers[i].url, found) for i in where)
            line = "appdata: not a lock on %s; nothing deleted" % named
            self.assertEqual(r.stderr, "redlock: error: %s\n" % line, (fmt, r))
            if fmt == ["--json"]:
                j = r.json()
                self.assertIs(j["released"], False)
                self.assertEqual((j["reason"], j["deleted"]), ("not_a_lock", 0))
                self.assertEqual(j["error"], {"code": 1, "message": line})
                self.assertEqual([i for i, s in enumerate(j["servers"]) if s["result"] == "foreign"], list(where))

    def test_a_token_equal_to_application_data_takes_extends_and_deletes_nothing(self):
        # A string without an expiry is application data, even when it holds the token given.
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("SET", "appdata", "precious")
        for args, code in ((["acquire", "-n", "--token", "precious", "appdata"], 75),
                           (["run", "-n", "--token", "precious", "appdata", "--", "true"], 75),
                           (["extend", "--token", "precious", "--ttl", "5s", "appdata"], 1),
                           (["release", "--token", "precious", "appdata"], 1)):
            r = self.rl(*args)
            self.assertEqual(r.code, code, (args, r))
            self.assertEqual(self.cluster.values("appdata"), [b"precious"] * 5, args)
            self.assertEqual([s.pttl("appdata") for s in self.cluster.servers], [-1] * 5, args)

    def test_force_never_deletes_a_key_that_cannot_be_a_lock(self):
        # Application data under the name, on every server: a hash, then a string without an expiry.
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("HSET", "appdata", "field", "value")
        self.assert_force_refused("a hash", range(5))
        self.assertEqual([self.hash_field(s) for s in self.cluster.servers], [b"value"] * 5)
        self.cluster.flushall()
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("SET", "appdata", "precious")
        self.assert_force_refused("a string without an expiry", range(5))
        self.assertEqual(self.cluster.values("appdata"), [b"precious"] * 5)

    def test_force_refuses_as_a_whole_when_one_server_holds_data(self):
        # A lock on four servers, a hash on the fifth: the lock is not deleted anywhere either.
        for s in self.cluster.servers[:2] + self.cluster.servers[3:]:
            with s.client() as c:
                c.call("SET", "appdata", "someone-else", "PX", 60000)
        with self.cluster.servers[2].client() as c:
            c.call("HSET", "appdata", "field", "value")
        self.assert_force_refused("a hash", [2])
        self.assertEqual([s.get("appdata") for i, s in enumerate(self.cluster.servers) if i != 2],
                         [b"someone-else"] * 4)
        self.assertEqual(self.hash_field(self.cluster.servers[2]), b"value")

    def test_token_and_force_exclude_each_other(self):
        self.assertEqual(self.rl("release", "job").code, 64)
        self.assertEqual(self.rl("release", "job", "--token", "t", "--force").code, 64)
        # The environment's token does not turn --force into a usage error.
        self.assertEqual(self.rl("release", "job", "--force", env={"REDLOCK_TOKEN": "t"}).code, 0)

    def test_a_token_file_written_on_windows_reads_and_one_with_control_characters_holds_none(self):
        token = self.rl("acquire", "job", "--ttl", "60s").out.strip()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "token")
            with open(path, "wb") as f:
                f.write(b"\t" + token + b"\r\n")
            r = self.rl("release", "job", "--token-file", path)
            self.assertEqual(r.code, 78, r)
            self.assertIn("holds no token", r.stderr)
            with open(path, "wb") as f:
                f.write(token + b"\r\n")
            self.assertEqual(self.rl("release", "job", "--token-file", path).code, 0)

    def test_a_token_beats_a_force_from_a_weaker_place_and_ties_with_one_from_its_own(self):
        holder = self.rl("acquire", "job", "--ttl", "60s").out.strip()
        # Where the lock is (a quorum at least: a server a loaded machine kept from answering in
        # time may lack it), for "nothing deleted" below.
        held = settle(lambda: self.cluster.values("job"), [holder] * self.N)
        self.assertGreaterEqual(held.count(holder), self.N // 2 + 1, held)
        with tempfile.TemporaryDirectory() as d:
            wrong = os.path.join(d, "token")
            with open(wrong, "w") as f:
                f.write("someone-else\n")
            config = os.path.join(d, "config")
            with open(config, "w") as f:
                f.write("REDLOCK_FORCE=1\n")
            # The environment's token beats the file's REDLOCK_FORCE: not held with it, nothing deleted.
            for env in ({"REDLOCK_TOKEN": "someone-else"}, {"REDLOCK_TOKEN_FILE": wrong}):
                r = self.rl("release", "job", env=dict(env, REDLOCK_CONFIG=config))
                self.assertEqual(r.code, 1, (env, r))
            # Both in the environment: a usage error, nothing deleted.
            for env in ({"REDLOCK_TOKEN": "someone-else"}, {"REDLOCK_TOKEN_FILE": wrong}):
                r = self.rl("release", "job", env=dict(env, REDLOCK_FORCE="1"))
                self.assertEqual((r.code, r.stderr), (64, "redlock: error: a token (REDLOCK_TOKEN or "
                                                          "REDLOCK_TOKEN_FILE) and REDLOCK_FORCE exclude each other\n"))
            self.assertEqual(self.cluster.values("job"), held)
            # A --token beats REDLOCK_FORCE; a --force beats REDLOCK_TOKEN_FILE.
            self.assertEqual(self.rl("release", "job", "--token", "x", env={"REDLOCK_FORCE": "1"}).code, 1)
            self.assertEqual(self.rl("release", "job", "--force", env={"REDLOCK_TOKEN_FILE": wrong}).code, 0)
        self.assertEqual(self.cluster.values("job"), [None] * self.N)


class Status(ClusterTest):
    def test_held_free_partial(self):
        free = self.rl("status", "job")
        self.assertEqual(free.code, 1)
        self.assertIn("free", free.stdout)
        # A column left empty leaves no padding behind it.
        self.assertEqual([line for line in free.stdout.splitlines() if line != line.rstrip()], [], free)
        self.assertIn("\n%s  free      -\n" % self.cluster.servers[0].url, free.stdout)
        token = self.rl("acquire", "job", "--owner", "deployer on ci-7").stdout.strip()
        held = self.rl("status", "job")
        self.assertEqual(held.code, 0, held)
        self.assertIn("held on 5 of 5", held.stdout)
        self.assertIn("deployer on ci-7", held.stdout)
        j = self.rl("status", "job", "--json").json()
        self.assertEqual(j["state"], "held")
        self.assertEqual(j["token"], token)
        self.assertEqual(j["owner"], "deployer on ci-7")
        self.assertRegex(j["since"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertTrue(0 < j["ttl_ms"] <= 30000)
        self.assertEqual(j["fence"] % 10**6, 0)  # a new counter: the servers' clock, to the second
        for s in j["servers"]:
            self.assertEqual(s["type"], "string")
            self.assertEqual(s["value"], token)
            self.assertTrue(0 < s["ttl_ms"] <= 30000)
        # The owner record is beside the lock, never in its value.
        self.assertEqual(self.cluster.servers[0].get("job"), token.encode())
        # Two servers hold another token, one nothing: neither held nor free.
        for s in self.cluster.servers[:2]:
            with s.client() as c:
                c.call("SET", "job", "other", "PX", 30000)
        with self.cluster.servers[2].client() as c:
            c.call("DEL", "job")
        part = self.rl("--json", "status", "job")
        self.assertEqual(part.code, 1)
        self.assertEqual(part.json()["state"], "partial")

    def test_a_key_of_another_type_is_foreign_not_an_error(self):
        with self.cluster.servers[0].client() as c:
            c.call("HSET", "job", "redisson", "1")
        r = self.rl("--json", "status", "job")
        self.assertEqual(r.code, 1, r)
        j = r.json()
        self.assertEqual(j["state"], "free")
        self.assertEqual(j["servers"][0]["type"], "hash")
        self.assertEqual(j["servers"][0]["result"], "foreign")
        self.assertEqual(j["servers"][1]["type"], "none")
        plain = self.rl("status", "job")
        first = [line for line in plain.stdout.splitlines() if line.startswith(self.cluster.servers[0].url + " ")]
        self.assertEqual(len(first), 1, plain)
        self.assertRegex(first[0], r" foreign +no expiry +\(a hash\)$")
        # acquire counts it as busy there, not as a failure: on a quorum, the lock is busy.
        for s in self.cluster.servers[1:3]:
            with s.client() as c:
                c.call("HSET", "job", "redisson", "1")
        a = self.rl("--json", "acquire", "-n", "job")
        self.assertEqual(a.code, 75, a)
        j = a.json()
        self.assertEqual(j["reason"], "busy")
        self.assertEqual([s["result"] for s in j["servers"][:3]], ["foreign"] * 3)
        self.assertEqual([s.get("job") for s in self.cluster.servers[3:]], [None, None])

    def test_a_string_without_an_expiry_is_foreign_not_held(self):
        # Every lock is taken with an expiry: a string without one is someone's data, as a forced
        # release says (it leaves it alone).
        for s in self.cluster.servers[:3]:
            with s.client() as c:
                c.call("SET", "job", "appdata")
        r = self.rl("--json", "status", "job")
        self.assertEqual(r.code, 1, r)
        j = r.json()
        self.assertNotEqual(j["state"], "held")
        self.assertIsNone(j["token"])
        self.assertEqual([s["result"] for s in j["servers"]], ["foreign"] * 3 + ["free"] * 2)
        a = self.rl("--json", "acquire", "-n", "job")
        self.assertEqual(a.code, 75, a)
        self.assertIn("a string without an expiry", a.json()["servers"][0]["error"])
        self.assertEqual(self.rl("release", "--force", "job").code, 1)
        self.assertEqual(self.cluster.values("job"), [b"appdata"] * 3 + [None] * 2)


class BadInput(ClusterTest):
    N = 3

    def assert_error(self, args, code, fragment, env=None):
        r = self.rl(*args, env=env)
        self.assertEqual(r.code, code, (args, r))
        self.assertTrue(r.stderr.startswith("redlock: error: "), r)
        self.assertEqual(r.stderr.count("\n"), 1, r)
        self.assertIn(fragment, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        return r

    def test_usage_errors_are_64(self):
        self.assert_error(["acquire"], 64, "NAME")
        self.assert_error(["acquire", "job", "--bogus"], 64, "bogus")
        self.assert_error(["frobnicate"], 64, "frobnicate")
        self.assert_error([], 64, "a command is required")
        self.assert_error(["acquire", "job", "--ttl", "0"], 64, "--ttl")
        self.assert_error(["acquire", "job", "--ttl", "-1s"], 64, "--ttl")
        self.assert_error(["acquire", "job", "--ttl", "ten"], 64, "--ttl")
        self.assert_error(["acquire", "job", "--ttl", "99999999h"], 64, "too large")
        self.assert_error(["acquire", "job", "--ttl", "1ms"], 64, "validity")
        self.assert_error(["acquire", "job", "-w", "soon"], 64, "--wait")
        self.assert_error(["acquire", "job", "-n", "-w", "1s"], 64, "exclude")
        self.assert_error(["acquire", ""], 64, "NAME must not be empty")
        # An empty value ("$W" unset) is not the option left out (a wait for ever, the default replicas).
        self.assert_error(["acquire", "job", "-w", ""], 64, "-w: must not be empty")
        self.assert_error(["acquire", "job", "--wait", ""], 64, "--wait: must not be empty")
        self.assert_error(["run", "job", "--wait", "", "--", "true"], 64, "--wait: must not be empty")
        self.assert_error(["--member-wait", "", "acquire", "job"], 64, "--member-wait: must not be empty")
        for flag in ("--renew", "--min-hold", "--max-hold"):
            self.assert_error(["run", "job", flag, "", "--", "true"], 64, flag + ": must not be empty")
            self.assert_error(["run", flag + "=", "job", "--", "true"], 64, flag + ": must not be empty")
        # An empty --token ("$T" unset) neither falls back to REDLOCK_TOKEN nor makes a new token.
        for args in (["acquire", "job"], ["extend", "job"], ["release", "job"], ["run", "job", "--", "true"]):
            self.assert_error(args[:2] + ["--token", ""] + args[2:], 64, "--token: must not be empty",
                              env={"REDLOCK_TOKEN": "inherited"})
        # A token is printed on a line of its own: no line break, no other control character.
        for args in (["acquire", "job"], ["extend", "job"], ["release", "job"], ["run", "job", "--", "true"]):
            self.assert_error(args[:2] + ["--token", "a\nb"] + args[2:], 64, "--token: control characters")
            self.assert_error(args, 64, "REDLOCK_TOKEN: control characters", env={"REDLOCK_TOKEN": "a\tb"})
        self.assertEqual(self.cluster.values("job"), [None] * self.N)
        self.assert_error(["acquire", "job", "-E", "300"], 64, "")
        self.assert_error(["acquire", "job", "--drift", "2"], 64, "")
        self.assert_error(["acquire", "job", "--drift", "nan"], 64, "--drift: must be a number from 0 to 0.5")
        self.assert_error(["acquire", "job"], 64, "REDLOCK_DRIFT: must be a number", env={"REDLOCK_DRIFT": "nan"})
        self.assert_error(["--timeout", "0", "acquire", "job"], 64, "--timeout")
        # A lock key that could be another lock's helper key (its owner record would overwrite it).
        self.assert_error(["acquire", "{job}:redlock:owner"], 64, "helper keys")
        self.assert_error(["--prefix", "{job}:redlock:", "release", "fence", "--force"], 64, "helper keys")
        # A global option that ends the line is missing its value; the command is not unknown.
        self.assert_error(["status", "job", "-S"], 64, "--servers: 1 required")
        self.assert_error(["status", "job", "--timeout"], 64, "--timeout: 1 required")
        self.assertEqual(self.cluster.values("job"), [None] * 3)

    def test_json_errors_are_one_object(self):
        r = self.rl("--json", "acquire", "job", "--ttl", "0")
        self.assertEqual(r.code, 64)
        j = r.json()
        self.assertEqual(j, {"version": 1, "command": "acquire",
                             "error": {"code": 64, "message": j["error"]["message"]}})
        r = self.rl("acquire", "job", servers="redis://[::1", env={"REDLOCK_JSON": "1"})
        self.assertEqual(r.json()["error"]["code"], 78)
        # "[::1]" is a host in brackets, on port 6379, not a list of one for CLI11 to unwrap.
        r = self.rl("-S", "[::1]", "-S", self.cluster.servers[0].url, "--json", "--timeout", "50ms", "status", "job",
                    servers=None)
        self.assertEqual([s["server"] for s in r.json()["servers"]][:1], ["redis://[::1]:6379"], r)
        # A parse error answers in JSON exactly when the --json flag would have: its value and
        # REDLOCK_JSON's read as a flag's.
        for args, env, json_wanted in ((["--json=true"], None, True), (["--json=false"], None, False),
                                       ([], {"REDLOCK_JSON": "no"}, False), ([], {"REDLOCK_JSON": "on"}, True)):
            with self.subTest(args=args, env=env):
                r = self.rl(*args, "acquire", "job", "--bogus", env=env)
                self.assertEqual(r.code, 64, r)
                self.assertEqual(r.stdout.startswith('{"version":1'), json_wanted, r)

    def test_no_quorum_is_an_error_in_every_format(self):
        # 69 is an error: its line on stderr with --json too (and with -q), and the JSON answer
        # carries it as "error", beside the command's own fields.
        dead = "127.0.0.1:1,127.0.0.1:2,%s" % self.cluster.servers[0].address
        for args in (["acquire", "-n", "job"], ["extend", "job", "--token", "t"], ["release", "job", "--token", "t"],
                     ["status", "job"], ["run", "-n", "job", "--", "true"], ["doctor"]):
            for fmt in ([], ["--json"], ["-q"]):
                with self.subTest(args=args, fmt=fmt):
                    r = redlock(fmt + ["--timeout", "200ms"] + args, servers=dead)
                    self.assertEqual(r.code, 69, r)
                    lines = r.stderr.splitlines()
                    self.assertEqual(len(lines), 1, r)
                    self.assertRegex(lines[0], r"^redlock: error: no quorum: " if args == ["doctor"] else
                                     r"^redlock: error: job: ")
                    if fmt == ["--json"]:
                        j = r.json()
                        self.assertEqual(j["command"], args[0])
                        self.assertEqual(j["error"], {"code": 69, "message": lines[0][len("redlock: error: "):]})
        self.assertEqual(self.cluster.values("job"), [None] * 3)

    def test_configuration_errors_are_78(self):
        self.assert_error(["acquire", "job"], 78, "unknown scheme", env={"REDLOCK_SERVERS": "http://x:1"})
        self.assert_error(["acquire", "job"], 78, "port", env={"REDLOCK_SERVERS": "127.0.0.1:99999"})
        s = self.cluster.servers[0]
        self.assert_error(["acquire", "job"], 78, "listed twice",
                          env={"REDLOCK_SERVERS": "%s,redis://127.0.0.1:%d" % (s.address, s.port)})
        self.assertEqual(self.cluster.values("job"), [None] * 3)

    def test_the_same_server_under_two_names_is_78_and_leaves_nothing(self):
        s = self.cluster.servers[0]
        servers = "127.0.0.1:%d,localhost:%d" % (s.port, s.port)
        for args in (["acquire", "job"], ["status", "job"], ["release", "job", "--force"]):
            r = redlock(args, servers=servers)
            self.assertEqual(r.code, 78, (args, r))
            self.assertIn("same Redis server", r.stderr)
        self.assertIsNone(s.get("job"))

    def test_password_never_shown(self):
        s = self.cluster.servers[0]
        r = redlock(["--json", "acquire", "job"], servers="redis://u:hunter2@127.0.0.1:%d" % s.port)
        self.assertEqual(r.code, 69, r)
        self.assertNotIn("hunter2", r.stdout + r.stderr)
        self.assertIn("redis://u:***@127.0.0.1:%d" % s.port, r.stdout)

    def test_no_servers(self):
        r = redlock(["-S", ",", "acquire", "job"])
        self.assertEqual(r.code, 78, r)
        self.assertIn("no server", r.stderr)
        r = redlock(["acquire", "job"], env={"REDLOCK_SERVERS": " , "})
        self.assertEqual(r.code, 78, r)
        self.assertIn("REDLOCK_SERVERS", r.stderr)


class DatabaseNumbers(ClusterTest):
    """A database a server does not have (it has 16) is a configuration error (78), found on
    connecting, and nothing lands in database 0, where SELECT leaves a connection it refused."""

    N = 3

    def test_a_database_the_server_does_not_have_is_78(self):
        a, b, c = self.cluster.servers
        with a.client() as admin:
            admin.call("SET", "job", "someone-else", "PX", "60000")
        ran = os.path.join(self.scratch_dir(), "ran")
        for args in (["acquire", "-n", "job"], ["run", "-n", "job", "--", "touch", ran], ["status", "job"],
                     ["extend", "job", "--token", "t"], ["release", "job", "--force"]):
            with self.subTest(args=args):
                r = redlock(args, servers="redis://127.0.0.1:%d/99" % a.port)
                self.assertEqual(r.code, 78, r)
                self.assertEqual(r.stderr, "redlock: error: redis://127.0.0.1:%d/99: the server has no database 99 "
                                 "(SELECT: ERR DB index is out of range)\n" % a.port)
        self.assertFalse(os.path.exists(ran))
        # Database 0 of that server untouched: the lock there kept, no fence counter raised.
        with a.client() as admin:
            self.assertEqual(admin.call("GET", "job"), b"someone-else")
            self.assertEqual(admin.call("EXISTS", "{job}:redlock:fence"), 0)

    def test_what_was_taken_elsewhere_is_given_back(self):
        a, b, c = self.cluster.servers
        servers = "%s,redis://127.0.0.1:%d/16,redis://127.0.0.1:%d/1000" % (a.address, b.port, c.port)
        for args in (["acquire", "-n", "job"], ["--json", "run", "-n", "job", "--", "true"]):
            r = redlock(args, servers=servers)
            self.assertEqual(r.code, 78, r)
            self.assertIn("the server has no database", r.stderr)
            self.assertEqual(self.cluster.values("job"), [None] * 3)
        self.assertEqual(r.json()["error"]["code"], 78)

    def test_a_database_no_server_can_have_is_78_before_connecting(self):
        for db in ("-1", "x", "2147483648", "99999999999"):
            r = redlock(["acquire", "-n", "job"], servers="redis://127.0.0.1:1/" + db)
            self.assertEqual(r.code, 78, r)
            self.assertIn("bad db '%s'" % db, r.stderr)

    def test_a_scheme_without_its_slashes_is_malformed(self):
        for url in ("redis:/127.0.0.1", "redis:127.0.0.1", "redis//127.0.0.1"):
            r = redlock(["status", "job"], servers=url)
            self.assertEqual(r.code, 78, r)
            self.assertEqual(r.stderr, "redlock: error: malformed server URL '%s' (expected redis://HOST[:PORT][/DB])\n"
                             % url)


class SameServerTwice(ClusterTest):
    """One server under two names is refused every time, not only when both happen to answer
    before the quorum is decided: a frozen server and a loaded machine must not matter."""

    N = 3
    EXTRA = ("--bind", "127.0.0.1", "127.0.0.2")

    def refused_every_time(self, servers, why, rounds=25):
        """Each command refused ROUNDS times; then no key on the servers (a frozen one included, once
        thawed: it runs the queued script and the release that follows it)."""
        for i in range(rounds):
            for args in (["acquire", "-n", "job"], ["run", "-n", "job", "--", "true"]):
                r = redlock(args, servers=servers)
                self.assertEqual(r.code, 78, (i, args, r))
                self.assertIn("same Redis server", r.stderr)
                self.assertIn(why, r.stderr)
        for s in self.cluster.servers:
            s.thaw()
        deadline = time.monotonic() + 5
        while self.cluster.values("job") != [None] * 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(self.cluster.values("job"), [None] * 3)

    def test_two_names_of_one_endpoint(self):
        a, b, c = self.cluster.servers
        # The duplicate last, after a quorum that can be decided without it.
        servers = "%s,%s,%s,localhost:%d" % (a.address, b.address, c.address, a.port)
        self.refused_every_time(servers, "both reach 127.0.0.1:%d" % a.port)

    def test_two_addresses_of_one_server_by_run_id(self):
        # Different endpoints: only INFO's run_id tells. With the third server frozen the quorum
        # needs both, and INFO comes back before the lock script on each connection.
        a, b, c = self.cluster.servers
        c.freeze()
        self.refused_every_time("%s,127.0.0.2:%d,%s" % (a.address, a.port, c.address), "run_id", rounds=5)

    def test_two_addresses_of_one_server_by_run_id_when_the_quorum_needs_neither(self):
        # All healthy: a, b and c make the quorum (3 of 4) whatever c' says; c' is the same process
        # as c and shows itself within the short grace acquire gives the servers not heard from.
        a, b, c = self.cluster.servers
        self.refused_every_time("%s,%s,%s,127.0.0.2:%d" % (a.address, b.address, c.address, c.port), "run_id",
                                rounds=10)

    def test_two_names_of_one_endpoint_with_a_frozen_server(self):
        a, b, c = self.cluster.servers
        c.freeze()
        try:
            # One duplicate only, so that the refusal names it (a second would race it to the message).
            servers = "%s,%s,%s,localhost:%d" % (a.address, b.address, c.address, a.port)
            r = redlock(["acquire", "-n", "job"], servers=servers)
            self.assertEqual(r.code, 78, r)
            self.assertIn("both reach 127.0.0.1:%d" % a.port, r.stderr)
        finally:
            c.thaw()


class Replica(ClusterTest):
    """Three servers, the third a replica of the first: it never counts as a vote, and every
    command that counts votes says so on stderr, -q or not."""

    N = 3

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.cluster.replicate(2, 0)

    def warning(self):
        return "redlock: warning: %s is a replica; it never counts as a vote\n" % self.cluster.servers[2].url

    def test_status_counts_two_of_three_and_marks_the_replica(self):
        self.assertEqual(self.rl("acquire", "job", "--ttl", "20s").code, 0)
        # The lock reaches the replica through replication: it must still not count.
        wait_for(lambda: self.cluster.servers[2].get("job") is not None, what="the lock on the replica")
        plain = self.rl("status", "job")
        self.assertEqual(plain.code, 0, plain)
        self.assertIn("state  held on 2 of 3 servers", plain.stdout)
        self.assertEqual(plain.stderr, self.warning())
        self.assertEqual(self.rl("-q", "status", "job").stderr, "")  # nothing on stderr but errors
        r = self.rl("--json", "status", "job")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.stderr, self.warning())
        j = r.json()
        self.assertEqual(j["quorum"], {"needed": 2, "ok": 2, "total": 3})
        self.assertEqual([s["role"] for s in j["servers"]], ["master", "master", "replica"])
        self.assertEqual([s["result"] for s in j["servers"]], ["held", "held", "replica"])
        self.assertIs(j["servers"][2]["ok"], False)

    def masters_answer_last(self):
        """The masters hold their answers to the lock scripts for a moment. acquire and extend name
        the replicas they heard from by the time their outcome is known: on a loaded machine the
        replica's answer could come after the masters' (and then unnamed, and still not counted)."""
        for s in self.cluster.servers[:2]:
            with s.client() as c:
                c.call("CLIENT", "PAUSE", "300", "WRITE")

    def test_acquire_and_extend_with_two_masters_and_a_replica(self):
        for fmt in ([], ["-q"]):
            self.masters_answer_last()
            r = self.rl("--timeout", "2s", *fmt, "acquire", "job", "--ttl", "20s")
            self.assertEqual(r.code, 0, (fmt, r))
            self.assertEqual(r.stderr, "" if fmt else self.warning(), fmt)
            token = r.stdout.strip()
            self.masters_answer_last()
            e = self.rl("--timeout", "2s", *fmt, "--json", "extend", "job", "--token", token)
            self.assertEqual(e.code, 0, (fmt, e))
            self.assertEqual(e.stderr, "" if fmt else self.warning(), fmt)
            self.assertEqual(e.json()["quorum"]["ok"], 2)
            self.assertEqual(e.json()["servers"][2]["result"], "replica")
            self.assertEqual(self.rl("release", "job", "--token", token).code, 0)

    def test_a_writable_replica_never_votes_either(self):
        def read_only(value):
            with self.cluster.servers[2].client() as c:
                c.call("CONFIG", "SET", "replica-read-only", value)
        read_only("no")
        self.addCleanup(read_only, "yes")
        # With the second master frozen, the replica's yes would make a quorum with the first.
        self.cluster.servers[1].freeze()
        r = self.rl("--timeout", "200ms", "--json", "acquire", "-n", "job")
        self.assertEqual(r.code, 69, r)
        self.assertEqual(r.json()["quorum"]["ok"], 1)
        self.assertEqual(r.json()["servers"][2]["result"], "replica")


class SaysWhatIsKnown(ClusterTest):
    """Counts, holders and states say what the servers answered, and no more."""

    def frozen(self, servers):
        for s in servers:
            s.freeze()
        self.addCleanup(lambda: [s.thaw() for s in servers])

    def test_busy_counts_the_answers_and_names_the_holder(self):
        r = self.rl("acquire", "job", "--ttl", "30s", "--owner", "alice@host:123")
        self.assertEqual(r.code, 0, r)
        # Held on 5 of 5; two frozen: the verdict comes from three busy answers, the two others
        # were not waited for (no failure: monitoring that counts ok:false must not see one).
        self.frozen(self.cluster.servers[3:])
        busy = self.rl("--timeout", "300ms", "acquire", "-n", "job")
        self.assertEqual(busy.code, 75, busy)
        self.assertRegex(busy.stderr, r"^redlock: job: busy: held by alice@host:123 for another (29|30)(\.\d+)?s "
                         r"\(busy on 3 of 5 servers; 2 not waited for\)\n$")
        j = self.rl("--timeout", "300ms", "--json", "acquire", "-n", "job").json()
        self.assertEqual(j["reason"], "busy")
        self.assertEqual(j["holder"]["owner"], "alice@host:123")
        self.assertTrue(25000 < j["holder"]["ttl_ms"] <= 30000, j)
        self.assertEqual(j["ttl_ms"], 30000)  # the asker's own TTL
        self.assertEqual([(s["ok"], s["result"]) for s in j["servers"]],
                         [(False, "busy")] * 3 + [(None, "not_waited_for")] * 2, j)

    def test_a_holder_without_an_owner_record_is_owner_null(self):
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("SET", "job", "theirs", "PX", 20000)
        busy = self.rl("acquire", "-n", "job")
        self.assertRegex(busy.stderr, r"^redlock: job: busy: held elsewhere for another \S+s \(busy on [345] of 5 "
                         r"servers(; \d not waited for)?\)\n$")
        j = self.rl("--json", "acquire", "-n", "job").json()
        self.assertIsNone(j["holder"]["owner"], j)
        self.assertTrue(15000 < j["holder"]["ttl_ms"] <= 20000, j)
        report = os.path.join(self.scratch_dir(), "report.json")
        r = self.rl("run", "-n", "--report", report, "job", "--", "true")
        self.assertEqual(r.code, 75, r)
        with open(report) as f:
            self.assertIsNone(json.load(f)["holder"]["owner"])

    def test_run_busy_reports_the_holder(self):
        self.assertEqual(self.rl("acquire", "job", "--owner", "bob").code, 0)
        report = os.path.join(self.scratch_dir(), "report.json")
        r = self.rl("run", "-n", "--report", report, "job", "--", "true")
        self.assertEqual(r.code, 75, r)
        self.assertIn("busy: held by bob for another", r.stderr)
        with open(report) as f:
            rep = json.load(f)
        self.assertEqual((rep["outcome"], rep["holder"]["owner"]), ("busy", "bob"), rep)
        self.assertGreater(rep["holder"]["ttl_ms"], 25000, rep)

    def test_acquired_counts_the_servers_not_waited_for_apart(self):
        self.frozen(self.cluster.servers[3:])
        r = self.rl("--timeout", "300ms", "-v", "acquire", "job")
        self.assertEqual(r.code, 0, r)
        self.assertRegex(r.stderr, r"redlock: acquired job on 3 of 5 servers \(2 not waited for\), fence \d+\n")

    def test_status_with_fewer_than_a_quorum_answering_is_unknown(self):
        dead = ["127.0.0.1:%d" % free_port() for _ in range(3)]
        for servers in (",".join(dead), ",".join([s.url for s in self.cluster.servers[:2]] + dead)):
            r = redlock(["--timeout", "200ms", "--json", "status", "job"], servers=servers)
            self.assertEqual((r.code, r.json()["state"], r.json()["reason"]), (69, "unknown", "no_quorum"), r)
            plain = redlock(["--timeout", "200ms", "status", "job"], servers=servers)
            self.assertEqual(plain.code, 69, plain)
            self.assertIn("\nstate  unknown\n", plain.stdout)

    def test_one_server_is_one_server(self):
        one = self.cluster.servers[0].url
        r = redlock(["release", "job", "--token", "nobody"], servers=one)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.stderr, "redlock: job: not held with this token (deleted on 0 of 1 server)\n")


class ExtendKeepsTheLocksTtl(ClusterTest):
    def test_without_ttl_the_lock_keeps_the_ttl_it_was_taken_with(self):
        token = self.rl("acquire", "job", "--ttl", "60s").stdout.strip()
        time.sleep(0.3)
        r = self.rl("--json", "extend", "job", "--token", token)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.json()["ttl_ms"], 60000, r)
        self.assertTrue(all(59000 < s.pttl("job") <= 60000 for s in self.cluster.servers),
                        [s.pttl("job") for s in self.cluster.servers])
        # A TTL given is a TTL given, shorter or not.
        self.assertEqual(self.rl("extend", "job", "--token", token, "--ttl", "10s").code, 0)
        self.assertTrue(all(9000 < s.pttl("job") <= 10000 for s in self.cluster.servers))

    def test_without_ttl_a_longer_remaining_ttl_is_kept(self):
        # Taken by another client (no owner record): 30s, or what it has left if that is longer.
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("SET", "job", "T", "PX", 100000)
        self.assertEqual(self.rl("extend", "job", "--token", "T").code, 0)
        self.assertTrue(all(99000 < s.pttl("job") <= 100000 for s in self.cluster.servers))
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("PEXPIRE", "job", 5000)
        self.assertEqual(self.rl("extend", "job", "--token", "T").code, 0)
        self.assertTrue(all(29000 < s.pttl("job") <= 30000 for s in self.cluster.servers))


if __name__ == "__main__":
    main()
