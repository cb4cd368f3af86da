"""The lock is a plain string with a PX expiry, as other Redlock clients write it: a redis-py Lock
(Debian's python3-redis) on the same key on one server excludes us, we exclude it, and
`release --token` frees its lock. node-redlock's lock (as scripts/bench installs it) keeps the
shared mode's readers and writers out, and readers keep it out."""

import os
import shutil
import subprocess
import sys
import time
import unittest

from harness import ROOT, ClusterTest, main, spawn  # first: it sees to a python3 that has redis-py

import redis


class RedisPy(ClusterTest):
    N = 1

    def client(self):
        return redis.Redis(host="127.0.0.1", port=self.cluster.servers[0].port)

    def test_their_lock_excludes_us_and_we_can_free_it_with_their_token(self):
        lock = self.client().lock("shared", timeout=30)
        self.assertTrue(lock.acquire(blocking=False))
        r = self.rl("acquire", "-n", "shared")
        self.assertEqual(r.code, 75, r)
        j = self.rl("--json", "status", "shared").json()
        self.assertEqual(j["state"], "held")
        their_token = lock.local.token.decode()
        self.assertEqual(j["token"], their_token)
        self.assertEqual(self.rl("release", "shared", "--token", "not-theirs").code, 1)
        r = self.rl("release", "shared", "--token", their_token)
        self.assertEqual(r.code, 0, r)
        self.assertFalse(self.client().exists("shared"))

    def test_our_lock_excludes_them_and_they_can_free_it(self):
        token = self.rl("acquire", "shared").stdout.strip()
        lock = self.client().lock("shared", timeout=30)
        self.assertFalse(lock.acquire(blocking=False))
        # A redis-py Lock that adopts our token releases with its own compare-and-delete.
        theirs = self.client().lock("shared", timeout=30)
        theirs.local.token = token.encode()
        theirs.release()
        self.assertFalse(self.client().exists("shared"))
        self.assertEqual(self.rl("acquire", "-n", "shared").code, 0)

    def test_their_lock_without_expiry_is_busy_not_an_error(self):
        lock = self.client().lock("forever")
        self.assertTrue(lock.acquire(blocking=False))
        r = self.rl("--json", "acquire", "-w", "300ms", "forever")
        self.assertEqual(r.code, 75, r)
        self.assertEqual(r.json()["reason"], "timeout")


def node_modules():
    """Where scripts/bench installs node-redlock 4 and ioredis, as bench/bench.py finds them."""
    return os.environ.get("REDLOCK_BENCH_NODE_MODULES") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "redlock-bench", "node", "node_modules")


def node_missing():
    """Why node-redlock cannot be driven here, or None."""
    if not shutil.which("node"):
        return "node is not installed"
    for pkg in ("redlock", "ioredis"):
        if not os.path.exists(os.path.join(node_modules(), pkg, "package.json")):
            return "node package %s is not in %s (scripts/bench installs it)" % (pkg, node_modules())
    return None


@unittest.skipIf(node_missing(), node_missing())
class NodeRedlockAndSharedMode(ClusterTest):
    """node-redlock 4 on the shared mode's NAME: its lock is an exclusive one, a writer's."""
    N = 3
    LOCK_JS = os.path.join(ROOT, "bench", "node", "lock.js")

    def node_args(self, mode, *args):
        """bench/node/lock.js MODE on every server of the cluster, and the environment it needs."""
        servers = ",".join("127.0.0.1:%d" % s.port for s in self.cluster.servers)
        return ["node", self.LOCK_JS, mode, servers, "data"] + list(args), dict(os.environ, NODE_PATH=node_modules())

    def node_cycle(self):
        """lock.js cycle: one lock() without retries and its unlock(): exit 0, or 75 when busy."""
        argv, env = self.node_args("cycle")
        return subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=20)

    def test_their_lock_keeps_our_readers_and_writers_out(self):
        argv, env = self.node_args("hold", "3000")  # lock(), 3 s, unlock()
        holder = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.addCleanup(lambda: (holder.poll() is None and holder.kill(), holder.communicate()))
        deadline = time.monotonic() + 10
        while not all(self.cluster.values("data")) and time.monotonic() < deadline and holder.poll() is None:
            time.sleep(0.01)
        theirs = self.cluster.values("data")
        self.assertTrue(all(theirs) and len(set(theirs)) == 1, theirs)
        for args in (["--shared"], []):
            r = self.rl("--json", "acquire", "-n", *args, "data")
            self.assertEqual((r.code, r.json()["reason"]), (75, "busy"), r)
        self.assertEqual(self.cluster.values("data"), theirs)  # their lock untouched
        # A reader waiting for them is in once they unlock.
        r = self.rl("--json", "acquire", "--shared", "-w", "10s", "data")
        self.assertEqual(r.code, 0, r)
        _, err = holder.communicate(timeout=10)
        self.assertEqual(holder.returncode, 0, err)
        self.assertEqual(self.cluster.values("data"), [b"redlock:shared"] * 3)

    def test_our_readers_keep_their_lock_out(self):
        tokens = [self.rl("acquire", "--shared", "--ttl", "10s", "data").stdout.strip() for _ in range(2)]
        self.assertTrue(all(tokens), tokens)
        busy = self.node_cycle()
        self.assertEqual(busy.returncode, 75, busy.stderr)
        self.assertEqual(self.cluster.values("data"), [b"redlock:shared"] * 3)
        for token in tokens:
            self.assertEqual(self.rl("release", "--shared", "--token", token, "data").code, 0)
        free = self.node_cycle()
        self.assertEqual(free.returncode, 0, free.stderr)


class SilentHolder:
    """A redis-py holder (SET NX PX, no owner record, a plain DEL on release: it announces
    nothing): a redlock waiter behind it is in within a second of the DEL, not at the slow poll."""

    def test_a_waiter_is_in_within_a_second_of_a_silent_release(self):
        clients = [redis.Redis(host="127.0.0.1", port=s.port) for s in self.cluster.servers]
        for c in clients:
            self.assertTrue(c.set("job", "redis-py-token", nx=True, px=60000))
        waiter = spawn(["acquire", "-w", "15s", "job"], servers=self.cluster, stdout=subprocess.PIPE)
        self.addCleanup(lambda: (waiter.poll() is None and waiter.kill(), waiter.wait()))
        # Long enough for the poll to have slowed down as far as it goes, and past the first slow
        # poll (3-5s) of a waiter that takes the holder for one that announces its release.
        time.sleep(5.3)
        self.assertIsNone(waiter.poll())
        released = time.monotonic()
        for c in clients:
            c.delete("job")
        out, _ = waiter.communicate(timeout=10)
        took = time.monotonic() - released
        self.assertEqual(waiter.returncode, 0)
        self.assertEqual([c.get("job") for c in clients], [out.strip()] * len(clients))
        sys.stderr.write("hand-off %.3fs after the DEL on %d server(s)\n" % (took, len(clients)))
        self.assertLess(took, 1.5)


class SilentHolderOnOne(SilentHolder, ClusterTest):
    N = 1


class SilentHolderOnThree(SilentHolder, ClusterTest):
    N = 3


if __name__ == "__main__":
    main()
