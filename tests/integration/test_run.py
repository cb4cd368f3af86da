"""`redlock run`: exit statuses, signals, renewal, loss, nesting, the child's environment, --report,
--min-hold/--max-hold, and concurrent read-modify-writes under a frozen server. Real servers, real
signals, real processes."""

import json
import os
import random
import signal
import stat
import subprocess
import threading
import time

from harness import Cluster, ClusterTest, clean_env, free_port, main, pid_alive, redlock, spawn, wait_for, redlock_binary


def children_of(pid):
    """The pids whose parent is PID, from /proc."""
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and parent_of(int(entry)) == pid:
            out.add(int(entry))
    return out


def sleeping_child_of(pid):
    """A child of PID that runs sleep(1), once there is one: not one between its shell's fork and
    its exec. dash starts commands with vfork, and a ^Z in between stops the child while the shell
    waits for its exec, unstoppable: the group is then never all stopped, whoever supervises it."""
    for child in children_of(pid):
        try:
            with open("/proc/%d/comm" % child) as f:
                if f.read().strip() == "sleep":
                    return child
        except OSError:
            pass
    return None


def parent_of(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


class RunTest(ClusterTest):
    def setUp(self):
        super().setUp()
        self.tmp = self.scratch_dir("redlock-run-")

    def path(self, name):
        return os.path.join(self.tmp, name)

    def read_pid(self, name, timeout=5):
        def ready():
            try:
                with open(self.path(name)) as f:
                    text = f.read().strip()
                return int(text) if text else None
            except (OSError, ValueError):
                return None
        return wait_for(ready, timeout=timeout, what="pid file %s" % name)

    def report(self, name="report.json"):
        with open(self.path(name)) as f:
            return json.load(f)


class ExitStatus(RunTest):
    def test_the_commands_own_status(self):
        for code in (0, 3, 42):
            r = self.rl("run", "job", "--", "sh", "-c", "exit %d" % code)
            self.assertEqual(r.code, code, r)
        self.assertEqual(self.cluster.values("job"), [None] * 5)

    def test_killed_by_a_signal_is_128_plus_n(self):
        r = self.rl("run", "job", "--", "sh", "-c", "kill -TERM $$")
        self.assertEqual(r.code, 143, r)
        r = self.rl("run", "job", "--", "sh", "-c", "kill -KILL $$")
        self.assertEqual(r.code, 137, r)
        self.assertEqual(self.cluster.values("job"), [None] * 5)

    def test_not_found_127_not_executable_126(self):
        r = self.rl("run", "job", "--", "no-such-command-anywhere")
        self.assertEqual(r.code, 127, r)
        self.assertIn("not found", r.stderr)
        script = self.path("script")
        with open(script, "w") as f:
            f.write("#!/bin/sh\necho hi\n")
        os.chmod(script, 0o644)
        r = self.rl("run", "job", "--", script)
        self.assertEqual(r.code, 126, r)
        # An empty name is not found (as a shell says), not a directory of PATH that cannot run.
        r = self.rl("run", "job", "--", "")
        self.assertEqual((r.code, r.stderr.splitlines()[-1:]), (127, ["redlock: error: '': command not found"]), r)
        # A name with a newline stays on one line. (Last lines: in a sanitizer build, the child
        # that could not exec may warn first, as it runs on a stack of its own.)
        r = self.rl("run", "job", "--", "no\nsuch")
        self.assertEqual((r.code, r.stderr.splitlines()[-1:]), (127, ["redlock: error: no\\nsuch: command not found"]), r)
        self.assertEqual(self.cluster.values("job"), [None] * 5)

    def test_a_script_without_a_hash_bang_line_runs_in_the_shell(self):
        # As execvp, flock and timeout do: ENOEXEC means a shell script.
        bindir = self.path("bin")
        os.mkdir(bindir)
        script = os.path.join(bindir, "plain-script")
        with open(script, "w") as f:
            f.write('echo "ran with $1 $2 fence=$REDLOCK_FENCE"\nexit 3\n')
        os.chmod(script, 0o755)
        for argv0, env in ((script, None), ("plain-script", {"PATH": bindir + ":" + os.environ["PATH"]})):
            with self.subTest(argv0=argv0):
                r = self.rl("run", "job", "--", argv0, "a b", "c", env=env)
                self.assertEqual(r.code, 3, r)
                self.assertRegex(r.stdout, r"^ran with a b c fence=\d+\n$")
        self.assertEqual(self.cluster.values("job"), [None] * 5)

    def test_busy_75_or_conflict_code_and_the_command_never_runs(self):
        self.rl("acquire", "job")
        marker = self.path("ran")
        r = self.rl("run", "-n", "job", "--", "touch", marker)
        self.assertEqual(r.code, 75, r)
        r = self.rl("run", "-n", "-E", "0", "job", "--", "touch", marker)
        self.assertEqual(r.code, 0, r)
        r = self.rl("run", "-w", "300ms", "job", "--", "touch", marker)
        self.assertEqual(r.code, 75, r)
        self.assertFalse(os.path.exists(marker))

    def test_no_quorum_69(self):
        for i in (0, 1, 2):
            self.cluster.servers[i].freeze()
        marker = self.path("ran")
        r = self.rl("--timeout", "100ms", "run", "-n", "job", "--", "touch", marker)
        self.assertEqual(r.code, 69, r)
        self.assertFalse(os.path.exists(marker))
        j = self.rl("--json", "--timeout", "100ms", "run", "-n", "job", "--", "touch", marker).json()
        self.assertEqual((j["outcome"], j["reason"], j["error"]["code"]), ("no_quorum", "no_quorum", 69), j)

    def test_usage_errors(self):
        for args in (["run", "job"], ["run", "job", "-c", "true", "--", "true"],
                     ["run", "job", "--renew", "40s", "--", "true"], ["run", "job", "--signal", "BOGUS", "--", "true"],
                     ["run", "job", "--lost-exit-code", "256", "--", "true"]):
            r = self.rl(*args)
            self.assertEqual(r.code, 64, (args, r))
            self.assertTrue(r.stderr.startswith("redlock: error: "), r)

    def test_a_command_on_the_command_line_beats_redlock_command(self):
        r = self.rl("run", "job", "--", "echo", "argv", env={"REDLOCK_COMMAND": "echo env"})
        self.assertEqual((r.code, r.stdout), (0, "argv\n"), r)
        r = self.rl("run", "job", env={"REDLOCK_COMMAND": "echo env"})
        self.assertEqual((r.code, r.stdout), (0, "env\n"), r)
        r = self.rl("run", "job", "-c", "echo flag", "--", "echo", "argv")
        self.assertEqual(r.code, 64, r)

    def test_max_hold_shorter_than_min_hold_is_a_usage_error(self):
        r = self.rl("run", "--min-hold", "5s", "--max-hold", "1s", "job", "true")
        self.assertEqual((r.code, r.stderr), (64, "redlock: error: --max-hold 1s is shorter than --min-hold 5s\n"), r)
        self.assertEqual(self.cluster.values("job"), [None] * 5)

    def test_json_starts_on_a_line_of_its_own_after_the_commands_output(self):
        for command, out in ((["printf", "abc"], "abc"), (["echo", "abc"], "abc\n")):
            for to_file in (True, False):
                with self.subTest(command=command, to_file=to_file):
                    if to_file:
                        path = self.path("out")
                        with open(path, "w") as f:
                            subprocess.run([redlock_binary(), "--json", "run", "job", "--"] + command, stdout=f,
                                           env=clean_env({"REDLOCK_SERVERS": self.cluster.spec}), timeout=30)
                        with open(path) as f:
                            text = f.read()
                    else:
                        text = self.rl("--json", "run", "job", "--", *command).stdout
                    # A regular file shows whether a line break is needed; on a pipe one comes first.
                    before = out if to_file and out.endswith("\n") else out + "\n"
                    self.assertTrue(text.startswith(before), text)
                    self.assertEqual(json.loads(text[len(before):])["outcome"], "child_exited", text)

    def test_json_to_a_reader_gone_keeps_the_commands_status(self):
        # `redlock --json run … | head -1`: the report finds the pipe closed; the status is CMD's.
        for command in ("run", "elect"):
            args = ["--json", command, "job", "-c", "echo hello; sleep 0.3; exit 3"]
            if command == "elect":
                args[2:2] = ["--once"]
            p = spawn(args, servers=self.cluster, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            self.assertEqual(p.stdout.readline(), b"hello\n")
            p.stdout.close()
            p.wait(timeout=10)
            self.assertEqual(p.returncode, 3, command)
            self.assertEqual(self.cluster.values("job"), [None] * 5)

    def test_json_appended_to_a_file_starts_on_a_line_of_its_own(self):
        # >> (O_APPEND): the offset is 0 until the first write, but the write lands at the end.
        for before in ("pre", "pre\n", ""):
            with self.subTest(before=before):
                path = self.path("appended")
                with open(path, "w") as f:
                    f.write(before)
                fd = os.open(path, os.O_WRONLY | os.O_APPEND)  # as a shell's >> (Python's "a" seeks to the end)
                try:
                    subprocess.run([redlock_binary(), "--json", "run", "job", "--", "true"], stdout=fd,
                                   env=clean_env({"REDLOCK_SERVERS": self.cluster.spec}), timeout=30)
                finally:
                    os.close(fd)
                with open(path) as f:
                    lines = f.read().splitlines()
                self.assertEqual(lines[:-1], [before.strip()] if before else [], lines)
                self.assertEqual(json.loads(lines[-1])["outcome"], "child_exited", lines)

    def test_command_not_found_carries_the_error_object(self):
        for cmd, code, message in (("no-such-command-x", 127, "no-such-command-x: command not found"),
                                   ("./no-such-file-x", 127, "./no-such-file-x: No such file or directory"),
                                   (self.tmp, 126, "%s: Permission denied" % self.tmp)):
            r = self.rl("--json", "run", "job", "--", cmd)
            self.assertEqual(r.code, code, r)
            self.assertEqual(r.json()["error"], {"code": code, "message": message}, r)
            # The last line: under ASan, a child that gives up on its own stack may add a warning.
            self.assertEqual(r.stderr.splitlines()[-1], "redlock: error: %s" % message, r)

    def test_kill_after_longer_than_a_third_of_the_ttl_is_shortened_with_a_warning(self):
        r = self.rl("run", "--ttl", "3s", "-k", "5s", "job", "--", "true")
        self.assertEqual(r.code, 0, r)
        self.assertIn("--kill-after 5s is longer than a third", r.stderr)
        r = self.rl("run", "--ttl", "1s", "job", "--", "true")  # the default is shortened silently
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.stderr, "")

    def test_a_ttl_too_short_for_the_first_renewal_is_refused_before_any_server_is_asked(self):
        marker = self.path("ran")
        # 30ms: at most 27.7ms of validity, and the command must be stopped 10ms (--kill-after, a
        # third) + 10ms (the margin) before its end, before the first renewal (--renew, 10ms).
        r = self.rl("run", "--ttl", "30ms", "job", "--", "touch", marker)
        self.assertEqual(r.code, 64, r)
        self.assertTrue(r.stderr.startswith("redlock: error: --ttl 30ms is too short for run"), r)
        self.assertEqual(r.stderr.count("\n"), 1, r)
        self.assertIn("validity at most 27.7ms; --renew 10ms, then --kill-after 10ms and a 10ms margin", r.stderr)
        self.assertFalse(os.path.exists(marker))
        self.assertEqual(self.cluster.values("job"), [None] * len(self.cluster.servers))
        # The smallest TTL that leaves time for it with the defaults, as the man page says.
        r = self.rl("run", "--ttl", "37ms", "job", "--", "true")
        self.assertEqual(r.code, 64, r)
        r = self.rl("run", "--ttl", "38ms", "job", "--", "true")
        self.assertNotEqual(r.code, 64, r)


class CommandLine(RunTest):
    """run reads its words as flock and timeout do: the first word after NAME that is neither an
    option nor an option's value starts CMD, and every word from there on is CMD's."""

    def test_the_commands_options_stay_the_commands(self):
        data = self.path("data")
        with open(data, "w") as f:
            f.write("b 2\na 1\nc 3\n")
        cases = [
            (["run", "job", "sort", "-k", "2", data], "a 1\nb 2\nc 3\n"),
            (["run", "job", "head", "-n", "1", data], "b 2\n"),
            (["run", "job", "sh", "-c", "echo hi"], "hi\n"),
            (["run", "job", "sh", "-c", "echo $0 $1", "-v", "--json"], "-v --json\n"),
            (["run", "job", "printf", "%s,", "-q", "-S", "x", "--ttl", "--", "-w"], "-q,-S,x,--ttl,--,-w,"),
            # Not read as CLI11's lists: "[a,b]" stays one word.
            (["run", "job", "printf", "%s|", "[a,b]", "[]", "x"], "[a,b]|[]|x|"),
            (["run", "job", "--", "printf", "%s|", "[y]", "--", "[z]"], "[y]|--|[z]|"),
            # A "--" before NAME ends the options as getopt's does: NAME, then CMD (after another "--",
            # if one comes next). NAME was also run as CMD's first word.
            (["run", "--", "job", "echo", "hi"], "hi\n"),
            (["run", "-n", "--", "job", "--", "echo", "X", "Y"], "X Y\n"),
            (["run", "-c", "echo via-c", "--", "job"], "via-c\n"),
        ]
        for args, out in cases:
            with self.subTest(args=args):
                r = self.rl(*args)
                self.assertEqual((r.code, r.stdout, r.stderr), (0, out, ""), r)
        self.assertEqual(self.cluster.values("job"), [None] * 5)

    def test_options_before_and_after_name_are_runs(self):
        report = self.path("report.json")
        r = self.rl("run", "-w", "1s", "job", "--ttl=5s", "-k", "1s", "--report", report, "-q", "sh", "-c",
                    'echo "$REDLOCK_TTL_MS"')
        self.assertEqual((r.code, r.stdout), (0, "5000\n"), r)
        self.assertEqual(self.report()["outcome"], "child_exited")
        # Short options in one word, a value attached or in the next word; -c is run's own.
        r = self.rl("run", "job", "-nk", "1s", "-c", "echo $REDLOCK_NAME")
        self.assertEqual((r.code, r.stdout), (0, "job\n"), r)
        r = self.rl("run", "job", "-nk1s", "--", "echo", "x", "-n")
        self.assertEqual((r.code, r.stdout), (0, "x -n\n"), r)
        # An option redlock does not know, before CMD, is still an error of redlock's.
        r = self.rl("run", "job", "--bogus", "true")
        self.assertEqual(r.code, 64, r)
        self.assertEqual(r.stderr, "redlock: error: unexpected argument: --bogus (see redlock run --help)\n")

    def test_an_options_value_is_the_next_word_whatever_it_looks_like(self):
        # As getopt reads it: "--owner --" is the owner "--" (the second "--" ends the options),
        # and "--owner -x" the owner "-x"; CMD was "--", not found (127).
        status = [redlock_binary(), "--json", "status", "job"]
        for args, owner in ((["--owner", "--", "--"], "--"), (["--owner", "--"], "--"), (["--owner", "-x"], "-x"),
                            (["-w", "1s", "--owner", "--", "--"], "--")):
            with self.subTest(args=args):
                r = self.rl("run", "job", *args, *status)
                self.assertEqual(r.code, 0, r)
                self.assertEqual(json.loads(r.stdout)["owner"], owner, r)
        r = self.rl("run", "job", "-k", "-1", "true")
        self.assertEqual(r.code, 64, r)
        self.assertIn("--kill-after: '-1' is negative", r.stderr)
        # "-S -x": a server "-x", which no host name can be; it waited for ever to resolve it.
        r = self.rl("run", "job", "-S", "-x", "true", timeout=10)
        self.assertEqual(r.code, 78, r)
        self.assertIn("bad host in server URL '-x'", r.stderr)
        self.assertEqual(self.cluster.values("job"), [None] * 5)

    def test_a_name_that_looks_like_an_option_comes_after_dashes(self):
        # "-- NAME": the next word is NAME whatever it looks like; CMD follows (after another "--" too).
        for args in (["--", "-job", "sh", "-c", 'echo "$REDLOCK_NAME:$1"', "sh", "x"],
                     ["-n", "--", "-job", "--", "sh", "-c", 'echo "$REDLOCK_NAME:$1"', "sh", "x"]):
            with self.subTest(args=args):
                r = self.rl("run", *args)
                self.assertEqual((r.code, r.stdout, r.stderr), (0, "-job:x\n", ""), r)
        r = self.rl("run", "-n", "--", "-job")
        self.assertEqual(r.code, 64, r)
        self.assertIn("run needs a command", r.stderr)
        self.assertEqual(self.cluster.values("-job"), [None] * 5)
        # elect reads them the same way; and a NAME "--" is a NAME too.
        for args in (["elect", "--once", "--", "-job", "sh", "-c", 'echo "$REDLOCK_NAME"'],
                     ["elect", "--once", "--", "-job", "--", "sh", "-c", 'echo "$REDLOCK_NAME"'],
                     ["run", "--", "--", "sh", "-c", 'echo "$REDLOCK_NAME"']):
            with self.subTest(args=args):
                r = self.rl(*args)
                name = "--" if args[0] == "run" else "-job"
                self.assertEqual((r.code, r.stdout), (0, name + "\n"), r)

    def test_a_flag_given_an_empty_value_is_refused_by_name(self):
        # "--json=" is no value a flag can have; the words after it were blamed, or it was taken for "on".
        for args, flag in ((["run", "job", "--json=", "echo", "hi"], "--json"),
                           (["--json=", "run", "job", "echo", "hi"], "--json"),
                           (["run", "job", "--nonblock=", "--", "echo", "hi"], "--nonblock"),
                           (["elect", "job", "--once=", "echo", "hi"], "--once")):
            with self.subTest(args=args):
                r = self.rl(*args)
                self.assertEqual((r.code, r.stdout), (64, ""), r)
                self.assertTrue(r.stderr.startswith("redlock: error: %s: '' is not a valid value (a flag is 1" % flag), r)
        self.assertEqual(self.cluster.values("job"), [None] * 5)


class Signals(RunTest):
    def start(self, *extra, cmd=None):
        cmd = cmd or ["sh", "-c", "echo $$ > %s; exec sleep 30" % self.path("child")]
        p = spawn(["run", "job"] + list(extra) + ["--"] + cmd, servers=self.cluster,
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        child = self.read_pid("child")
        return p, child

    def test_forwarded_signals_end_the_child_with_an_honest_status(self):
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
            with self.subTest(sig=sig.name):
                os.unlink(self.path("child")) if os.path.exists(self.path("child")) else None
                p, child = self.start()
                self.assertEqual(self.cluster.servers[0].get("job") is not None, True)
                os.kill(p.pid, sig)
                p.wait(timeout=10)
                self.assertEqual(p.returncode, 128 + sig, p.stderr.read())
                self.assertFalse(pid_alive(child))
                self.assertEqual(self.cluster.values("job"), [None] * 5)

    def process_state(self, pid):
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]

    def test_sigtstp_to_redlock_alone_stops_the_command_too(self):
        # Stopped by SIGTSTP's default action, redlock would stop renewing while the command ran on
        # unlocked. The command stops with it; continued in time, it runs on to the end.
        p, child = self.start("--ttl", "3s")
        os.kill(p.pid, signal.SIGTSTP)
        wait_for(lambda: self.process_state(p.pid) == "T", timeout=5, what="redlock stopped")
        wait_for(lambda: self.process_state(child) == "T", timeout=5, what="the command stopped")
        os.kill(p.pid, signal.SIGCONT)
        wait_for(lambda: self.process_state(child) != "T", timeout=5, what="the command continued")
        os.kill(p.pid, signal.SIGTERM)
        p.wait(timeout=10)
        self.assertEqual(p.returncode, 128 + signal.SIGTERM, p.stderr.read())

    def test_sigtstp_past_the_validity_kills_the_command_before_another_holder_gets_in(self):
        log = self.path("log")
        p, child = self.start("--ttl", "1s", cmd=["sh", "-c", "echo $$ > %s; while :; do echo A >> %s; sleep 0.05; "
                                                  "done" % (self.path("child"), log)])
        wait_for(lambda: os.path.exists(log), what="the command to write")
        os.kill(p.pid, signal.SIGTSTP)
        wait_for(lambda: self.process_state(child) == "T", timeout=5, what="the command stopped")
        time.sleep(1.2)  # past the lock's TTL: free for another holder
        r = self.rl("run", "-n", "job", "--", "sh", "-c", "echo B >> %s" % log)
        self.assertEqual(r.code, 0, r)
        os.kill(p.pid, signal.SIGCONT)
        p.wait(timeout=10)
        self.assertEqual(p.returncode, 79, p.stderr.read())
        self.assertFalse(pid_alive(child))
        with open(log) as f:
            self.assertEqual(f.read().split()[-1], "B")  # nothing of the first command after the second

    def signal_with_a_grandchild(self, sig):
        """Starts `sh -c` that waits for a background sleep (not exec'd), sends SIG to redlock once
        both run, and returns the pids of the child and the grandchild."""
        cmd = ["sh", "-c", "echo $$ > %s; sleep 30 & echo $! > %s; wait" % (self.path("child"), self.path("grand"))]
        p, child = self.start(cmd=cmd)
        grand = self.read_pid("grand")
        os.kill(p.pid, sig)
        p.wait(timeout=10)
        return child, grand

    def test_the_whole_group_gets_it_so_sh_c_cannot_swallow_it(self):
        # TERM must reach the grandchild too.
        child, grand = self.signal_with_a_grandchild(signal.SIGTERM)
        wait_for(lambda: not pid_alive(grand), timeout=5, what="grandchild to end")
        self.assertFalse(pid_alive(child))

    def test_sigkill_of_redlock_takes_the_child_with_it(self):
        p, child = self.start()
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
        wait_for(lambda: not pid_alive(child), timeout=5, what="child to die with its parent")

    def test_sigkill_of_redlock_takes_what_the_child_started_with_it(self):
        # PR_SET_PDEATHSIG reaches the child alone; sh -c 'a; b' runs a as a grandchild. The guard
        # in the child's group kills the rest of the group.
        child, grand = self.signal_with_a_grandchild(signal.SIGKILL)
        wait_for(lambda: not pid_alive(grand), timeout=5, what="grandchild to die with redlock")
        wait_for(lambda: not pid_alive(child), timeout=5, what="child to die with redlock")

    def test_a_normal_end_leaves_no_guard_behind_and_kills_nothing(self):
        # What CMD leaves running when it exits is its business (as with flock); the guard is gone.
        r = self.rl("run", "job", "--", "sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $! > %s" % self.path("grand"))
        self.assertEqual(r.code, 0, r)
        grand = self.read_pid("grand")
        try:
            self.assertTrue(pid_alive(grand))
            pgid = os.getpgid(grand)
            members = [d for d in os.listdir("/proc") if d.isdigit() and d != str(grand) and self._pgid(d) == pgid]
            self.assertEqual(members, [], "left in the command's group besides its own process")
        finally:
            os.kill(grand, signal.SIGKILL)

    @staticmethod
    def _pgid(pid):
        try:
            with open("/proc/%s/stat" % pid) as f:
                return int(f.read().rsplit(")", 1)[1].split()[2])
        except (OSError, IndexError, ValueError):
            return None

    def test_a_signal_while_waiting_ends_the_wait_and_the_command_never_runs(self):
        self.rl("acquire", "job")
        marker = self.path("ran")
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with self.subTest(sig=sig.name):
                p = spawn(["run", "job", "--report", self.path("r.json"), "--", "touch", marker],
                          servers=self.cluster, stderr=subprocess.PIPE)
                time.sleep(0.3)
                os.kill(p.pid, sig)
                p.wait(timeout=10)
                self.assertEqual(p.returncode, 128 + sig)
                self.assertFalse(os.path.exists(marker))
                rep = self.report("r.json")
                # Outcomes of the contract only: busy, the wait having run out, and by which signal.
                self.assertEqual((rep["outcome"], rep["reason"], rep["interrupted_by"], rep["signal"]),
                                 ("busy", "interrupted", "SIG" + sig.name[3:], None), rep)


    def test_a_signal_the_caller_ignores_stays_ignored(self):
        # nohup's SIGHUP, a background job's SIGINT, a `trap '' TSTP`: neither the wait ends nor
        # redlock stops; the command inherits the ignore.
        token = self.rl("acquire", "job", "--ttl", "5s").stdout.strip()
        ignored = (signal.SIGHUP, signal.SIGINT, signal.SIGTSTP)

        def ignore():
            for sig in ignored:
                signal.signal(sig, signal.SIG_IGN)

        p = spawn(["run", "-w", "20s", "job", "--", "sh", "-c", "grep SigIgn /proc/self/status"], servers=self.cluster,
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=ignore)
        time.sleep(0.3)
        for sig in ignored:
            os.kill(p.pid, sig)
        time.sleep(0.3)
        self.assertIsNone(p.poll())
        self.assertNotEqual(self.process_state(p.pid), "T")
        self.assertEqual(self.rl("release", "job", "--token", token).code, 0)
        out, err = p.communicate(timeout=20)
        self.assertEqual(p.returncode, 0, err)
        mask = int(out.decode().split()[-1], 16)
        self.assertEqual([bool(mask & (1 << (sig - 1))) for sig in ignored], [True] * 3, out)

    def test_a_second_signal_neither_kills_redlock_nor_loses_the_report(self):
        # timeout(1) signals the process and its group: two TERMs at once. The first decides the
        # status; the second must not end redlock by its default action before the report is out.
        holder = spawn(["run", "job", "--", "sleep", "30"], servers=self.cluster)
        try:
            wait_for(lambda: self.cluster.values("job")[0] is not None, what="the holder's lock")
            for case, name, cmd in (("waiting", "job", ["true"]), ("running", "other", ["sleep", "30"])):
                for sig in (signal.SIGTERM, signal.SIGINT):
                    for attempt in range(10):
                        with self.subTest(case=case, sig=sig.name, attempt=attempt):
                            report = self.path("r-%s-%d-%d.json" % (case, sig, attempt))
                            p = spawn(["run", name, "--report", report, "--"] + cmd, servers=self.cluster,
                                      stderr=subprocess.DEVNULL)
                            if case == "waiting":
                                time.sleep(0.2)
                            else:
                                wait_for(lambda: self.cluster.values("other")[0] is not None, what="run's lock")
                            os.kill(p.pid, sig)
                            time.sleep(attempt * 0.0005)  # the second one anywhere in redlock's finish
                            os.kill(p.pid, sig)
                            p.wait(timeout=10)
                            self.assertEqual(p.returncode, 128 + sig)
                            with open(report) as f:
                                self.assertEqual(json.load(f)["exit_status"], 128 + sig)
                            self.assertEqual(self.cluster.values("other"), [None] * 5)
        finally:
            holder.kill()
            holder.wait(timeout=10)

    def test_other_signals_while_waiting_are_not_saved_up_for_the_command(self):
        # QUIT, USR1 and USR2 sent while run waits do not end the wait, and they are not delivered
        # to the command when it starts: it runs and ends by itself.
        holder = spawn(["run", "job", "--", "sleep", "1"], servers=self.cluster)
        wait_for(lambda: self.cluster.values("job")[0] is not None, what="the holder's lock")
        p = spawn(["run", "job", "--report", self.path("r.json"), "--", "sh", "-c", "sleep 0.3; echo ran"],
                  servers=self.cluster, stdout=subprocess.PIPE)
        time.sleep(0.3)
        for sig in (signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
            os.kill(p.pid, sig)
        out, _ = p.communicate(timeout=10)
        self.assertEqual(holder.wait(timeout=10), 0)
        self.assertEqual((p.returncode, out), (0, b"ran\n"))
        rep = self.report("r.json")
        self.assertEqual((rep["outcome"], rep["signal"]), ("child_exited", None), rep)


class Terminal(RunTest):
    """On a terminal, the command gets a process group of its own and the terminal with it, as a
    shell's job does: ^C reaches it once, from the terminal, not a second time from redlock."""

    def test_job_control_on_a_terminal(self):
        import pty
        import select
        report = self.path("report.json")
        pid, master = pty.fork()
        if pid == 0:
            os.environ["REDLOCK_SERVERS"] = self.cluster.spec
            # The child counts the INTs it gets; a second one (forwarded) would show as "2".
            os.execv(redlock_binary(), [redlock_binary(), "run", "--report", report, "job", "--", "sh", "-c",
                                        'n=0; trap \'n=$((n+1)); echo "int $n"\' INT; '
                                        'echo "groups $(ps -o pgid= -p $$) $(ps -o pgid= -p $PPID)"; '
                                        'while [ $n -lt 1 ]; do sleep 0.05; done; sleep 0.5; exit $((40+n))'])
        out = b""
        deadline = time.monotonic() + 20

        def read_until(text):
            nonlocal out
            while text not in out and time.monotonic() < deadline:
                ready, _, _ = select.select([master], [], [], 0.5)
                if ready:
                    try:
                        out += os.read(master, 4096)
                    except OSError:
                        break
            return text in out

        self.assertTrue(read_until(b"groups"), out)
        line = out.split(b"groups", 1)[1].split(b"\n")[0].split()
        self.assertNotEqual(line[0], line[1], "the command shares redlock's process group: %r" % out)
        os.write(master, b"\x03")  # ^C: the terminal sends SIGINT to the whole foreground group
        read_until(b"int 1")
        _, status = os.waitpid(pid, 0)
        read_until(b"\n")
        os.close(master)
        self.assertEqual(os.WEXITSTATUS(status), 41, out)  # exactly one INT reached the command
        self.assertNotIn(b"int 2", out)
        self.assertEqual(self.report()["outcome"], "child_exited")
        self.assertEqual(self.cluster.values("job"), [None] * 5)


class InteractiveShell(RunTest):
    """redlock run as the foreground job of an interactive shell on a pseudo-terminal: what stops
    the lock stops the whole command, grandchildren included, and job control keeps working."""

    def setUp(self):
        super().setUp()
        import pty
        self.pid, self.master = pty.fork()
        if self.pid == 0:
            os.environ.update({"REDLOCK_SERVERS": self.cluster.spec, "PS1": "$ ", "TERM": "dumb"})
            os.execv("/bin/bash", ["bash", "--norc", "--noprofile", "-i"])
        self.out = b""
        self.addCleanup(self.close_shell)

    def close_shell(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        os.close(self.master)

    def read_until(self, pattern, timeout=15):
        import re
        import select
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.out) and time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if ready:
                try:
                    self.out += os.read(self.master, 4096)
                except OSError:
                    break
        match = re.search(pattern, self.out)
        self.assertIsNotNone(match, "no %r in %r" % (pattern, self.out))
        return match

    def type(self, line):
        os.write(self.master, line)

    def start(self, args, command):
        """Types `redlock ARGS -- sh -c COMMAND; echo rc=$?`; returns the pid of the sh and of the
        sleep it runs in the foreground."""
        pids = self.path("pids")
        self.type(b"%s %s -- sh -c 'echo $$ > %s; sleep 30; %s'; echo rc=$?\n" % (
            redlock_binary().encode(), args, pids.encode(), command))
        sh = self.read_pid("pids")
        return sh, wait_for(lambda: sleeping_child_of(sh), what="the grandchild")

    def assert_gone(self, *pids):
        for pid in pids:
            wait_for(lambda: not pid_alive(pid), timeout=5, what="pid %d to end" % pid)

    def test_a_diagnostic_under_stty_tostop_does_not_stop_redlock(self):
        # The terminal stops a background writer (redlock, while CMD's group has the terminal):
        # redlock stopped would renew nothing while CMD runs on.
        self.type(b"stty tostop; %s -vv run --ttl 1s --renew 100ms job -- sh -c 'sleep 1.5; echo \"af\"\"ter\"'; "
                  b"echo rc=$?\n" % redlock_binary().encode())
        self.read_until(rb"rc=\d+")
        self.assertIn(b"after", self.out)
        self.assertIn(b"rc=0", self.out)
        self.assertIn(b"renewed, valid for", self.out)
        child_mask = b"stty -tostop; %s run job2 -- sh -c 'grep SigBlk /proc/self/status'; echo rc=$?\n"
        self.type(child_mask % redlock_binary().encode())
        self.read_until(rb"SigBlk:\s+[0-9a-f]+")
        self.assertRegex(self.out, rb"SigBlk:\s+0+\s")  # the command's mask is its own

    def test_loss_kills_the_grandchild(self):
        sh, sleep = self.start(b"run --ttl 3s -k 1s job", b'echo "af""ter"')
        for server in self.cluster.servers:
            with server.client() as c:
                c.call("SET", "job", "someone-else", "PX", "60000")
        self.read_until(rb"rc=79")
        self.assert_gone(sh, sleep)
        self.assertNotIn(b"after", self.out)

    def test_term_to_redlock_kills_the_grandchild(self):
        sh, sleep = self.start(b"run job", b'echo "af""ter"')
        os.kill(parent_of(sh), signal.SIGTERM)
        self.read_until(rb"rc=143")
        self.assert_gone(sh, sleep)
        self.assertEqual(self.cluster.values("job"), [None] * 5)

    def test_term_reaches_a_background_command_stopped_reading_the_terminal(self):
        # `run … &` whose command reads the terminal: SIGTTIN stops it. A TERM to redlock is
        # forwarded with a SIGCONT, as a shell's kill continues a stopped job: it ended nothing,
        # and the lock stayed renewed for as long as the stopped command lived.
        pids = self.path("pids")
        self.type(b"%s run job -- sh -c 'echo $$ > %s; exec cat' & sleep 0.2; echo started\n" % (
            redlock_binary().encode(), pids.encode()))
        sh = self.read_pid("pids")  # now cat
        wait_for(lambda: open("/proc/%d/stat" % sh).read().split(") ")[1][0] == "T", timeout=5,
                 what="the command stopped by SIGTTIN")
        self.type(b"kill %1; wait %1; echo rc=$?\n")
        self.read_until(rb"rc=143")
        self.assert_gone(sh)
        self.assertEqual(self.cluster.values("job"), [None] * 5)

    def test_ctrl_c_ends_the_command_with_130(self):
        sh, sleep = self.start(b"run job", b'echo "af""ter"')
        self.type(b"\x03")
        self.read_until(rb"rc=130")
        self.assert_gone(sh, sleep)
        self.assertEqual(self.cluster.values("job"), [None] * 5)

    def test_in_a_pipeline_the_terminal_stays_the_jobs_and_ctrl_c_is_forwarded(self):
        # `redlock run … | cat`: the shell made one job of both, so the terminal is not handed to
        # CMD (cat would lose it); ^C reaches redlock (and cat, which ignores it here, so that the
        # shell carries on with the line), and redlock forwards it to CMD.
        pids = self.path("pids")
        self.type(b"%s run job -- sh -c 'echo $$ > %s; sleep 30' | sh -c 'trap \"\" INT; exec cat'; echo rc=${PIPESTATUS[0]}\n" % (
            redlock_binary().encode(), pids.encode()))
        sh = self.read_pid("pids")
        sleep = wait_for(lambda: children_of(sh), what="the grandchild").pop()
        self.assertNotEqual(os.getpgid(sh), os.getpgid(parent_of(sh)))
        self.type(b"\x03")
        self.read_until(rb"rc=130")
        self.assert_gone(sh, sleep)
        self.assertEqual(self.cluster.values("job"), [None] * 5)

    def test_ctrl_z_then_fg_within_the_ttl_carries_on(self):
        pids = self.path("pids")
        self.type(b"%s run --ttl 10s job -- sh -c 'echo $$ > %s; sleep 2; echo do\"\"ne'; echo rc=$?\n" % (
            redlock_binary().encode(), pids.encode()))
        sh = self.read_pid("pids")
        wait_for(lambda: sleeping_child_of(sh), what="the grandchild")
        self.type(b"\x1a")
        self.read_until(rb"Stopped")
        self.assertIsNotNone(self.cluster.servers[0].get("job"))
        self.type(b"fg; echo rc=$?\n")
        self.read_until(rb"rc=0")
        self.assertIn(b"done", self.out)

    def test_ctrl_z_past_the_ttl_then_fg_kills_the_command_before_it_runs_again(self):
        sh, sleep = self.start(b"run --ttl 2s job", b'echo "af""ter"')
        self.type(b"\x1a")
        self.read_until(rb"Stopped")
        time.sleep(2.5)  # the lock's TTL runs out while everything is stopped
        self.type(b"fg; echo rc=$?\n")
        self.read_until(rb"rc=79")
        self.assertIn(b"redlock was stopped", self.out)
        self.assertNotIn(b"after", self.out)
        self.assert_gone(sh, sleep)


class KeepingAndLosing(RunTest):
    def test_renewal_keeps_the_lock_across_several_ttls_while_others_are_refused(self):
        p = spawn(["run", "--ttl", "1s", "--report", self.path("report.json"), "job", "--", "sleep", "3.5"],
                  servers=self.cluster)
        wait_for(lambda: self.cluster.servers[0].get("job"), what="the lock")
        refused = 0
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            r = self.rl("acquire", "-n", "job")
            self.assertEqual(r.code, 75, r)
            refused += 1
            time.sleep(0.25)
        p.wait(timeout=10)
        self.assertEqual(p.returncode, 0)
        self.assertGreaterEqual(refused, 8)
        rep = self.report()
        self.assertGreaterEqual(rep["renewals"], 7)
        self.assertEqual(rep["outcome"], "child_exited")
        self.assertEqual(self.rl("acquire", "-n", "job").code, 0)

    def test_lost_mid_run_kills_the_child_and_exits_79_without_touching_the_other_lock(self):
        start = time.monotonic()
        p = spawn(["run", "--ttl", "2s", "--renew", "300ms", "-k", "300ms", "--report", self.path("report.json"),
                   "job", "--", "sh", "-c", "echo $$ > %s; exec sleep 30" % self.path("child")],
                  servers=self.cluster, stderr=subprocess.PIPE)
        child = self.read_pid("child")
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("SET", "job", "thief", "PX", 60000)
        p.wait(timeout=10)
        self.assertEqual(p.returncode, 79, p.stderr.read())
        self.assertFalse(pid_alive(child))
        self.assertLess(time.monotonic() - start, 2.0)
        self.assertEqual(self.cluster.values("job"), [b"thief"] * 5)
        self.assertTrue(all(s.pttl("job") > 50000 for s in self.cluster.servers))
        rep = self.report()
        self.assertEqual(rep["outcome"], "lost")
        self.assertEqual(rep["signal"], "SIGTERM")

    def test_nothing_of_the_commands_group_outlives_a_lost_lock_or_a_passed_on_term(self):
        # CMD (sh) dies of the TERM at once; a grandchild in its group ignores TERM. It is killed
        # before redlock gives the lock back and exits, not left running without the lock.
        for end in ("lost", "term", "max-hold"):
            with self.subTest(end=end):
                grandchild = self.path("grandchild-" + end)
                script = self.path("ignores-term-" + end)
                with open(script, "w") as f:
                    f.write("trap '' TERM; echo $$ > %s; i=0; while [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n"
                            % grandchild)
                args = ["run", "--ttl", "3s", "-k", "1s", "job-" + end, "--", "sh", "-c", "sh %s & wait" % script]
                if end == "max-hold":
                    args[1:1] = ["--max-hold", "500ms"]
                # Its stderr not read: the grandchild holds it open for as long as it lives.
                p = spawn(args, servers=self.cluster, stderr=subprocess.DEVNULL)
                pid = self.read_pid("grandchild-" + end)
                self.addCleanup(lambda pid=pid: pid_alive(pid) and os.kill(pid, signal.SIGKILL))
                if end == "lost":
                    self.assertEqual(self.rl("release", "--force", "job-" + end).code, 0)
                elif end == "term":
                    p.send_signal(signal.SIGTERM)
                p.wait(timeout=10)
                self.assertEqual(p.returncode, {"lost": 79, "term": 143, "max-hold": 79}[end])
                # SIGKILL sent before the exit; its delivery may take a moment (the loop has 10 s left).
                wait_for(lambda: not pid_alive(pid), timeout=1, what="the grandchild to be killed")

    def test_nothing_of_a_nested_runs_group_outlives_the_enclosing_runs_lock(self):
        # The nested run's command has a group of its own: the TERM the enclosing run's loss passes
        # on ends it, and what ignores TERM there is killed before the nested run exits.
        script = self.path("ignores-term")
        with open(script, "w") as f:
            f.write("trap '' TERM; echo $$ > %s; i=0; while [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n"
                    % self.path("grandchild"))
        inner = "%s run job -- sh -c 'sh %s & wait'" % (redlock_binary(), script)
        p = spawn(["run", "--max-hold", "500ms", "--ttl", "3s", "-k", "1s", "job", "--", "sh", "-c", inner],
                  servers=self.cluster, stderr=subprocess.DEVNULL)
        pid = self.read_pid("grandchild")
        self.addCleanup(lambda: pid_alive(pid) and os.kill(pid, signal.SIGKILL))
        p.wait(timeout=10)
        self.assertEqual(p.returncode, 79)
        wait_for(lambda: not pid_alive(pid), timeout=1, what="the nested run's grandchild to be killed")

    def test_renewals_failing_kill_the_child_before_the_validity_can_end(self):
        # The child ignores TERM: SIGKILL after --kill-after, still before TTL - drift from the start.
        cmd = "trap '' TERM; echo $$ > %s; while :; do sleep 0.05; done" % self.path("child")
        start = time.monotonic()
        p = spawn(["--timeout", "50ms", "run", "--ttl", "1500ms", "-k", "300ms", "--lost-exit-code", "99", "job",
                   "--", "sh", "-c", cmd], servers=self.cluster, stderr=subprocess.PIPE)
        child = self.read_pid("child")
        for i in (0, 2, 4):
            self.cluster.servers[i].freeze()
        died = wait_for(lambda: None if pid_alive(child) else time.monotonic(), timeout=10, interval=0.002,
                        what="the child to be killed")
        p.wait(timeout=10)
        self.assertEqual(p.returncode, 99, p.stderr.read())
        # The validity of the lock ends no sooner than start + TTL - drift (1.5s - 17ms).
        self.assertLess(died - start, 1.483)

    def test_min_hold_keeps_the_lock_after_the_command(self):
        r = self.rl("run", "--min-hold", "1.5s", "--report", self.path("report.json"), "job", "--", "true")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.rl("acquire", "-n", "job").code, 75)
        ttl = self.cluster.servers[0].pttl("job")
        self.assertTrue(1000 < ttl <= 1500, ttl)
        self.assertEqual(self.report()["min_hold_ms"] > 1000, True)
        time.sleep(1.6)
        self.assertEqual(self.rl("acquire", "-n", "job").code, 0)

    def test_min_hold_with_milliseconds_left_is_no_false_alarm(self):
        # CMD ends a few milliseconds before --min-hold is over: the expiry set for those is the
        # lock kept, not a failure (the drift allowance alone exceeds what is left).
        for i in range(6):
            r = self.rl("run", "--min-hold", "1s", "--report", self.path("r.json"), "job%d" % i, "--", "sleep", "0.998")
            self.assertEqual((r.code, r.stderr), (0, ""), r)
            self.assertNotIn("release_error", self.report("r.json"))

    def test_max_hold_stops_renewing_and_treats_the_lock_as_lost(self):
        start = time.monotonic()
        r = self.rl("run", "--ttl", "3s", "--max-hold", "800ms", "--report", self.path("report.json"), "job", "--",
                    "sleep", "10")
        self.assertEqual(r.code, 79, r)
        self.assertLess(time.monotonic() - start, 2.0)
        rep = self.report()
        self.assertEqual(rep["outcome"], "lost")
        self.assertIn("max-hold", rep["message"])
        self.assertEqual(self.cluster.values("job"), [None] * 5)

    def test_a_lock_taken_away_says_so_once(self):
        # Every server loses the lock while the command runs: the next renewal finds it nowhere.
        cmd = "; ".join("redis-cli -p %d DEL job >/dev/null" % s.port for s in self.cluster.servers) + "; sleep 10"
        r = self.rl("run", "--ttl", "3s", "--renew", "200ms", "--report", self.path("report.json"), "job", "-c", cmd)
        self.assertEqual(r.code, 79, r)
        lost = r"a quorum no longer holds our token \(extended on 0 of 5 servers(; [12] not waited for)?\)"
        self.assertRegex(r.stderr, r"redlock: error: job: lock lost while the command ran: %s\n" % lost)
        self.assertRegex(self.report()["message"], "^%s$" % lost)

    def test_a_failed_release_warns_but_keeps_the_exit_status(self):
        cmd = "redis-cli -p %d DEL job >/dev/null; redis-cli -p %d DEL job >/dev/null; " \
              "redis-cli -p %d DEL job >/dev/null; exit 7" % tuple(s.port for s in self.cluster.servers[:3])
        r = self.rl("run", "--report", self.path("report.json"), "job", "--", "sh", "-c", cmd)
        self.assertEqual(r.code, 7, r)
        self.assertIn("release failed", r.stderr)
        rep = self.report()
        self.assertIs(rep["released"], False)
        self.assertIn("release_error", rep)


class RollingRestart(RunTest):
    """Every server restarted empty in turn, each down longer than the TTL, twice over: a quorum is
    up at every moment, so the job keeps its lock; each renewal puts it back on the server that
    came back empty, and a contender trying all the while never gets in."""
    N = 3

    def test_a_rolling_restart_keeps_the_lock_and_heals_it_everywhere(self):
        ttl = 2.0
        token_file = self.path("token")
        p = spawn(["run", "--ttl", "2s", "--report", self.path("report.json"), "job", "--", "sh", "-c",
                   'echo "$REDLOCK_TOKEN" > %s; sleep 24' % token_file], servers=self.cluster)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
        token = wait_for(lambda: os.path.exists(token_file) and open(token_file).read().strip(), what="the token")
        stop = threading.Event()
        got_in = []

        def contend():
            deadline = time.monotonic() + 40
            while not stop.is_set() and time.monotonic() < deadline:
                # Its own TTL no longer than the job's: an attempt of its that took a server coming
                # back and whose retraction came too late there (a 50ms deadline, a server still
                # starting) holds that server until it expires, and the heal never overwrites it.
                r = self.rl("--timeout", "50ms", "acquire", "-n", "--ttl", "2s", "job")
                if r.code == 0:
                    got_in.append(r.stdout.strip())
                stop.wait(0.02)

        contender = threading.Thread(target=contend, daemon=True)
        contender.start()
        try:
            for s in self.cluster.servers * 2:
                s.kill()
                time.sleep(ttl + 0.3)
                s.start(same_port=True)
                try:
                    # Within a few renewals, unless a contender's attempt took the server first and
                    # its retraction missed its 50ms deadline (a loaded machine): then only after
                    # that attempt's TTL, and the contender may take the server first again.
                    wait_for(lambda: s.get("job") == token.encode(), timeout=5 * ttl)
                except AssertionError:
                    self.fail("not healed on %s: it holds %r for %r ms" % (s.url, s.get("job"), s.pttl("job")))
                self.assertIsNone(p.poll(), "the job ended during the restarts")
            self.assertEqual(self.cluster.values("job"), [token.encode()] * 3)
        finally:
            stop.set()
            contender.join(10)
        self.assertEqual(got_in, [])
        p.wait(timeout=30)
        self.assertEqual(p.returncode, 0)
        rep = self.report()
        self.assertEqual(rep["outcome"], "child_exited", rep)


    def test_the_first_renewal_after_a_restart_puts_the_lock_back(self):
        # The restarted server's connection is new: its answer comes after the other two decided
        # the renewal. Put back on that answer, the lock survives the next server's restart (it was
        # lost, 79, when only servers answering before the decision were healed).
        p = spawn(["run", "--ttl", "6s", "job", "--", "sleep", "8"], servers=self.cluster, stderr=subprocess.PIPE)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
        wait_for(lambda: self.cluster.values("job")[2] is not None, what="the lock")
        token = self.cluster.values("job")[0]
        a, b = self.cluster.servers[2], self.cluster.servers[1]
        a.kill()
        a.start(same_port=True)
        wait_for(lambda: a.get("job") == token, timeout=3, what="the first renewal (every 2s) to put it back")
        b.kill()
        b.start(same_port=True)
        p.wait(timeout=20)
        self.assertEqual(p.returncode, 0, p.stderr.read())


class Child(RunTest):
    def test_environment_of_the_child(self):
        out = self.path("env")
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("CONFIG", "SET", "requirepass", "pw-not-for-children")
        try:
            r = self.rl("run", "--ttl", "7s", "job", "--", "sh", "-c", "env > %s" % out,
                        env={"REDLOCK_PASSWORD": "pw-not-for-children", "KEEP_ME": "yes"})
        finally:
            for s in self.cluster.servers:
                with s.client(password="pw-not-for-children") as c:
                    c.call("CONFIG", "SET", "requirepass", "")
        self.assertEqual(r.code, 0, r)
        with open(out) as f:
            env = dict(line.split("=", 1) for line in f.read().splitlines() if "=" in line)
        self.assertEqual(env["REDLOCK_NAME"], "job")
        self.assertEqual(env["REDLOCK_KEY"], "job")
        self.assertRegex(env["REDLOCK_TOKEN"], r"^[0-9a-f]{32}$")
        self.assertRegex(env["REDLOCK_FENCE"], r"^[1-9][0-9]*$")
        self.assertEqual(env["REDLOCK_TTL_MS"], "7000")
        self.assertEqual(env["KEEP_ME"], "yes")
        self.assertNotIn("REDLOCK_PASSWORD", env)
        with open(out) as f:
            self.assertNotIn("pw-not-for-children", f.read())

    def test_the_child_starts_unblocked_in_a_group_of_its_own_with_the_callers_ignores(self):
        # cat is the child itself (exec'd, no shell between): its own /proc entries tell.
        for ignore_hup in (False, True):
            pre = (lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN)) if ignore_hup else None
            e = clean_env({"REDLOCK_SERVERS": self.cluster.spec})
            p = subprocess.run([redlock_binary(), "run", "job", "--", "cat", "/proc/self/status", "/proc/self/stat"],
                               env=e, capture_output=True, timeout=30, preexec_fn=pre, stdin=subprocess.DEVNULL)
            self.assertEqual(p.returncode, 0, p)
            text = p.stdout.decode()
            fields = dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)
            self.assertEqual(int(fields["SigBlk"], 16), 0, text)
            hup_ignored = bool(int(fields["SigIgn"], 16) & (1 << (signal.SIGHUP - 1)))
            self.assertEqual(hup_ignored, ignore_hup, text)
            stat_fields = text.splitlines()[-1].rsplit(")", 1)[1].split()
            # A group of its own: not redlock's (ours), but its guard's, made before the child.
            pgid = int(stat_fields[2])
            self.assertNotEqual(pgid, os.getpgrp(), text)
            self.assertEqual(int(stat_fields[1]), int(fields["PPid"]), text)

    def test_stdin_stdout_stderr_are_the_childs(self):
        r = redlock(["run", "job", "--", "sh", "-c", "cat; echo to-stderr >&2"], servers=self.cluster,
                    input=b"line one\nline two\n")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.out, b"line one\nline two\n")
        self.assertEqual(r.err, b"to-stderr\n")

    def test_dash_c_runs_the_shell(self):
        r = self.rl("run", "job", "-c", "echo $((6*7)) $REDLOCK_NAME")
        self.assertEqual(r.out, b"42 job\n")
        r = self.rl("run", "job", "-c", 'echo "${BASH_VERSION:+bash}"', env={"SHELL": "/bin/bash"})
        self.assertEqual(r.out, b"bash\n")

    def test_nested_run_and_acquire_reenter_and_do_not_release(self):
        inner = "%s run job -- sh -c 'echo inner:$REDLOCK_TOKEN'; %s acquire job; %s status job >/dev/null; " \
                "echo status:$?" % ((redlock_binary(),) * 3)
        start = time.monotonic()
        r = self.rl("run", "job", "--", "sh", "-c", "echo outer:$REDLOCK_TOKEN; " + inner)
        self.assertEqual(r.code, 0, r)
        self.assertLess(time.monotonic() - start, 5)
        lines = r.stdout.splitlines()
        token = lines[0].split(":", 1)[1]
        self.assertEqual(lines[1], "inner:" + token)
        self.assertEqual(lines[2], token)
        self.assertEqual(lines[3], "status:0")  # still held after the nested run and acquire ended
        self.assertEqual(self.cluster.values("job"), [None] * 5)

    def test_a_nested_run_reaches_the_lock_as_the_enclosing_one_did(self):
        # --prefix, --timeout, --user, the TLS options and the password file's path go to the
        # child as REDLOCK_*, so a nested run of NAME re-enters the same key on the same servers.
        b = redlock_binary()
        report = self.path("inner.json")
        r = self.rl("--prefix", "app:", "--timeout", "2s", "--tls-server-name", "srv.example", "run", "job", "--",
                    "sh", "-c", 'echo "$REDLOCK_PREFIX $REDLOCK_TIMEOUT $REDLOCK_TLS_SERVER_NAME '
                    '${{REDLOCK_TLS_KEY-unset}}"; {b} run --report {rep} job -- true'.format(b=b, rep=report),
                    env={"REDLOCK_TLS_KEY": ""})
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.stdout, "app: 2s srv.example unset\n")
        with open(report) as f:
            rep = json.load(f)
        self.assertEqual((rep["nested"], rep["key"]), (True, "app:job"), rep)
        self.assertEqual(self.cluster.values("app:job"), [None] * 5)

    def test_a_reentry_reports_the_enclosing_runs_fence(self):
        b = redlock_binary()
        report = self.path("inner.json")
        # One server's counter far above the fence: only the enclosing run knows the real one.
        r = self.rl("run", "job", "--", "sh", "-c",
                    "echo $REDLOCK_FENCE; redis-cli -p {port} SET '{{job}}:redlock:fence' $((REDLOCK_FENCE + 1000)) >/dev/null; "
                    "{b} --json acquire job; {b} run --report {rep} job -- true".format(
                        b=b, rep=report, port=self.cluster.servers[0].port))
        self.assertEqual(r.code, 0, r)
        fence, acquired = r.stdout.splitlines()
        acquired = json.loads(acquired)
        self.assertTrue(acquired["nested"] and acquired["acquired"], acquired)
        self.assertEqual(acquired["fence"], int(fence))
        # Every key of the acquire object: the TTL asked for (the default), the validity the
        # enclosing run's lock has left.
        self.assertEqual((acquired["ttl_ms"], acquired["attempts"]), (30000, 1), acquired)
        self.assertTrue(20000 < acquired["validity_ms"] < 30000, acquired)
        with open(report) as f:
            rep = json.load(f)
        self.assertEqual(rep["fence"], int(fence))
        # Every field a run reports is there, as the JSON table says.
        for key in ("child_exit", "signal", "token", "fence", "held_ms", "renewals", "acquired", "ttl_ms",
                    "attempts", "wait_ms", "quorum"):
            self.assertIn(key, rep)
        self.assertEqual((rep["acquired"], rep["ttl_ms"], rep["attempts"]), (True, 30000, 1), rep)
        self.assertEqual((rep["outcome"], rep["child_exit"], rep["signal"], rep["renewals"]),
                         ("child_exited", 0, None, 0), rep)

    def test_the_same_servers_named_otherwise_re_enter_rather_than_wait_for_themselves(self):
        by_name = ",".join("redis://localhost:%d" % s.port for s in self.cluster.servers)
        inner = "%s -S %s run -n job -- sh -c 'echo $REDLOCK_FENCE'" % (redlock_binary(), by_name)
        r = self.rl("run", "job", "--", "sh", "-c", 'echo "$REDLOCK_FENCE"; ' + inner, timeout=20)
        self.assertEqual(r.code, 0, r)
        outer, nested = r.stdout.split()
        self.assertEqual(outer, nested)
        self.assertEqual(self.cluster.values("job"), [None] * 5)

    def test_a_sigtstp_to_a_reentered_run_stops_its_command_with_it(self):
        def state(pid):
            with open("/proc/%d/stat" % pid) as f:
                return f.read().rsplit(")", 1)[1].split()[0]
        child_pid = self.path("child")
        p = spawn(["run", "job", "--", "sh", "-c", "%s run job -- sh -c 'echo $$ > %s; exec sleep 30'"
                   % (redlock_binary(), child_pid)], servers=self.cluster, stderr=subprocess.PIPE)
        self.addCleanup(lambda: p.poll() is None and (p.kill(), p.wait()))
        child = self.read_pid("child")
        inner = parent_of(child)
        os.kill(inner, signal.SIGTSTP)
        wait_for(lambda: state(child) == "T" and state(inner) == "T", timeout=5, what="both stopped")
        os.kill(inner, signal.SIGCONT)
        wait_for(lambda: state(child) != "T" and state(inner) != "T", timeout=5, what="both running again")
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=10)
        self.assertEqual(p.returncode, 143, p.stderr.read())

    def test_a_reentry_into_a_lock_the_enclosing_run_lost_is_refused(self):
        # Inside a run (REDLOCK_KEY and REDLOCK_TOKEN), but the lock is no longer held: a nested
        # acquire answers busy, a nested run lost (its command never runs), neither takes the lock;
        # with no server answering, both exit 69.
        inside = {"REDLOCK_KEY": "job", "REDLOCK_TOKEN": "0123456789abcdef0123456789abcdef"}
        marker = self.path("ran")
        cases = [(["acquire", "job"], 75, "redlock: job: the enclosing run no longer holds the lock"),
                 (["run", "job", "--", "touch", marker], 79,
                  "redlock: error: job: the enclosing run no longer holds the lock")]
        for args, code, message in cases:
            r = self.rl(*args, env=inside)
            self.assertEqual((r.code, r.stderr), (code, message + "\n"), r)
        self.assertEqual(self.cluster.values("job"), [None] * 5)
        dead = ",".join("127.0.0.1:%d" % free_port() for _ in range(3))
        for args, _, _ in cases:
            r = redlock(args, servers=dead, env=inside)
            self.assertEqual((r.code, r.stderr), (69, "redlock: error: job: no quorum to check the enclosing run's lock\n"),
                             r)
        self.assertFalse(os.path.exists(marker))

    def test_a_reentry_through_a_run_of_another_name_gives_the_command_its_own_lock(self):
        # outer holds a, a run of b inside it, and in b's command a run of a again (re-entered):
        # that command learns a's name, token and fence, not b's, which it would inherit.
        self.assertEqual(self.rl("acquire", "b").code, 0)  # b's fence above a's from here on
        self.assertEqual(self.rl("release", "--force", "b").code, 0)
        show = self.path("show")
        with open(show, "w") as f:
            f.write('echo "$REDLOCK_NAME $REDLOCK_KEY $REDLOCK_TOKEN $REDLOCK_FENCE"\n')
        r = self.rl("run", "a", "--", "sh", "-c", "sh {s}; {b} run b -- sh -c 'sh {s}; {b} run a -- sh {s}'".format(
            b=redlock_binary(), s=show))
        self.assertEqual(r.code, 0, r)
        outer, middle, inner = [line.split() for line in r.stdout.splitlines()]
        self.assertEqual((outer[0], middle[0]), ("a", "b"), r.stdout)
        self.assertNotEqual(outer[3], middle[3])
        self.assertEqual(inner, outer, r.stdout)

    def test_nested_run_of_another_name_is_a_lock_of_its_own(self):
        r = self.rl("run", "outer", "--", redlock_binary(), "run", "inner", "--", "sh", "-c",
                    "%s status outer >/dev/null && %s status inner >/dev/null && echo both" %
                    (redlock_binary(), redlock_binary()))
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.out, b"both\n")

    def test_a_lock_of_another_name_inside_gets_a_token_of_its_own(self):
        # Re-entry is for the enclosing run's lock only: another NAME taken inside the command is
        # a lock of its own, whose token the inherited one never stands in for (extend and release
        # of it need --token); given explicitly, the inherited token reaches it.
        b = redlock_binary()
        script = ("echo $REDLOCK_TOKEN; {b} acquire -n inner; echo $?; {b} acquire -n inner >/dev/null; echo $?; "
                  "{b} extend inner 2>/dev/null; echo $?; {b} release inner 2>/dev/null; echo $?; "
                  "{b} release --force inner; echo $?; "
                  "{b} acquire -n shared --token $REDLOCK_TOKEN; echo $?; "
                  "{b} acquire -n shared --token $REDLOCK_TOKEN >/dev/null; echo $?; "
                  "{b} release shared --token $REDLOCK_TOKEN; echo $?; "
                  "{b} status outer >/dev/null; echo $?").format(b=b)
        r = self.rl("run", "outer", "--", "sh", "-c", script)
        self.assertEqual(r.code, 0, r)
        token, inner, *rest = r.stdout.split()
        self.assertRegex(token, r"^[0-9a-f]{32}$")
        self.assertRegex(inner, r"^[0-9a-f]{32}$")
        self.assertNotEqual(inner, token)
        # Taken with a new token; a second acquire has a new token again and finds it busy (75);
        # no token for extend and release (64); --token $REDLOCK_TOKEN takes and re-enters.
        self.assertEqual(rest, ["0", "75", "64", "64", "0", token, "0", "0", "0", "0"], r)
        self.assertEqual(self.cluster.values("inner"), [None] * 5)
        self.assertEqual(self.cluster.values("shared"), [None] * 5)
        self.assertEqual(self.cluster.values("outer"), [None] * 5)
        # Outside any run, REDLOCK_TOKEN is simply the token to use.
        r = self.rl("acquire", "-n", "solo", env={"REDLOCK_TOKEN": "mine"})
        self.assertEqual((r.code, r.out), (0, b"mine\n"), r)
        self.assertEqual(self.rl("release", "solo", env={"REDLOCK_TOKEN": "mine"}).code, 0)

    def test_sibling_workers_inside_one_run_exclude_each_other(self):
        # Three workers started by one run, each taking a second lock: one gets in, two are busy.
        b = redlock_binary()
        worker = "{b} run -n db-migrate -- sleep 1.5 && echo in || echo out:$?".format(b=b)
        r = self.rl("run", "batch", "--", "sh", "-c", "(%s) & (%s) & (%s) & wait" % (worker, worker, worker))
        self.assertEqual(r.code, 0, r)
        self.assertEqual(sorted(r.stdout.split()), ["in", "out:75", "out:75"], r)
        self.assertEqual(self.cluster.values("db-migrate"), [None] * 5)

    def test_the_same_name_on_other_servers_is_another_lock(self):
        # REDLOCK_KEY alone is not the lock: the same key on other servers is taken with a token of
        # its own, and waited for like any other lock.
        other = Cluster(1)
        self.addCleanup(other.stop)
        b = redlock_binary()
        r = self.rl("run", "job", "--", "sh", "-c", "{b} -S {spec} acquire -n job; echo $REDLOCK_TOKEN".format(
            b=b, spec=other.spec))
        self.assertEqual(r.code, 0, r)
        inner, token = r.stdout.split()
        self.assertNotEqual(inner, token)
        self.assertEqual(other.values("job"), [inner.encode()])

    def test_an_outer_lock_taken_again_further_down_is_reentered_not_released(self):
        # run a -- run b -- run a: the innermost finds a held with the inherited token. It must
        # re-enter, neither wait for its grandparent nor release a lock that is not its own to free.
        b = redlock_binary()
        report = self.path("inner-a.json")
        inner = "{b} run -w 2s --report {rep} a -- true; echo $?; {b} status a; echo $?".format(b=b, rep=report)
        r = self.rl("run", "a", "--", "sh", "-c", 'echo $REDLOCK_FENCE; exec "$0" run b -- sh -c "$1"', b, inner)
        self.assertEqual(r.code, 0, r)
        fence, *lines = r.stdout.split()
        self.assertEqual(lines[0], "0", r)
        self.assertEqual(lines[-1], "0", r)  # a is still held once the innermost run ended
        with open(report) as f:
            rep = json.load(f)
        self.assertTrue(rep["nested"], rep)
        self.assertEqual(rep["fence"], int(fence), rep)  # a's own, handed down through b
        self.assertEqual(self.cluster.values("a"), [None] * 5)

    def test_report_is_written_whatever_the_outcome(self):
        cases = [
            (["run", "job", "--", "true"], 0, "child_exited"),
            (["run", "job", "--", "sh", "-c", "kill -USR1 $$"], 138, "child_signaled"),
            (["run", "job", "--", "no-such-command-anywhere"], 127, "error"),
        ]
        for args, code, outcome in cases:
            path = self.path("r.json")
            r = self.rl(*(args[:2] + ["--report", path] + args[2:]))
            self.assertEqual(r.code, code, r)
            rep = json.load(open(path))
            self.assertEqual(rep["outcome"], outcome, rep)
            self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
            for key in ("version", "command", "name", "key", "outcome", "child_exit", "signal", "token", "fence",
                        "held_ms", "renewals"):
                self.assertIn(key, rep)
        self.assertEqual(rep["command"], "run")
        self.rl("acquire", "job")
        r = self.rl("run", "-n", "job", "--report", self.path("busy.json"), "--", "true")
        self.assertEqual(self.report("busy.json")["outcome"], "busy")
        r = self.rl("run", "job", "--report", self.path("bad.json"), "--ttl", "0", "--", "true")
        self.assertEqual(r.code, 64)
        self.assertEqual(self.report("bad.json")["outcome"], "error")

    def test_a_report_that_cannot_be_written_is_78_and_the_command_never_runs(self):
        marker = self.path("ran")
        for report in ("/nonexistent/a\nb", self.tmp):
            with self.subTest(report=report):
                r = self.rl("run", "other", "--report", report, "--", "touch", marker)
                self.assertEqual(r.code, 78, r)
                self.assertEqual(len(r.stderr.splitlines()), 1, r)
                self.assertRegex(r.stderr, r"^redlock: error: --report '.*'(: No such file or directory| is a directory;)")
                self.assertFalse(os.path.exists(marker))
                self.assertEqual(self.cluster.values("other"), [None] * 5)

    def test_a_report_that_can_no_longer_be_written_at_the_end_is_a_one_line_warning(self):
        # The place was fine when the run began; the command took it away. Its status stands.
        d = self.path("reports")
        os.mkdir(d)
        r = self.rl("run", "other", "--report", os.path.join(d, "r.json"), "--", "rmdir", d)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.stderr, "redlock: warning: --report '%s/r.json': No such file or directory\n" % d)
        self.assertEqual(self.cluster.values("other"), [None] * 5)


class PrivateFiles(RunTest):
    """--report and --token-file carry the token: 0600 whatever the umask, never through a link."""

    def test_private_whatever_the_umask_and_no_planted_link_is_followed(self):
        for option in ("--report", "--token-file"):
            for planted in ("path", "temporary"):
                with self.subTest(option=option, planted=planted):
                    target = self.path("victim")
                    with open(target, "w") as f:
                        f.write("untouched\n")
                    out = self.path("out" + option + planted)
                    # A link at FILE itself, or where a temporary file named after redlock's pid would be.
                    script = ('ln -s "$1" "$2"; ' if planted == "path" else 'ln -s "$1" "$2.tmp.$$"; ') + \
                        'umask 0; shift 2; exec "$@"'
                    p = subprocess.run(["sh", "-c", script, "sh", target, out, redlock_binary(), "run", "job", option,
                                        out, "--", "true"],
                                       env=dict(clean_env(None), REDLOCK_SERVERS=self.cluster.spec),
                                       capture_output=True, timeout=30)
                    self.assertEqual(p.returncode, 0, p)
                    with open(target) as f:
                        self.assertEqual(f.read(), "untouched\n")
                    st = os.lstat(out)
                    self.assertTrue(stat.S_ISREG(st.st_mode), "a link was followed")
                    self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)
                    for name in os.listdir(self.tmp):
                        if ".tmp." in name and not os.path.islink(self.path(name)):
                            self.fail("temporary file left: " + name)


    def test_a_device_or_a_pipe_is_never_replaced(self):
        # Renamed over, /dev/null would be a file of ours: refused before anything is taken, and
        # where one appeared since (the command made it), left alone with a warning.
        fifo = self.path("fifo")
        os.mkfifo(fifo)
        for option in ("--report", "--token-file"):
            for path, what in ((os.devnull, "a device"), (fifo, "a pipe")):
                with self.subTest(option=option, path=path):
                    r = self.rl("run", "job", option, path, "--", "touch", self.path("ran"))
                    self.assertEqual((r.code, r.stderr), (78, "redlock: error: %s '%s' is %s; only a regular file is "
                                                              "replaced\n" % (option, path, what)), r)
                    self.assertFalse(os.path.exists(self.path("ran")))
                    self.assertEqual(self.cluster.values("job"), [None] * 5)
        self.assertTrue(stat.S_ISCHR(os.stat(os.devnull).st_mode))
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        # A link to one (or into /dev or /proc: /dev/stdout names /proc/self/fd/1, even when standard
        # output is a regular file) is refused too: replaced, /dev/stdout would be gone for everyone.
        links = {"to-null": (os.devnull, "a link into /dev or /proc"), "to-fifo": (fifo, "a link to a pipe"),
                 "to-fd": ("/proc/self/fd/1", "a link into /dev or /proc"), "to-dir": (self.tmp, "a link to a directory")}
        for name, (target, what) in links.items():
            link = self.path(name)
            os.symlink(target, link)
            with self.subTest(link=name):
                with open(self.path("stdout"), "w") as out:
                    p = subprocess.run([redlock_binary(), "run", "job", "--report", link, "--", "touch", self.path("ran")],
                                       env=dict(clean_env(None), REDLOCK_SERVERS=self.cluster.spec), stdout=out,
                                       stderr=subprocess.PIPE, text=True, timeout=30)
                self.assertEqual((p.returncode, p.stderr), (78, "redlock: error: --report '%s' is %s; only a regular "
                                                               "file is replaced\n" % (link, what)), p)
                self.assertEqual(os.readlink(link), target)
                self.assertFalse(os.path.exists(self.path("ran")))
        late = self.path("late")
        r = self.rl("run", "job", "--report", late, "--", "mkfifo", late)
        self.assertEqual(r.code, 0, r)
        self.assertIn("--report '%s' is a pipe; only a regular file is replaced" % late, r.stderr)
        self.assertTrue(stat.S_ISFIFO(os.lstat(late).st_mode))
        self.assertEqual([n for n in os.listdir(self.tmp) if ".tmp." in n], [])

    def test_an_empty_path_is_a_usage_error(self):
        for option in ("--report", "--token-file"):
            with self.subTest(option=option):
                r = self.rl("run", "job", option, "", "--", "touch", self.path("ran"))
                self.assertEqual((r.code, r.stderr), (64, "redlock: error: %s: must not be empty\n" % option), r)
                self.assertFalse(os.path.exists(self.path("ran")))
        for command in (["acquire", "-n"], ["release"], ["extend"]):
            with self.subTest(command=command[0]):
                r = self.rl(*command, "job", "--token-file", "")
                self.assertEqual((r.code, r.stderr), (64, "redlock: error: --token-file: must not be empty\n"), r)


class TokenFile(RunTest):
    def test_the_token_is_written_before_the_command_starts(self):
        tf = self.path("token")
        r = self.rl("run", "job", "--token-file", tf, "--", "sh", "-c", 'cat "$1"; echo "$REDLOCK_TOKEN"; stat -c %a "$1"',
                    "sh", tf)
        self.assertEqual(r.code, 0, r)
        from_file, from_env, mode = r.stdout.split("\n")[:3]
        self.assertEqual((from_file, mode), (from_env, "600"), r)
        self.assertRegex(from_env, r"^[0-9a-f]{32}$")

    def test_a_token_file_that_cannot_be_written_is_78_and_the_command_never_runs(self):
        marker = self.path("ran")
        r = self.rl("run", "job", "--token-file", self.path("no/such/dir/token"), "--report", self.path("r.json"),
                    "--", "touch", marker)
        self.assertEqual(r.code, 78, r)
        self.assertIn("--token-file", r.stderr)
        self.assertEqual(len(r.stderr.splitlines()), 1, r)
        self.assertFalse(os.path.exists(marker))
        self.assertEqual(self.report("r.json")["outcome"], "error")
        self.assertEqual(self.cluster.values("job"), [None] * 5)

    def test_a_nested_run_writes_the_inherited_token(self):
        tf = self.path("token")
        r = self.rl("run", "job", "--", "sh", "-c",
                    '%s run job --token-file "$1" -- true && cat "$1" && echo "$REDLOCK_TOKEN"' % redlock_binary(),
                    "sh", tf)
        self.assertEqual(r.code, 0, r)
        lines = r.stdout.split()
        self.assertEqual(len(lines), 2, r)
        self.assertEqual(lines[0], lines[1], r)


class Concurrent(RunTest):
    def test_eight_loops_never_lose_an_update_with_a_server_frozen_now_and_then(self):
        counter = self.path("counter")
        with open(counter, "w") as f:
            f.write("0")
        # Read, pause, write: any overlap of two holders loses an update.
        body = "n=$(cat %s); sleep 0.002; echo $((n+1)) > %s" % (counter, counter)
        runs_each = 12
        failures = []
        successes = []

        def worker():
            for _ in range(runs_each):
                r = redlock(["--timeout", "100ms", "run", "-w", "60s", "--ttl", "5s", "counter", "--", "sh", "-c",
                             body], servers=self.cluster)
                (successes if r.code == 0 else failures).append(r)

        stop = threading.Event()

        def freezer():
            rnd = random.Random(7)
            while not stop.is_set():
                s = self.cluster.servers[rnd.randrange(5)]
                s.freeze()
                stop.wait(0.2)
                s.thaw()
                stop.wait(0.3)

        threads = [threading.Thread(target=worker) for _ in range(8)]
        f = threading.Thread(target=freezer)
        f.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=240)
        stop.set()
        f.join()
        self.assertEqual(failures, [])
        with open(counter) as fh:
            self.assertEqual(int(fh.read()), len(successes))
        self.assertEqual(len(successes), 8 * runs_each)


if __name__ == "__main__":
    main()
