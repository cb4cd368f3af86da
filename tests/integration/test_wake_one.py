"""Wake one waiter, not all: waiters queue on every server in arrival order, a release names the
first live ones on channels of their own and hands the lock to the first, who takes it without a
script; a waiter killed in the queue is skipped once its heartbeat lapses (3 s), and until then the
one named after it takes over once the hand-over has lapsed."""

import signal
import subprocess
import time

from harness import ClusterTest, listeners, main, spawn, wait_for

import redis  # noqa: E402 (importable once harness found a python3 that has it)

QUEUE = "{job}:redlock:waiters"
CHANNEL = "{job}:redlock:wake"
HEARTBEAT = 3.0


class WakeOne(ClusterTest):
    def queued(self):
        """The shortest queue among the servers (every server queues every waiter)."""
        counts = []
        for s in self.cluster.servers:
            with s.client() as c:
                counts.append(c.call("ZCARD", QUEUE))
        return min(counts)

    def subscribed(self):
        counts = []
        for s in self.cluster.servers:
            with s.client() as c:
                counts.append(listeners(c, CHANNEL))
        return min(counts)

    def waiters(self, n, *extra):
        """N waiters, started one after another so that they queue in that order; each asleep (its
        attempt made, subscribed everywhere, the lock read once more) before the next starts."""
        self.reset_stats()
        procs = []
        for i in range(n):
            p = spawn(["acquire", "-w", "30s", "--retry-delay", "1s"] + list(extra) + ["job"], servers=self.cluster,
                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            self.addCleanup(lambda p=p: (p.poll() is None and p.kill(), p.wait()))
            procs.append(p)
            # Each look is 15 connections: not too often, for the waiter's sake on a loaded machine.
            try:
                wait_for(lambda: self.queued() == i + 1 and self.subscribed() == i + 1 and
                         min(self.attempts()) >= i + 1, timeout=30, interval=0.1,
                         what="waiter %d to queue, subscribe and make its attempts" % i)
            except AssertionError as e:
                raise AssertionError("%s: queued %d, listening %d, attempts %s" %
                                     (e, self.queued(), self.subscribed(), self.attempts())) from None
            time.sleep(0.2)  # its read of the lock once subscribed, and any attempt that read calls for
        # Asleep: no attempt for 1.5 s (the slow fallback poll is 20 s away; a subscription that did
        # not answer within a second, on a loaded machine, is made again a second later, and its
        # confirmation brings an attempt, in case a release went unheard meanwhile).
        for _ in range(10):
            before = self.attempts()
            time.sleep(1.5)
            if self.attempts() == before:
                break
        return procs

    def reset_stats(self):
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("CONFIG", "RESETSTAT")

    def attempts(self):
        """EVALSHA calls per server: the release and the attempts (a fence sent without waiting to a
        server whose answer was not in yet goes as EVAL, with its body)."""
        out = []
        for s in self.cluster.servers:
            with s.client() as c:
                line = [x for x in c.call("INFO", "commandstats").decode().splitlines()
                        if x.startswith("cmdstat_evalsha:")]
                out.append(int(line[0].split("calls=", 1)[1].split(",", 1)[0]) if line else 0)
        return out

    def stats(self):
        out = []
        for s in self.cluster.servers:
            with s.client() as c:
                out.append(c.call("INFO", "commandstats").decode())
        return "\n".join(out)

    def test_one_release_wakes_one_waiter_of_ten(self):
        token = self.rl("acquire", "--ttl", "60s", "job").stdout.strip()
        procs = self.waiters(10)
        self.reset_stats()
        self.assertEqual(self.rl("release", "job", "--token", token).code, 0)
        wait_for(lambda: any(p.poll() is not None for p in procs), timeout=5, what="a waiter to take the lock")
        time.sleep(0.5)  # any other waiter that was going to try has tried by now
        done = [p for p in procs if p.poll() is not None]
        self.assertEqual(len(done), 1)
        # The first to arrive is the one woken.
        self.assertIs(done[0], procs[0])
        self.assertEqual(done[0].returncode, 0)
        # Per server: the release, which hands the lock to the one waiter, who takes it without a
        # script (before the queue: an attempt per waiter, 11 or more); on a loaded machine, a stray
        # attempt of a re-made subscription or two.
        attempts = self.attempts()
        self.assertGreaterEqual(min(attempts), 1, self.stats())
        self.assertLessEqual(max(attempts), 3, self.stats())
        # The one that took the lock left the queue; the nine others are still in it.
        self.assertEqual(self.queued(), 9)

    def test_the_release_hands_the_lock_to_the_first_waiter(self):
        # The release script loaded everywhere first, so that the release is one EVALSHA per server.
        warm = self.rl("acquire", "--ttl", "60s", "job").stdout.strip()
        self.assertEqual(self.rl("release", "job", "--token", warm).code, 0)
        token = self.rl("acquire", "--ttl", "60s", "job").stdout.strip()
        fences = self.cluster.values("{job}:redlock:fence")
        procs = self.waiters(3, "--ttl", "20s")
        for s in self.cluster.servers:
            with s.client() as c:
                self.assertEqual(len(c.call("KEYS", "{job}:redlock:grant:*")), 3)
        self.reset_stats()
        self.assertEqual(self.rl("release", "job", "--token", token).code, 0)
        wait_for(lambda: procs[0].poll() is not None, timeout=5, what="the first waiter to take the lock")
        time.sleep(0.5)  # the second named would try by now if it had not been told the lock was taken
        self.assertEqual([p.poll() for p in procs], [0, None, None])
        handed = procs[0].stdout.read().decode().strip()
        # Taken without a script: on a quorum of servers, the release was the only script call.
        attempts = self.attempts()
        self.assertGreaterEqual(sum(1 for a in attempts if a == 1), 3, self.stats())
        # Every server holds the waiter's token, with a fence one above the last; a quorum at least
        # for its own TTL, not the hand-over's 1.5 s, with its owner record (a server whose release
        # came after the waiter's read keeps the short expiry, until a renewal).
        self.assertEqual(self.cluster.values("job"), [handed.encode()] * 5)
        extended = 0
        for s, fence in zip(self.cluster.servers, fences):
            with s.client() as c:
                if c.call("PTTL", "job") > 15000 and c.call("PTTL", "{job}:redlock:owner") > 15000:
                    extended += 1
                self.assertEqual(int(c.call("GET", "{job}:redlock:fence")), int(fence) + 1)
        self.assertGreaterEqual(extended, 3)
        # Its record is gone with the hand-over; the two others still wait for theirs.
        for s in self.cluster.servers:
            with s.client() as c:
                self.assertEqual(len(c.call("KEYS", "{job}:redlock:grant:*")), 2)
        r = self.rl("release", "job", "--token", handed)
        self.assertEqual(r.code, 0, r)
        wait_for(lambda: procs[1].poll() is not None, timeout=5, what="the second waiter to take the lock")

    def test_the_second_named_is_told_on_two_servers_the_first_on_every_one(self):
        # One word that it was named is all the second needs (it tries only if the first does not
        # answer): told on every server, it would wake once per server at every hand-off.
        token = self.rl("acquire", "--ttl", "60s", "job").stdout.strip()
        procs = self.waiters(3)
        with self.cluster.servers[0].client() as c:
            ids = [x.decode() for x in c.call("ZRANGE", QUEUE, 0, -1)]
        self.assertEqual(len(ids), 3)
        listeners_ = []
        for s in self.cluster.servers:
            p = redis.Redis(port=s.port).pubsub()
            p.psubscribe(CHANNEL + ":*")
            self.addCleanup(p.close)
            listeners_.append(p)
        for p in listeners_:
            wait_for(lambda p=p: p.get_message(timeout=0.1) is not None, timeout=5, what="the watcher's subscription")
        self.assertEqual(self.rl("release", "job", "--token", token).code, 0)
        wait_for(lambda: procs[0].poll() is not None, timeout=5, what="the first waiter to take the lock")
        time.sleep(0.3)
        heard = []  # per server: the waiters told
        for p in listeners_:
            told = set()
            for _ in range(50):
                m = p.get_message(timeout=0.05)
                if m is None:
                    break
                if m["type"] == "pmessage":
                    told.add(m["channel"].decode().rsplit(":", 1)[1])
            heard.append(told)
        self.assertEqual([ids[0] in t for t in heard], [True] * 5, heard)
        self.assertEqual([ids[1] in t for t in heard], [True, True, False, False, False], heard)
        self.assertEqual([ids[2] in t for t in heard], [False] * 5, heard)

    def test_a_waiter_killed_in_the_queue_is_skipped(self):
        token = self.rl("acquire", "--ttl", "60s", "job").stdout.strip()
        procs = self.waiters(5)
        # The first: named by the next release, and not answering.
        procs[0].send_signal(signal.SIGKILL)
        procs[0].wait()
        released = time.monotonic()
        self.assertEqual(self.rl("release", "job", "--token", token).code, 0)
        wait_for(lambda: any(p.poll() is not None for p in procs[1:]), timeout=10, what="a live waiter to take it")
        self.assertLess(time.monotonic() - released, HEARTBEAT + 1.0)
        self.assertEqual([p.poll() for p in procs[1:]], [0, None, None, None])
        # By the next release the dead one's heartbeat has lapsed: it is skipped and dropped from
        # the queue, and the next live waiter is named first and in at once.
        time.sleep(max(0.0, HEARTBEAT + 0.2 - (time.monotonic() - released)))
        released = time.monotonic()
        self.assertEqual(self.rl("release", "job", "--token", procs[1].stdout.read().strip()).code, 0)
        wait_for(lambda: procs[2].poll() is not None, timeout=10, what="the next live waiter to take it")
        self.assertLess(time.monotonic() - released, 0.8)
        self.assertEqual([p.poll() for p in procs[3:]], [None, None])
        self.assertEqual(self.queued(), 2)

    def test_a_waiter_keeps_its_place_where_a_release_let_it_in_alone(self):
        # A release that reached one server before the others (here: the only one it reaches) names
        # the first waiters there, while the holder keeps the four others, a quorum. Each try of
        # theirs takes that server alone and gives it back: they stay queued there all the same.
        token = self.rl("acquire", "--ttl", "60s", "job").stdout.strip()
        procs = self.waiters(2)
        first = self.cluster.servers[0]
        self.reset_stats()
        self.assertEqual(self.rl("release", "job", "--token", token, servers=first.address).code, 0)
        for _ in range(10):
            time.sleep(0.2)
            with first.client() as c:
                self.assertEqual(c.call("ZCARD", QUEUE), 2, self.stats())
        self.assertGreaterEqual(self.attempts()[0], 2, self.stats())  # the release and a try at least
        self.assertEqual([p.poll() for p in procs], [None, None])

    def test_a_waiter_that_gives_up_leaves_the_queue(self):
        self.rl("acquire", "--ttl", "60s", "job")
        r = self.rl("acquire", "-w", "1s", "job")
        self.assertEqual(r.code, 75, r)
        self.assertEqual(self.queued(), 0)
        for s in self.cluster.servers:
            with s.client() as c:
                self.assertEqual(c.call("KEYS", "{job}:redlock:waiter:*"), [])


if __name__ == "__main__":
    main()
