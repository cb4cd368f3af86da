"""list and watch against real servers: every lock under the prefix with the state rule of status,
helper keys never listed, a frozen server named without holding up the others, 10,000 locks on
five servers; and the events on one lock, each told once and in order, with --until."""

import json
import os
import select
import signal
import subprocess
import time
import unittest

from harness import Cluster, ClusterTest, main, redlock, spawn, wait_for

import redis  # after harness, which finds a python3 that has it


def lock_rows(result):
    return {row["name"]: row for row in result.json()["locks"]}


class List(ClusterTest):
    N = 3

    def rl(self, *args, **kw):
        return super().rl("--prefix", "locks:", *args, **kw)

    def test_held_partial_and_expired_locks_with_the_state_rule_of_status(self):
        held = self.rl("acquire", "held", "--ttl", "30s", "--owner", "alice")
        self.assertEqual(held.code, 0, held)
        # Held on one of three: free by the rule of status (a quorum holds nothing); two tokens on
        # two of three: partial.
        with self.cluster.servers[0].client() as c:
            c.call("SET", "locks:one", "t0k3n", "PX", "30000")
            c.call("SET", "locks:partial", "t0k3n", "PX", "30000")
            c.call("HSET", "locks:a-hash", "f", "v")  # another kind of data under the prefix
            c.call("SET", "locks:a-string", "v")  # a string without an expiry: data, not a lock
        with self.cluster.servers[1].client() as c:
            c.call("SET", "locks:partial", "other", "PX", "30000")
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("SET", "other:job", "x", "PX", "30000")  # outside the prefix
        self.assertEqual(self.rl("acquire", "{t}tagged").code, 0)  # its helpers are locks:{t}tagged:redlock:…
        self.assertEqual(self.rl("acquire", "gone", "--ttl", "50ms").code, 0)
        wait_for(lambda: self.cluster.values("locks:gone") == [None] * 3, timeout=5, what="the lock to expire")

        r = self.rl("--json", "list")
        self.assertEqual(r.code, 0, r)
        rows = lock_rows(r)
        # The expired lock keeps its fence: a free name with a fence is listed; helper keys never are.
        self.assertEqual(sorted(rows), ["gone", "held", "one", "partial", "{t}tagged"])
        h = rows["held"]
        self.assertEqual((h["key"], h["state"], h["owner"], h["mode"], h["servers_held"]),
                         ("locks:held", "held", "alice", "mutex", 3))
        self.assertEqual(h["token"], held.stdout.strip())
        self.assertTrue(25000 < h["ttl_ms"] <= 30000, h)
        self.assertGreaterEqual(h["fence"], 1)
        self.assertRegex(h["since"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        p = rows["partial"]
        self.assertEqual((p["state"], p["servers_held"], p["ttl_ms"], p["owner"]), ("partial", 2, None, None))
        self.assertEqual((rows["one"]["state"], rows["one"]["servers_held"]), ("free", 1))
        g = rows["gone"]
        self.assertEqual((g["state"], g["servers_held"], g["token"]), ("free", 0, None))
        self.assertGreaterEqual(g["fence"], 1)
        # The same words as status.
        for name, row in rows.items():
            self.assertEqual(self.rl("--json", "status", name).json()["state"], row["state"])
        j = r.json()
        self.assertEqual([s["ok"] for s in j["servers"]], [True] * 3)
        self.assertEqual(j["quorum"], {"needed": 2, "ok": 3, "total": 3})

        plain = self.rl("list")
        self.assertEqual(plain.code, 0, plain)
        lines = plain.stdout.splitlines()
        self.assertEqual(lines[0].split(), ["NAME", "STATE", "OWNER", "SINCE", "TTL", "FENCE", "SERVERS"])
        self.assertEqual([line.split()[:2] for line in lines[1:]],
                         [["gone", "free"], ["held", "held"], ["one", "free"], ["partial", "partial"],
                          ["{t}tagged", "held"]])
        # Without a prefix every key is looked at: still no helper key, and no other kind of data.
        everything = super().rl("--json", "list")
        self.assertEqual(sorted(lock_rows(everything)), ["locks:gone", "locks:held", "locks:one", "locks:partial",
                                                         "locks:{t}tagged", "other:job"])
        self.assertIn("3/3", lines[2])

    def test_pattern_filters_names(self):
        for name in ("a", "ab", "b"):
            self.assertEqual(self.rl("acquire", name).code, 0)
        token = self.rl("acquire", "ax").stdout.strip()
        self.assertEqual(self.rl("release", "ax", "--token", token).code, 0)  # free, with a fence
        self.assertEqual(sorted(lock_rows(self.rl("--json", "list", "a*"))), ["a", "ab", "ax"])
        self.assertEqual(sorted(lock_rows(self.rl("--json", "list", "?"))), ["a", "b"])
        self.assertEqual(sorted(lock_rows(self.rl("--json", "list", "nothing*"))), [])

    def test_a_semaphore_is_one_row_with_its_held_slots(self):
        tokens = [self.rl("acquire", "batch", "--limit", "3", "--ttl", "30s", "--owner", who).stdout.strip()
                  for who in ("alice", "bob")]
        self.assertTrue(all(tokens), tokens)
        self.assertEqual(self.rl("release", "batch", "--limit", "3", "--token", tokens[0]).code, 0)
        self.assertEqual(self.rl("acquire", "job").code, 0)
        r = self.rl("--json", "list")
        self.assertEqual(r.code, 0, r)
        rows = lock_rows(r)
        # The slots are not locks of their own: the semaphore is one row, its holders inside it.
        self.assertEqual(sorted(rows), ["batch", "job"])
        b = rows["batch"]
        self.assertEqual((b["mode"], b["key"], b["state"], b["limit"], b["held"], b["owner"], b["token"]),
                         ("semaphore", "locks:batch", "held", 3, 1, None, None))
        self.assertEqual([(h["owner"], h["token"], h["servers_held"]) for h in b["holders"]], [("bob", tokens[1], 3)])
        status = self.rl("--json", "status", "batch", "--limit", "3").json()
        self.assertEqual([(h["slot"], h["fence"]) for h in status["holders"]],
                         [(h["slot"], h["fence"]) for h in b["holders"]])
        self.assertEqual(rows["job"]["mode"], "mutex")
        lines = self.rl("list", "b*").stdout.splitlines()
        self.assertEqual([line.split()[:2] for line in lines[1:]],
                         [["batch", "held"], ["batch[%d]" % b["holders"][0]["slot"], "held"]])
        self.assertIn("1 of 3 slots", lines[1])

    def test_readers_and_waiters_are_shown_as_such(self):
        self.assertEqual(self.rl("acquire", "--shared", "backup", "--ttl", "30s").code, 0)
        self.assertEqual(self.rl("acquire", "deploy", "--ttl", "30s").code, 0)
        waiter = spawn(["--prefix", "locks:", "acquire", "deploy", "-w", "10s"], servers=self.cluster,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(waiter.wait)
        self.addCleanup(waiter.kill)
        # Queued: its heartbeat key is there.
        def queued():
            with self.cluster.servers[0].client() as c:
                return c.call("KEYS", "{locks:deploy}:redlock:waiter:*")
        wait_for(queued, timeout=5, what="the waiter to queue")
        rows = lock_rows(self.rl("--json", "list"))
        self.assertEqual(sorted(rows), ["backup", "deploy"])  # a waiter's heartbeat is no lock
        b = rows["backup"]
        self.assertEqual((b["mode"], b["state"], b["token"]), ("shared", "held", None))
        self.assertEqual(rows["deploy"]["mode"], "mutex")
        plain = self.rl("list", "backup").stdout.splitlines()
        self.assertEqual(plain[1].split()[:3], ["backup", "held", "readers"])

    def test_a_frozen_server_is_named_and_holds_up_nobody(self):
        self.assertEqual(self.rl("acquire", "job").code, 0)
        frozen = self.cluster.servers[2]
        frozen.freeze()
        try:
            r = self.rl("--json", "--timeout", "300ms", "list")
            self.assertEqual(r.code, 1, r)
            self.assertLess(r.elapsed, 2.0, r)
            j = r.json()
            self.assertEqual([s["ok"] for s in j["servers"]], [True, True, False])
            self.assertEqual(j["servers"][2]["result"], "timeout")
            self.assertIn(str(frozen.port), r.stderr)
            self.assertEqual((lock_rows(r)["job"]["state"], lock_rows(r)["job"]["servers_held"]), ("held", 2))
            self.cluster.servers[1].freeze()
            try:
                r = self.rl("--json", "--timeout", "300ms", "list")
            finally:
                self.cluster.servers[1].thaw()
            self.assertEqual(r.code, 69, r)
            self.assertEqual(r.json()["error"]["code"], 69)
            self.assertEqual(lock_rows(r)["job"]["state"], "unknown")
        finally:
            frozen.thaw()


class ManyLocks(unittest.TestCase):
    def test_ten_thousand_locks_on_five_servers(self):
        cluster = Cluster(5)
        try:
            for s in cluster.servers:
                client = redis.Redis(host="127.0.0.1", port=s.port, socket_timeout=30)
                pipe = client.pipeline(transaction=False)
                for i in range(10000):
                    pipe.set("locks:job-%05d" % i, "t0k3n", px=600000)
                pipe.set("{locks:job-00001}:redlock:fence", "3")
                pipe.execute()
                client.close()
            r = redlock(["--prefix", "locks:", "--json", "list"], servers=cluster)
            self.assertEqual(r.code, 0, r)
            self.assertLess(r.elapsed, 5.0, r)  # 0.35 s to 2.5 s on a busy 2-CPU machine
            locks = r.json()["locks"]
            self.assertEqual(len(locks), 10000)
            self.assertEqual({row["state"] for row in locks}, {"held"})
            self.assertEqual(locks[1]["fence"], 3)
        finally:
            cluster.stop()


class WatchProcess:
    """redlock watch in the background, its JSON lines read with a bounded wait."""

    def __init__(self, servers, *args):
        self.proc = spawn(["--prefix", "locks:", "watch"] + list(args), servers=servers, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
        self.buf = b""

    def events(self, n, timeout=5.0):
        deadline = time.monotonic() + timeout
        while self.buf.count(b"\n") < n and time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                break
            self.buf += chunk
        return [json.loads(line) for line in self.buf.splitlines()]

    def state(self):
        """Whether the watch still runs, else its exit status and stderr: for a failure's message."""
        if self.proc.poll() is None:
            return "running"
        return "exited %d: %r" % (self.proc.returncode, self.proc.stderr.read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.returncode


class Watch(ClusterTest):
    N = 3
    EXTRA = ("--notify-keyspace-events", "Kgx")

    def rl(self, *args, **kw):
        return super().rl("--prefix", "locks:", *args, **kw)

    def watching(self, *args, servers=None):
        w = WatchProcess(servers or self.cluster, *args)
        self.addCleanup(w.stop)

        def subscribed():
            for s in self.cluster.servers:
                with s.client() as c:
                    if c.call("PUBSUB", "NUMSUB", "{locks:job}:redlock:wake")[1] < 1:
                        return False
            return True
        wait_for(lambda: subscribed() or w.proc.poll() is not None, timeout=5, what="watch to subscribe")
        time.sleep(0.1)  # its first read after subscribing
        return w

    def test_each_event_once_and_in_order(self):
        w = self.watching("job")
        token = self.rl("acquire", "job", "--ttl", "10s", "--owner", "alice").stdout.strip()
        self.assertEqual(self.rl("extend", "job", "--token", token, "--ttl", "10s").code, 0)
        self.assertEqual(self.rl("release", "job", "--token", token).code, 0)
        second = self.rl("acquire", "job", "--ttl", "300ms").stdout.strip()
        events = w.events(5)
        self.assertEqual([e["event"] for e in events], ["acquired", "extended", "released", "acquired", "expired"],
                         events)
        self.assertEqual([e["token"] for e in events], [token] * 3 + [second] * 2)
        self.assertEqual(events[0]["owner"], "alice")
        self.assertLess(events[0]["fence"], events[3]["fence"])
        time.sleep(0.3)  # nothing more comes
        self.assertEqual(len(w.events(6, timeout=0.2)), 5)
        self.assertEqual(w.stop(), 128 + signal.SIGTERM)
        self.assertEqual(w.proc.stderr.read(), b"")  # keyspace notifications are on here

    def test_until_free_returns_when_the_lock_is_released(self):
        token = self.rl("acquire", "job", "--ttl", "10s").stdout.strip()
        w = self.watching("job", "--until", "free")
        time.sleep(0.2)
        self.assertIsNone(w.proc.poll())
        released = time.monotonic()
        self.assertEqual(self.rl("release", "job", "--token", token).code, 0)
        w.proc.wait(timeout=5)
        self.assertEqual(w.proc.returncode, 0)
        self.assertLess(time.monotonic() - released, 1.0)
        self.assertEqual([e["event"] for e in w.events(1)], ["released"])
        free = self.rl("watch", "job", "--until", "free")  # free already
        self.assertEqual((free.code, free.out), (0, b""), free)

    def test_one_server_that_lost_the_lock_is_no_release(self):
        # A server restarted empty (here: its key deleted by hand) while the lock holds on the
        # others: the lock is still held, so neither an event nor --until released ends the watch.
        token = self.rl("acquire", "job", "--ttl", "30s").stdout.strip()
        w = self.watching("job", "--until", "released")
        with self.cluster.servers[0].client() as c:
            c.call("DEL", "locks:job")
        time.sleep(1.5)  # past the one-second read of every server's view
        self.assertEqual((w.state(), w.events(1, timeout=0.1)), ("running", []))
        self.assertEqual(self.rl("release", "job", "--token", token).code, 0)
        w.proc.wait(timeout=5)
        self.assertEqual(w.proc.returncode, 0)
        events = w.events(1)
        self.assertEqual([(e["event"], e["token"]) for e in events], [("released", token)], events)

    def test_a_refused_keyspace_channel_leaves_the_wake_up_channel(self):
        # CONFIG GET says notifications are on, but this user may not hear them: the SUBSCRIBE to
        # the keyspace channel is refused, and the wake-up channel stays subscribed (watching()
        # waits for that), its announcements heard.
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("ACL", "SETUSER", "watcher", "reset", "on", ">pw", "~*", "&{locks:*}:redlock:wake", "+@all")
        self.addCleanup(self.deluser, "watcher")
        urls = ",".join("redis://watcher:pw@%s" % s.address for s in self.cluster.servers)
        w = self.watching("job", servers=urls)
        token = self.rl("acquire", "job", "--ttl", "10s").stdout.strip()
        self.assertEqual(self.rl("release", "job", "--token", token).code, 0)
        events = w.events(2)
        self.assertEqual([e["event"] for e in events], ["acquired", "released"], (events, w.state()))

    def deluser(self, name):
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("ACL", "DELUSER", name)

    def test_a_semaphore_is_refused_not_read_as_free(self):
        # Its holders are in its slots: `--until free` must not return while one is held.
        self.assertEqual(self.rl("acquire", "--limit", "2", "--ttl", "10s", "sem").code, 0)
        for until in ([], ["--until", "free"], ["--until", "released"]):
            r = self.rl("watch", "sem", *until)
            self.assertEqual((r.code, r.out), (64, b""), r)
            self.assertEqual(r.stderr, "redlock: error: watch: sem is a semaphore (limit 2), whose slots it does not "
                             "follow; read it with status\n")

    def test_readers_are_named_as_such_not_by_their_marker(self):
        w = self.watching("job")
        token = self.rl("acquire", "--shared", "job", "--ttl", "10s").stdout.strip()
        self.assertEqual(self.rl("release", "--shared", "job", "--token", token).code, 0)
        events = w.events(2)
        self.assertEqual([(e["event"], e["token"], e["owner"]) for e in events],
                         [("acquired", None, "readers"), ("released", None, "readers")], (events, w.state()))

    def test_bad_until_is_a_usage_error(self):
        r = self.rl("watch", "job", "--until", "never")
        self.assertEqual(r.code, 64, r)
        self.assertEqual(len(r.stderr.splitlines()), 1, r)


class WatchWithoutKeyspaceNotifications(ClusterTest):
    N = 3

    def test_an_expiry_is_still_seen_and_the_missing_notifications_said_once(self):
        w = WatchProcess(self.cluster, "job")
        try:
            ready, _, _ = select.select([w.proc.stderr], [], [], 5)
            self.assertTrue(ready, "no warning within 5 s")
            self.assertIn(b"no keyspace notifications", os.read(w.proc.stderr.fileno(), 4096))
            self.assertEqual(redlock(["--prefix", "locks:", "acquire", "job", "--ttl", "300ms"],
                                     servers=self.cluster).code, 0)
            self.assertEqual([e["event"] for e in w.events(2)], ["acquired", "expired"])
        finally:
            self.assertEqual(w.stop(), 128 + signal.SIGTERM)
        self.assertEqual(w.proc.stderr.read(), b"")  # said once


if __name__ == "__main__":
    main()
