"""The lock is a plain string with a PX expiry, as other Redlock clients write it: a redis-py Lock
(Debian's python3-redis) on the same key on one server excludes us, we exclude it, and
`release --token` frees its lock."""

import subprocess
import sys
import time

from harness import ClusterTest, main, spawn  # first: it sees to a python3 that has redis-py

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
