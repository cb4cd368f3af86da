"""`redlock elect`: two standby loops as two hosts, whose command records when it starts and stops.
Whatever happens to the leader (SIGKILL, TERM, its servers frozen past the TTL), the old leader's
command is dead before the new one's starts (0 overlaps), and REDLOCK_TERM grows from term to term.
`--once`/`--max-terms` end with the command's status; `--observe` prints a line per change of
leader. The failover times are printed on stderr (FAILOVER ...)."""

import json
import os
import re
import select
import signal
import subprocess
import sys
import time

from harness import ClusterTest, listeners, main, pid_alive, spawn, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fault"))
from proxy import Proxy  # noqa: E402  (the fault suite's TCP proxy: a partition on loopback)

TTL = 1.0

# The service: records "start HOST TERM PID NS" and, when stopped by a signal, "stop ...". A SIGKILL
# (from the guard, when redlock dies) leaves no stop line: the test sees the process die instead.
SERVICE = ('echo "start $HOST_ID $REDLOCK_TERM $$ $(date +%s%N)" >> "$RECORDS"; '
           'trap \'echo "stop $HOST_ID $REDLOCK_TERM $$ $(date +%s%N)" >> "$RECORDS"; exit 0\' TERM; '
           'sleep 30 & wait')


class Elect(ClusterTest):
    N = 3

    def setUp(self):
        super().setUp()
        self.records = os.path.join(self.scratch_dir(), "records")
        self.deaths = {}  # pid -> when it was seen dead (an upper bound of its death), for commands SIGKILLed

    def host(self, host_id, *extra, servers=None):
        p = spawn(["elect", "svc", "--ttl", "1s", *extra, "-c", SERVICE], servers=servers or self.cluster,
                  env={"HOST_ID": host_id, "RECORDS": self.records}, stdout=subprocess.DEVNULL,
                  stderr=subprocess.PIPE)
        self.addCleanup(self.stop, p)
        return p

    def stop(self, p):
        """Stops P with TERM; its stderr."""
        if not hasattr(p, "err"):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            try:
                _, p.err = p.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                _, p.err = p.communicate()
        return p.err or b""

    def events(self):
        try:
            with open(self.records) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            kind, host, term, pid, ns = line.split()
            out.append({"kind": kind, "host": host, "term": int(term), "pid": int(pid), "t": int(ns) / 1e9})
        return out

    def starts(self, host=None):
        return [e for e in self.events() if e["kind"] == "start" and host in (None, e["host"])]

    def leader_started(self, host, count=1):
        return wait_for(lambda: len(self.starts(host)) >= count and self.starts(host)[count - 1], timeout=10,
                        what="%s to lead (term %d)" % (host, count))

    def wait_standing_by(self):
        """Until the standby is subscribed to the lock's wake-ups on every server."""
        def subscribed():
            for s in self.cluster.servers:
                with s.client() as c:
                    if listeners(c, "{svc}:redlock:wake") < 1:
                        return False
            return True
        wait_for(subscribed, timeout=10, what="the standby to subscribe")
        time.sleep(0.1)  # and to take in the answer to its attempt after subscribing

    def leader_and_standby(self):
        """Host a leading (with its first start record), host b standing by."""
        a = self.host("a")
        first = self.leader_started("a")
        b = self.host("b")
        self.wait_standing_by()
        return a, first, b

    def assert_no_overlap(self):
        """Every command's life, from its start line to its stop line (or to when it was seen dead),
        ends before the next one starts; the terms grow."""
        lives = {}
        for e in self.events():
            life = lives.setdefault(e["pid"], {"host": e["host"], "term": e["term"], "end": self.deaths.get(e["pid"])})
            if e["kind"] == "start":
                life["start"] = e["t"]
            else:
                life["end"] = e["t"]
        ordered = sorted(lives.values(), key=lambda life: life["start"])
        for before, after in zip(ordered, ordered[1:]):
            self.assertIsNotNone(before["end"], ("still running when the next started", before, after))
            self.assertLess(before["end"], after["start"], ("overlap", before, after))
            self.assertLess(before["term"], after["term"], ("REDLOCK_TERM must grow", before, after))
        return ordered

    def test_sigkill_of_the_leader(self):
        a, first, b = self.leader_and_standby()
        killed_at = time.time()
        a.kill()
        # The guard kills the command when redlock dies.
        wait_for(lambda: not pid_alive(first["pid"]), timeout=2, what="the dead leader's command to die")
        self.deaths[first["pid"]] = time.time()
        self.assertLess(self.deaths[first["pid"]] - killed_at, 0.5)
        second = self.leader_started("b")
        failover = second["t"] - killed_at
        print("FAILOVER sigkill: %.3fs (TTL %.1fs)" % (failover, TTL), file=sys.stderr)
        self.assertLess(failover, TTL + 0.5)
        self.assertGreater(second["term"], first["term"])
        self.assert_no_overlap()
        err = self.stop(b)
        self.assertEqual(b.returncode, 128 + signal.SIGTERM, err)

    def test_term_to_the_leader(self):
        a, first, b = self.leader_and_standby()
        asked_at = time.time()
        a.send_signal(signal.SIGTERM)
        second = self.leader_started("b")
        failover = second["t"] - asked_at
        print("FAILOVER term: %.3fs" % failover, file=sys.stderr)
        self.assertLess(failover, 0.5)
        a.wait(timeout=10)
        err = self.stop(a)
        self.assertEqual(a.returncode, 128 + signal.SIGTERM, err)
        self.assertIn(b"term %d over after" % first["term"], err)
        self.assertGreater(second["term"], first["term"])
        self.assert_no_overlap()
        # The standby that never led goes too, at once.
        self.stop(b)
        self.assertEqual(b.returncode, 128 + signal.SIGTERM)

    def test_the_leaders_servers_frozen_past_the_ttl(self):
        a, first, _ = self.leader_and_standby()
        frozen_at = time.time()
        for s in self.cluster.servers[:2]:
            s.freeze()
        try:
            time.sleep(TTL * 1.6)
        finally:
            for s in self.cluster.servers[:2]:
                s.thaw()
        # The leader lost its lock: its command was stopped, and someone leads again.
        wait_for(lambda: [e for e in self.starts() if e["term"] > first["term"]], timeout=10,
                 what="a new term after the servers came back")
        lives = self.assert_no_overlap()
        self.assertGreaterEqual(len(lives), 2)
        stops = [e for e in self.events() if e["kind"] == "stop" and e["pid"] == first["pid"]]
        self.assertEqual(len(stops), 1, self.events())
        # Stopped before its lock's validity could end: before the servers came back, whoever
        # raced for it then.
        self.assertLess(stops[0]["t"], frozen_at + TTL, (frozen_at, self.events()))
        self.assertIn(b"lock lost while the command ran", self.stop(a))

    def test_the_leader_alone_partitioned_away(self):
        """The leader reaches every server through a proxy, the standby directly: cutting the proxies
        partitions the leader alone. Its command is stopped before its lock's validity ends, and the
        standby, which still sees every server, leads only after that."""
        proxies = [Proxy(s.port) for s in self.cluster.servers]
        for proxy in proxies:
            self.addCleanup(proxy.close)
        a = self.host("a", servers=",".join("redis://" + proxy.address for proxy in proxies))
        first = self.leader_started("a")
        self.host("b")
        self.wait_standing_by()
        cut_at = time.time()
        for proxy in proxies:
            proxy.cut()
        second = self.leader_started("b")
        print("FAILOVER partition: %.3fs (TTL %.1fs)" % (second["t"] - cut_at, TTL), file=sys.stderr)
        stops = [e for e in self.events() if e["kind"] == "stop" and e["pid"] == first["pid"]]
        self.assertEqual(len(stops), 1, self.events())
        self.assertLess(stops[0]["t"], cut_at + TTL, (cut_at, self.events()))
        self.assertGreater(second["term"], first["term"])
        self.assert_no_overlap()
        for proxy in proxies:
            proxy.heal()
        self.assertIn(b"lock lost while the command ran", self.stop(a))

    def test_once_ends_with_the_commands_status_and_lets_go(self):
        r = self.rl("elect", "svc", "--once", "--ttl", "1s", "-c", "exit 3")
        self.assertEqual(r.code, 3, r)
        self.assertRegex(r.stderr, r"^redlock: svc: term (\d+) begins, led by [^\n]+\n"
                                   r"redlock: svc: term \1 over after [^:]+: the command exited with 3\n$")
        self.assertEqual(self.rl("status", "svc").code, 1)
        # A command that cannot be run ends its term too (and the loop: trying again changes nothing).
        r = self.rl("elect", "svc", "--ttl", "1s", "--", "/nonexistent/cmd")
        self.assertEqual(r.code, 127, r)
        # (In a sanitizer build, the child that could not exec may warn in between: its own stack.)
        lines = r.stderr.splitlines()
        term = re.match(r"^redlock: svc: term (\d+) begins, led by ", lines[0])
        self.assertIsNotNone(term, r)
        self.assertEqual(lines[-2], "redlock: error: /nonexistent/cmd: No such file or directory", r)
        self.assertRegex(lines[-1], r"^redlock: svc: term %s over after [^:]+: the command could not be run, exit 127$"
                         % term.group(1))
        self.assertEqual(self.rl("status", "svc").code, 1)

    def test_a_command_killed_by_sigint_or_sigquit_ends_the_loop_as_a_shells_loop_ends(self):
        # ^C and ^\ at the terminal reach the command's group only: the loop ends, not a new term.
        for sig, status in (("INT", 130), ("QUIT", 131)):
            kill = "import os, signal; os.kill(os.getpid(), signal.SIG%s)" % sig
            r = self.rl("--json", "elect", "svc", "--max-terms", "3", "--ttl", "1s", "--", sys.executable, "-c", kill)
            self.assertEqual(r.code, status, r)
            objects = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
            self.assertEqual([(o["terms"], o["signal"]) for o in objects], [(1, "SIG" + sig)], r)
            self.assertEqual(self.rl("status", "svc").code, 1)
        # Another signal is the command's end, not the user's: the loop goes on.
        r = self.rl("--json", "elect", "svc", "--max-terms", "2", "--ttl", "1s", "-c", "kill -USR1 $$")
        self.assertEqual(len([line for line in r.stdout.splitlines() if line.startswith("{")]), 2, r)

    def test_terms_grow_and_each_is_reported(self):
        report = os.path.join(self.scratch_dir(), "report")
        r = self.rl("--json", "elect", "svc", "--max-terms", "3", "--ttl", "1s", "--retry-delay", "20ms", "--report",
                    report, "--", "sh", "-c", 'echo "$REDLOCK_TERM $REDLOCK_FENCE"; exit 5')
        self.assertEqual(r.code, 5, r)
        # CMD's line, then the term's object on a line of its own (after a line break, on a pipe).
        lines = [line for line in r.stdout.splitlines() if line]
        terms = [line.split() for line in lines if not line.startswith("{")]
        objects = [json.loads(line) for line in lines if line.startswith("{")]
        self.assertEqual(len(terms), 3, r)
        self.assertEqual(len(objects), 3, r)
        self.assertTrue(all(term == fence for term, fence in terms))
        fences = [int(term) for term, _ in terms]
        self.assertEqual(fences, sorted(set(fences)))
        self.assertEqual([o["fence"] for o in objects], fences)
        self.assertEqual([o["terms"] for o in objects], [1, 2, 3])
        self.assertEqual({(o["command"], o["outcome"], o["child_exit"], o["released"]) for o in objects},
                         {("elect", "child_exited", 5, True)})
        with open(report) as f:
            self.assertEqual(json.loads(f.read()), objects[-1])

    def test_bad_use(self):
        for args, says in ((["elect", "svc"], "elect needs a command"),
                           (["elect", "svc", "--observe", "--", "true"], "--observe takes no command"),
                           (["elect", "svc", "--once", "--max-terms", "2", "--", "true"], "exclude each other"),
                           (["elect", "svc", "--max-terms", "0", "--", "true"], "--max-terms"),
                           # Two holders of a semaphore's slots would both lead.
                           (["elect", "svc", "--limit", "2", "--", "true"], "elect takes no --limit"),
                           (["elect", "svc", "--observe", "--limit", "2"], "elect takes no --limit"),
                           # An observer never campaigns: a candidate's options are a mistake, not
                           # ignored while it watches for ever.
                           (["elect", "svc", "--observe", "--once"], "--once is a candidate's"),
                           (["elect", "--max-terms", "2", "svc", "--observe"], "--max-terms is a candidate's"),
                           (["elect", "svc", "-w", "1s", "--observe"], "-w is a candidate's"),
                           (["elect", "svc", "--observe", "-n"], "-n is a candidate's"),
                           (["elect", "svc", "--shared", "--", "true"], "elect takes no --shared")):
            r = self.rl(*args)
            self.assertEqual((r.code, r.out), (64, b""), (args, r))
            self.assertTrue(r.stderr.startswith("redlock: error: ") and r.stderr.count("\n") == 1, r)
            self.assertIn(says, r.stderr)
        # Both from the environment: the variables are named.
        r = self.rl("elect", "svc", env={"REDLOCK_OBSERVE": "1", "REDLOCK_COMMAND": "true"})
        self.assertEqual(r.code, 64, r)
        self.assertIn("REDLOCK_OBSERVE and REDLOCK_COMMAND exclude each other", r.stderr)
        # A command on the command line beats REDLOCK_OBSERVE; --observe beats REDLOCK_COMMAND.
        for args in (["-c", "echo led"], ["--", "echo", "led"]):
            r = self.rl("elect", "svc", "--once", *args, env={"REDLOCK_OBSERVE": "1"})
            self.assertEqual((r.code, r.stdout), (0, "led\n"), r)
        p = spawn(["elect", "svc", "--observe"], servers=self.cluster, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                  env={"REDLOCK_COMMAND": "echo led"})
        self.addCleanup(self.stop, p)
        time.sleep(0.5)
        self.assertIsNone(p.poll(), "--observe with REDLOCK_COMMAND set ended: %s" % self.stop(p))
        # The environment gives way to a flag: REDLOCK_ONCE with --max-terms on the command line.
        r = self.rl("elect", "svc", "--max-terms", "2", "--retry-delay", "10ms", "--", "true",
                    env={"REDLOCK_ONCE": "1"})
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.stderr.count(" begins, led by "), 2, r)

    def test_observe_prints_a_line_per_change_of_leader(self):
        p = spawn(["elect", "svc", "--observe"], servers=self.cluster, stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE)
        self.addCleanup(self.stop, p)
        buffered = b""

        def line():
            nonlocal buffered
            deadline = time.monotonic() + 3
            while b"\n" not in buffered and time.monotonic() < deadline:
                if select.select([p.stdout], [], [], 0.1)[0]:
                    buffered += os.read(p.stdout.fileno(), 65536)
            self.assertIn(b"\n", buffered, "no line from --observe")
            text, buffered = buffered.split(b"\n", 1)
            return json.loads(text)

        self.assertEqual(line()["state"], "free")
        t1 = self.rl("acquire", "svc", "--owner", "one", "--ttl", "5s").stdout.strip()
        held = line()
        self.assertEqual((held["state"], held["owner"], held["command"]), ("held", "one", "elect"))
        self.assertRegex(held["since"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertEqual(self.rl("release", "svc", "--token", t1).code, 0)
        self.assertEqual(line()["state"], "free")
        self.rl("acquire", "svc", "--owner", "two", "--ttl", "300ms")
        second = line()
        self.assertEqual(second["owner"], "two")
        self.assertGreater(second["fence"], held["fence"])
        # Nobody says when a lock expires: the observer sees it all the same, soon after.
        taken = time.monotonic()
        self.assertEqual(line()["state"], "free")
        self.assertLess(time.monotonic() - taken, 1.0)
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=5)
        self.assertEqual(p.returncode, 128 + signal.SIGTERM)
        self.assertEqual(buffered + p.stdout.read(), b"")


if __name__ == "__main__":
    main()
