"""Sentinel groups as quorum members: `sentinel://S1,S2,S3/NAME` resolved through any answering
sentinel, the master's role checked, a vote counted once WAIT confirms a replica has it, and a long
`run` that follows its member through a failover (SENTINEL FAILOVER) and past a killed master.

Three groups, each a master, a replica and three redis-sentinel processes on free loopback ports
(down-after-milliseconds 1000). Group 1's master and replica take a password (given in its URL);
group 2's sentinels take one (read from ?sentinel_password_file=). Neither is ever printed."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from harness import SentinelGroup as Group, Server, main, redlock, script_calls, spawn, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fault"))
from proxy import Proxy  # noqa: E402  (the fault suite's TCP proxy)

MASTER_SECRET = "Mx-planted-0b7d51"
SENTINEL_SECRET = "Sx-planted-93ac2e"
ENV = {"REDLOCK_TIMEOUT": "1s"}


class FirstOnly(Proxy):
    """Forwards its first connection; later ones are taken and never answered: a sentinel that
    stops answering once it has named the master."""

    def __init__(self, target_port):
        self.accepted = 0
        super().__init__(target_port)

    async def _accept(self, reader, writer):
        self.accepted += 1
        if self.accepted == 1:
            return await super()._accept(reader, writer)
        await reader.read()
        writer.transport.abort()


class SentinelMembers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="redlock-sentinel-")
        cls.groups = []
        try:
            cls.groups.append(Group(cls.workdir, 0))
            cls.groups.append(Group(cls.workdir, 1, master_password=MASTER_SECRET))
            cls.groups.append(Group(cls.workdir, 2, sentinel_password=SENTINEL_SECRET))
        except Exception:
            cls.tearDownClass()
            raise
        cls.password_file = cls.groups[2].sentinel_password_file()

    @classmethod
    def tearDownClass(cls):
        for g in cls.groups:
            g.stop()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def urls(self):
        return [self.groups[0].url(), self.groups[1].url(), self.groups[2].url(self.password_file)]

    def rl(self, *args, env=None):
        r = redlock(list(args), servers=",".join(self.urls()), env=dict(ENV, **(env or {})))
        for secret in (MASTER_SECRET, SENTINEL_SECRET):
            self.assertNotIn(secret, r.stdout + r.stderr)
        return r

    def test_a_wait_outlasts_a_replica_that_lags(self):
        """A vote WAIT could not confirm is not yet, not never: a waiter tries again until the replica
        catches up."""
        group = self.groups[0]
        replica = next(x for x in group.servers if x.port != group.master_port())
        replica.freeze()
        thaw = threading.Timer(1.5, replica.thaw)
        thaw.start()
        try:
            start = time.monotonic()
            r = redlock(["--json", "--timeout", "300ms", "acquire", "-w", "10s", "sentinel-lag"], servers=group.url(),
                        env=ENV)
        finally:
            thaw.cancel()
            if replica.stopped:
                replica.thaw()
        self.assertEqual(r.code, 0, r)
        self.assertGreaterEqual(time.monotonic() - start, 1.4)
        self.assertGreater(r.json()["attempts"], 1)
        self.rl("release", "--token", r.json()["token"], "sentinel-lag")

    def test_acquire_status_release_through_the_sentinels(self):
        r = self.rl("--json", "acquire", "--ttl", "20s", "sentinel-basic")
        self.assertEqual(r.code, 0, r)
        j = r.json()
        token = j["token"]
        shown = [self.groups[0].shown(), self.groups[1].shown(), self.groups[2].shown(self.password_file)]
        voted = 0
        for g, s, member in zip(self.groups, j["servers"], shown):
            port = g.master_port()
            self.assertEqual(s["member"], member)
            if s["ok"] is None:
                continue  # a quorum decided before its answer came (a slow machine): nothing to check
            voted += 1
            self.assertEqual(s["resolved"], "127.0.0.1:%d" % port)
            self.assertEqual(s["role"], "master")
            self.assertTrue(s["ok"], s)
            self.assertEqual(g.get(port, "sentinel-basic"), token.encode())
            # WAIT confirmed a replica has it before the vote counted.
            replica = next(x for x in g.servers if x.port != port)
            self.assertEqual(g.get(replica.port, "sentinel-basic"), token.encode())
        self.assertGreaterEqual(voted, 2, j["servers"])
        r = self.rl("--json", "status", "sentinel-basic")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.json()["state"], "held")
        self.assertEqual([s["role"] for s in r.json()["servers"]], ["master"] * 3)
        r = self.rl("release", "--token", token, "sentinel-basic")
        self.assertEqual(r.code, 0, r)
        for g in self.groups:
            wait_for(lambda: g.get(g.master_port(), "sentinel-basic") is None, timeout=10, what="the lock released")

    def test_doctor_takes_a_sentinel_groups_replica_as_meant(self):
        r = self.rl("--json", "doctor", "--ttl", "1s")
        self.assertIn(r.code, (0, 1), r)  # persistence warns: these servers keep nothing on disk
        checks = {c["check"]: c for c in r.json()["checks"]}
        self.assertEqual(checks["master"]["verdict"], "ok", checks["master"])
        self.assertIn("Sentinel group", checks["master"]["summary"])
        self.assertEqual([s["role"] for s in r.json()["servers"]], ["master"] * 3)
        self.assertEqual([s["replicas"] for s in r.json()["servers"]], [1] * 3)
        self.assertEqual(checks["member-wait"]["verdict"], "ok", checks["member-wait"])

    def sentinel_check(self):
        r = self.rl("--json", "doctor", "--ttl", "1s")
        self.assertIn(r.code, (0, 1), r)
        check = next(c for c in r.json()["checks"] if c["check"] == "sentinel")
        self.assertEqual(len(check["servers"]), 3, check)  # a note per member, whatever its verdict
        return check, r.json()["servers"][2]["sentinels"]

    def test_doctor_sentinel_check_follows_its_sentinels(self):
        """sentinel: every seed sentinel answers CKQUORUM OK and knows the replica (ok); one of three
        killed (warn, naming it); two of three killed with quorum 2 (fail: no failover possible)."""
        group = self.groups[2]  # its sentinels take a password: asked with it, never printing it
        check, facts = self.sentinel_check()
        self.assertEqual(check["verdict"], "ok", check)
        self.assertEqual(facts, {"listed": 3, "answered": 3, "quorum_ok": 3, "no_quorum": 0, "replicas": 1})
        self.assertIn("CKQUORUM OK", check["servers"][2]["detail"])
        try:
            group.kill_sentinel(2)
            check, facts = self.sentinel_check()
            self.assertEqual(check["verdict"], "warn", check)
            self.assertEqual([n["verdict"] for n in check["servers"]], ["ok", "ok", "warn"], check)
            self.assertIn("2 of 3 sentinels answered (silent: 127.0.0.1:%d" % group.sentinels[2][0],
                          check["servers"][2]["detail"])
            self.assertEqual(facts["quorum_ok"], 2, facts)
            group.kill_sentinel(1)
            # The one left counts the others out once they are down for down-after-milliseconds (1s).
            wait_for(lambda: (group.ckquorum(0) or "").startswith("NOQUORUM"), timeout=15, interval=0.2,
                     what="the sentinel left to see no quorum")
            check, facts = self.sentinel_check()
            self.assertEqual(check["verdict"], "fail", check)
            self.assertIn("no failover possible", check["servers"][2]["detail"])
            self.assertEqual((facts["answered"], facts["quorum_ok"], facts["no_quorum"]), (1, 0, 1), facts)
        finally:
            for k in (1, 2):
                if group.sentinels[k][1].poll() is not None:
                    group.restart_sentinel(k)
            # The other tests fail this group over: every sentinel back, each seeing the quorum.
            wait_for(lambda: all((group.ckquorum(k) or "").startswith("OK 3 ") for k in range(3)), timeout=30,
                     interval=0.2, what="the sentinels back, each with the quorum")

    def test_mixed_members_in_one_list_and_repeated(self):
        plain = Server(self.workdir, 99).start()
        self.addCleanup(plain.kill)
        spec = "%s,%s,redis://127.0.0.1:%d" % (self.groups[0].url(), self.groups[2].url(self.password_file), plain.port)
        r = redlock(["--json", "acquire", "-n", "sentinel-mixed"], servers=spec, env=ENV)
        self.assertEqual(r.code, 0, r)
        servers = r.json()["servers"]
        token = r.json()["token"]
        # A quorum decides: the last member may be one the outcome did not wait for (ok null), never
        # a failed one; its copy of the lock arrives all the same.
        self.assertNotIn(False, [s["ok"] for s in servers], servers)
        self.assertGreaterEqual([s["ok"] for s in servers].count(True), 2, servers)
        self.assertEqual(servers[2]["member"], "redis://127.0.0.1:%d" % plain.port)
        wait_for(lambda: plain.get("sentinel-mixed") == token.encode(), timeout=10, what="the lock on the plain server")
        r = redlock(["-S", self.groups[0].url(), "-S", self.groups[2].url(self.password_file),
                     "-S", "127.0.0.1:%d" % plain.port, "--json", "release", "--token", token,
                     "sentinel-mixed"], env=ENV)
        self.assertEqual(r.code, 0, r)
        # A Sentinel member resolves its master before it sends anything: one the acquire did not
        # wait for may have had nothing sent before the process ended, and then says not_held.
        released = r.json()["servers"]
        self.assertTrue(all(s["ok"] or s["result"] == "not_held" for s in released), released)
        self.assertGreaterEqual([s["ok"] for s in released].count(True), 2, released)
        wait_for(lambda: plain.get("sentinel-mixed") is None, timeout=10, what="the lock gone from the plain server")
        for group in (self.groups[0], self.groups[2]):
            self.assertIsNone(group.get(group.master_port(), "sentinel-mixed"))

    def test_a_node_of_a_listed_group_is_refused_as_a_member_of_its_own(self):
        group = self.groups[2]
        replica = next(x for x in group.servers if x.port != group.master_port())
        master = group.master_port()
        for node in (replica.port, master):
            spec = "%s,redis://127.0.0.1:%d,redis://127.0.0.1:%d" % (group.url(self.password_file), node,
                                                                  self.groups[0].master_port())
            r = redlock(["--json", "acquire", "-n", "sentinel-node"], servers=spec, env=ENV)
            self.assertEqual(r.code, 78, r)
            self.assertIn("127.0.0.1:%d" % node, r.json()["error"]["message"])
            self.assertIsNone(group.get(master, "sentinel-node"))

    def test_more_replicas_than_the_master_has_cannot_confirm_a_vote(self):
        r = self.rl("--json", "--member-wait", "2", "--timeout", "1s", "acquire", "-n", "sentinel-wait2")
        self.assertEqual(r.code, 69, r)
        errors = [s["error"] for s in r.json()["servers"] if s["error"]]
        self.assertGreaterEqual(len(errors), 2, r.json())
        # WAIT is given 3/4 of the deadline; on a loaded machine a member may miss the rest of it,
        # which fails its vote all the same. At least one member must say why WAIT refused it.
        self.assertTrue(any("WAIT: 1 of 2 replicas" in e for e in errors), errors)
        self.assertTrue(all("WAIT: 1 of 2 replicas" in e or "no answer within" in e for e in errors), errors)
        r = self.rl("--member-wait", "x", "acquire", "-n", "sentinel-wait2")
        self.assertEqual(r.code, 64, r)
        self.assertIn("--member-wait", r.stderr)

    def test_a_vote_whose_wait_outlasts_the_deadline_is_given_back(self):
        """A vote whose WAIT answers after the deadline (a short --timeout: the sentinels' answer
        and the connection take part of it, the WAIT three quarters of the rest, and the server ends
        it late by up to a tick of its clock) failed, but the SET is there: the attempt's release
        must reach the master behind that WAIT, not die with the connection."""
        timed_out, errors = 0, []
        # Until the case came (WAIT may also answer in time, "1 of 2 replicas"), 20 tries at most.
        for i in range(20):
            if timed_out > 0 and i >= 4:
                break
            name = "sentinel-late-wait-%d" % i
            r = self.rl("--json", "--member-wait", "2", "--timeout", "10ms", "acquire", "-n", "--ttl", "60s", name)
            self.assertEqual(r.code, 69, r)
            # Any member's error, not only the first one the message names.
            errors += [s["error"] for s in r.json()["servers"]]
            timed_out += any("no answer within 10ms" in (e or "") for e in errors[-3:])
            for g in self.groups:
                self.assertIsNone(g.get(g.master_port(), name), (g.name, r.stderr))
        # The case this is about came at least once.
        self.assertGreater(timed_out, 0, errors)

    def test_a_vote_unanswered_by_its_deadline_is_given_back_on_its_own_connection(self):
        """The master, paused for writes (CLIENT PAUSE WRITE), runs the vote only after its
        deadline: the attempt's release must go to that master behind the vote, on the same
        connection, not wait for the sentinels to name a master again (here the sentinel stops
        answering once it has named it), which dropped it, leaving the lock there for its TTL."""
        g = self.groups[0]
        port = g.master_port()
        proxy = FirstOnly(g.sentinels[0][0])
        self.addCleanup(proxy.close)
        with g.server_at(port).client() as c:
            before = script_calls(c)
            # Long enough for a slow start to send the vote within it, short enough to end before
            # the attempt stops waiting for its release (a --timeout past the vote's, then 2 more).
            c.call("CLIENT", "PAUSE", "500", "WRITE")
        paused = time.monotonic()
        r = redlock(["--json", "--timeout", "200ms", "acquire", "-n", "--ttl", "60s", "sentinel-paused"],
                    servers="sentinel://%s/%s" % (proxy.address, g.name), env=ENV)
        self.assertEqual(r.code, 69, r)
        self.assertIn("no answer within 200ms", r.json()["servers"][0]["error"], r)
        time.sleep(max(0.0, paused + 0.6 - time.monotonic()))
        with g.server_at(port).client() as c:
            # The vote ran once the pause ended, and the release after it.
            self.assertGreaterEqual(script_calls(c) - before, 2)
        self.assertIsNone(g.get(port, "sentinel-paused"))

    def test_no_sentinel_answering_fails_the_member_within_the_timeout(self):
        dead = "sentinel://127.0.0.1:1,127.0.0.1:2/nobody"
        start = time.monotonic()
        r = redlock(["--json", "--timeout", "300ms", "acquire", "-n", "sentinel-dead"],
                    servers=",".join(self.urls()[:2] + [dead]), env=ENV)
        self.assertEqual(r.code, 0, r)  # two of three
        self.assertLess(time.monotonic() - start, 10)
        s = r.json()["servers"][2]
        self.assertFalse(s["ok"])
        self.assertIn("no sentinel named the master nobody", s["error"])
        self.assertIsNone(s["resolved"])
        self.rl("release", "--token", r.json()["token"], "sentinel-dead")

    def test_a_master_no_sentinel_knows_is_said_by_every_sentinel_asked(self):
        # The sentinel that answers is asked first: its word must not be lost behind a dead one's.
        g = self.groups[0]
        live = g.url().split("//", 1)[1].split(",", 1)[0]
        r = redlock(["acquire", "-n", "sentinel-unknown"], servers="sentinel://%s,127.0.0.1:1/nope" % live, env=ENV)
        self.assertEqual(r.code, 69, r)
        self.assertIn("no sentinel named the master nope (%s: " % live, r.stderr)
        self.assertIn("; 127.0.0.1:1: ", r.stderr)

    def test_a_secret_stays_out_of_output_and_the_command_environment(self):
        down = "sentinel://%s:%s@127.0.0.1:1/gone?sentinel_password_file=%s" % ("u", MASTER_SECRET, self.password_file)
        r = redlock(["-vv", "--json", "--timeout", "300ms", "acquire", "-n", "sentinel-secret"],
                    servers=",".join(self.urls() + [down]), env=ENV)
        self.assertEqual(r.code, 0, r)
        self.assertNotIn(MASTER_SECRET, r.stdout + r.stderr)
        self.assertNotIn(SENTINEL_SECRET, r.stdout + r.stderr)
        self.assertIn("sentinel://u:***@127.0.0.1:1/gone", r.stdout)
        self.rl("release", "--token", r.json()["token"], "sentinel-secret")
        r = self.rl("run", "sentinel-secret", "--", "env")
        self.assertEqual(r.code, 0, r)
        self.assertIn("REDLOCK_SERVERS=sentinel://", r.stdout)

    def test_run_follows_its_member_after_its_master_dies(self):
        group = self.groups[1]
        old = group.master_port()
        out = os.path.join(self.workdir, "run-killed.out")
        with open(out, "wb") as f:
            # A TTL longer than a failover takes on a busy machine: the key WAIT put on the replica
            # must not expire before the replica is promoted.
            proc = spawn(["run", "--ttl", "8s", "--renew", "300ms", "sentinel-killed", "--", "sleep", "12"],
                         servers=",".join(self.urls()), env=ENV, stdout=f, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: group.get(old, "sentinel-killed"), timeout=10, what="the lock")
            token = group.get(old, "sentinel-killed")
            group.server_at(old).kill()
            wait_for(lambda: group.master_port() != old, timeout=30, interval=0.1, what="the failover")
            new = group.master_port()
            # The write WAIT confirmed is on the promoted replica; taken away there, the run's renewals,
            # on the new master now, put it back.
            self.assertEqual(group.get(new, "sentinel-killed"), token)
            with group.server_at(new).client(password=MASTER_SECRET) as c:
                c.call("DEL", "sentinel-killed")
            wait_for(lambda: group.get(new, "sentinel-killed") == token, timeout=8, interval=0.05,
                     what="the lock back on the new master")
            self.assertIsNone(proc.poll(), "the run stopped")
            proc.wait(timeout=30)
        finally:
            self.stop_run(proc)
        self.assert_ran_through(proc, out, (MASTER_SECRET,))

    @staticmethod
    def stop_run(proc):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)

    def assert_ran_through(self, proc, out, secrets):
        """The run ended with 0, and its output (in OUT) shows none of SECRETS."""
        with open(out, "rb") as f:
            text = f.read().decode(errors="replace")
        self.assertEqual(proc.returncode, 0, text)
        for secret in secrets:
            self.assertNotIn(secret, text)

    def test_run_follows_its_member_through_a_failover(self):
        group = self.groups[0]
        old = group.master_port()
        out = os.path.join(self.workdir, "run-failover.out")
        with open(out, "wb") as f:
            proc = spawn(["-vv", "run", "--ttl", "3s", "--renew", "300ms", "sentinel-failover", "--", "sleep", "10"],
                         servers=",".join(self.urls()), env=ENV, stdout=f, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: group.get(old, "sentinel-failover"), timeout=10, what="the lock")
            token = group.get(old, "sentinel-failover")
            # On every member first (a member whose answer came after the quorum gets it from a
            # renewal): held on exactly a quorum, the failover of one of them loses it, as it must.
            wait_for(lambda: all(g.get(g.master_port(), "sentinel-failover") == token for g in self.groups),
                     timeout=10, interval=0.05, what="the lock on every member")
            with group.sentinel_client() as c:
                c.call("SENTINEL", "FAILOVER", group.name)
            wait_for(lambda: group.master_port() != old, timeout=20, interval=0.1, what="the failover")
            new = group.master_port()
            # Gone from the new master (as if it had missed the write): the run's renewals follow the
            # member to the new master (the old one stays a master for seconds yet) and put it back.
            with group.server_at(new).client() as c:
                c.call("DEL", "sentinel-failover")
            try:
                wait_for(lambda: group.get(new, "sentinel-failover") == token, timeout=8, interval=0.05,
                         what="the lock back on the new master")
            except AssertionError:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=10)
                with open(out, "rb") as f:
                    raise AssertionError("not healed on the new master; the run said: " + f.read().decode(errors="replace"))
            self.assertIsNone(proc.poll(), "the run stopped")
            proc.wait(timeout=30)
        finally:
            self.stop_run(proc)
        self.assert_ran_through(proc, out, (MASTER_SECRET, SENTINEL_SECRET))

    def test_without_member_wait_a_member_that_forgets_lets_two_hold(self):
        """The safety model's case for WAIT, played out: a member whose master fails over before its
        replica has the lock forgets it. Members: group 2 and two standalone servers, one of them
        frozen, so a holder has exactly a quorum. With the default --member-wait the unconfirmed vote
        does not count and nobody holds; with --member-wait 0 it counts, the group forgets, and a
        second client takes the lock the first still holds (the negative control)."""
        group = self.groups[2]
        plain = [Server(self.workdir, 97 + k).start() for k in range(2)]
        for p in plain:
            self.addCleanup(p.kill)
        spec = "%s,redis://127.0.0.1:%d,redis://127.0.0.1:%d" % (group.url(self.password_file), plain[0].port,
                                                              plain[1].port)
        old = group.master_port()
        replica = next(x for x in group.servers if x.port != old)
        plain[1].freeze()
        replica.freeze()
        try:
            args = ["--json", "--timeout", "3s", "acquire", "-n", "--ttl", "60s", "sentinel-forgets"]
            guarded = redlock(args, servers=spec, env=ENV)
            self.assertEqual(guarded.code, 69, guarded)  # one vote (the plain server's) of the two needed
            self.assertIn("WAIT: 0 of 1 replicas", guarded.json()["servers"][0]["error"])
            # The write WAIT could not confirm was taken back before the attempt ended.
            self.assertIsNone(group.get(old, "sentinel-forgets"))
            # The replica loses its link (pointed at a closed port), so the next write never reaches it.
            replica.thaw()
            with replica.client() as c:
                c.call("REPLICAOF", "127.0.0.1", "1")
            # The master lists no replica now, but the sentinels know one they could promote (once
            # they see it up again after its freeze).
            wait_for(lambda: group.replica_flags(replica.port) == "slave", timeout=10, interval=0.1,
                     what="the sentinels to see the replica up")
            guarded = redlock(args, servers=spec, env=ENV)
            self.assertEqual(guarded.code, 69, guarded)
            self.assertIn("WAIT: 0 of 1 replicas", guarded.json()["servers"][0]["error"])
            first = redlock(["--member-wait", "0"] + args, servers=spec, env=ENV)
            self.assertEqual(first.code, 0, first)
            self.assertEqual(group.get(old, "sentinel-forgets"), first.json()["token"].encode())
            group.server_at(old).kill()
        finally:
            if replica.stopped:
                replica.thaw()
            plain[1].thaw()
        wait_for(lambda: group.master_port() == replica.port, timeout=30, interval=0.1, what="the failover")
        self.assertIsNone(group.get(replica.port, "sentinel-forgets"))  # the write it never had
        second = redlock(["--member-wait", "0"] + args, servers=spec, env=ENV)
        self.assertEqual(second.code, 0, second)  # two holders at once: what --member-wait prevents
        self.assertNotEqual(second.json()["token"], first.json()["token"])


if __name__ == "__main__":
    main()
