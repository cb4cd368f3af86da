"""--fair under a partition that splits the queue: waiters that each reached one server alone (their
joins lost on the others, their heartbeats kept alive there, as a partitioned waiter's are) are
that server's head, so the servers disagree on the head and nobody is the head on a quorum. The
hand-off degrades to the unfair path after about one heartbeat (3 s), the lock is still held by one
at a time, and once the servers agree again (the partitioned waiters gone) the queue's order is
served again, fairly."""

import json
import subprocess
import threading
import time

from harness import ClusterTest, main, shortest_queue, spawn, wait_for

QUEUE = "{job}:redlock:waiters"
HEARTBEAT = 3.0


class FairSplit(ClusterTest):
    N = 3

    def queued(self):
        return shortest_queue(self.cluster, QUEUE)

    def waiter(self, name):
        p = spawn(["--json", "acquire", "-w", "25s", "--ttl", "30s", "--fair", "--owner", name, "job"],
                  servers=self.cluster, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait(), p.stdout.close(), p.stderr.close()))
        return p

    def partitioned(self, server, waiter_id, stop):
        """A waiter that joined SERVER alone, ahead of everyone there (score 0: the lowest ticket),
        and keeps its heartbeat alive there until STOP is set; then it leaves, as a waiter does."""
        alive = "{job}:redlock:waiter:" + waiter_id

        def beat():
            with server.client() as c:
                while not stop.is_set():
                    c.call("SET", alive, "cut-off", "PX", str(int(HEARTBEAT * 1000)))
                    stop.wait(0.3)
                c.call("ZREM", QUEUE, waiter_id)
                c.call("DEL", alive)

        with server.client() as c:
            c.call("SET", alive, "cut-off", "PX", str(int(HEARTBEAT * 1000)))
            c.call("ZADD", QUEUE, "0", waiter_id)
        t = threading.Thread(target=beat, daemon=True)
        t.start()
        return t

    def taken(self, procs, timeout):
        """Waits for one of PROCS to exit with the lock; checks the others still wait (one holder)."""
        done = wait_for(lambda: [p for p in procs if p.poll() is not None], timeout=timeout, what="a waiter to win")
        time.sleep(0.3)  # another that was about to win would have by now
        done = [p for p in procs if p.poll() is not None]
        self.assertEqual(len(done), 1, [p.args for p in done])
        out = done[0].stdout.read().decode()
        self.assertEqual(done[0].returncode, 0, (out, done[0].stderr.read()))
        procs.remove(done[0])
        return done[0], json.loads(out)

    def test_a_split_queue_degrades_within_a_heartbeat_and_recovers(self):
        token = self.rl("acquire", "--ttl", "60s", "job").stdout.strip()
        procs, names = [], ["a", "b", "c"]
        for i, name in enumerate(names):
            procs.append(self.waiter(name))
            wait_for(lambda: self.queued() >= i + 1, timeout=10, what="%s to queue" % name)
        owners = {p: name for p, name in zip(procs, names)}
        # The partition: on server 0 and on server 1 a waiter ahead of everyone, each cut off from
        # the other servers; server 2 has a at its head. No waiter is the head on two servers.
        stop = threading.Event()
        self.addCleanup(stop.set)
        beats = [self.partitioned(self.cluster.servers[0], "0000000000000001", stop),
                 self.partitioned(self.cluster.servers[1], "0000000000000002", stop)]
        released = time.monotonic()
        self.assertEqual(self.rl("release", "--token", token, "job").code, 0)
        first, j = self.taken(procs, timeout=15)
        waited = time.monotonic() - released
        self.assertEqual(j["fairness"], "degraded", j)
        self.assertGreaterEqual(waited, HEARTBEAT - 0.5, j)
        self.assertLess(waited, 4 * HEARTBEAT, j)
        # The partition heals: the cut-off waiters leave, the servers agree on the queue again.
        stop.set()
        for t in beats:
            t.join(timeout=5)
        order = [owners[p] for p in procs]
        self.assertEqual(order, [n for n in names if n != owners[first]])
        self.assertEqual(self.queued(), 2)
        token = j["token"]
        for name in order:
            released = time.monotonic()
            self.assertEqual(self.rl("release", "--token", token, "job").code, 0)
            p, j = self.taken(procs, timeout=10)
            self.assertEqual(owners[p], name)  # the queue's order
            self.assertEqual(j["fairness"], "fair", j)
            self.assertLess(time.monotonic() - released, HEARTBEAT, j)
            token = j["token"]
        self.assertEqual(self.rl("release", "--token", token, "job").code, 0)


if __name__ == "__main__":
    main()
