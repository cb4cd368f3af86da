"""--fair: waiters served in arrival order. Twenty waiters that join one after another behind a
holder run in that order (the order is recorded by their commands); a waiter killed in the queue
is skipped within its heartbeat; a frozen minority server does not stall the queue; servers that
disagree on the head degrade that hand-off after one heartbeat; --max-queue gives up busy at once;
status lists the queue."""

import json
import os
import signal
import subprocess
import time

from harness import ClusterTest, main, spawn, wait_for

QUEUE = "{job}:redlock:waiters"


class Fair(ClusterTest):
    N = 3

    def queued(self, servers=None):
        """The shortest queue among SERVERS (default: all)."""
        counts = []
        for s in servers or self.cluster.servers:
            with s.client() as c:
                counts.append(c.call("ZCARD", QUEUE))
        return min(counts)

    def hold(self):
        token = self.rl("acquire", "--ttl", "60s", "job").stdout.strip()
        self.assertEqual(len(token), 32)
        return token

    def waiter(self, log, name, *extra, command=None, verbose=False, fair=True):
        """A fair `run` (plain with FAIR false) that appends NAME and the time it ran to LOG."""
        cmd = command or "echo %s $(date +%%s.%%N) >> %s" % (name, log)
        p = spawn(["-v"] * verbose + ["run", "-w", "25s"] + ["--fair"] * fair + ["--owner", name] + list(extra) +
                  ["job", "-c", cmd],
                  servers=self.cluster, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait(), p.stderr.close()))
        return p

    def line_up(self, log, names, servers=None):
        """Starts one waiter per name, each once the one before shows up in the queue."""
        procs = []
        for i, name in enumerate(names):
            procs.append(self.waiter(log, name))
            wait_for(lambda: self.queued(servers) >= i + 1, timeout=10, what="%s to queue" % name)
        return procs

    def runs(self, log):
        if not os.path.exists(log):
            return []
        with open(log) as f:
            return [(line.split()[0], float(line.split()[1])) for line in f if line.strip()]

    def finish(self, procs, timeout=20):
        for p in procs:
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.fail("a waiter still waits: %r" % p.args)

    def test_twenty_waiters_run_in_arrival_order(self):
        log = os.path.join(self.scratch_dir(), "order")
        token = self.hold()
        names = ["w%02d" % i for i in range(20)]
        procs = self.line_up(log, names)
        self.assertEqual(self.rl("release", "--token", token, "job").code, 0)
        self.finish(procs)
        self.assertEqual([p.returncode for p in procs], [0] * 20, [p.stderr.read() for p in procs])
        self.assertEqual([name for name, _ in self.runs(log)], names)

    def test_a_waiter_killed_in_the_queue_is_skipped_within_its_heartbeat(self):
        log = os.path.join(self.scratch_dir(), "order")
        token = self.hold()
        first, killed, last = self.line_up(log, ["first", "killed", "last"])
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        self.assertEqual(self.rl("release", "--token", token, "job").code, 0)
        self.finish([first, last])
        runs = dict(self.runs(log))
        self.assertEqual(sorted(runs), ["first", "last"])
        self.assertLess(runs["last"] - runs["first"], 5.0, runs)

    def test_a_frozen_minority_does_not_stall_the_queue(self):
        log = os.path.join(self.scratch_dir(), "order")
        token = self.hold()
        frozen = self.cluster.servers[2]
        names = ["a", "b", "c", "d"]
        procs = self.line_up(log, names)
        frozen.freeze()
        self.addCleanup(lambda: frozen.stopped and frozen.thaw())
        try:
            self.assertEqual(self.rl("release", "--token", token, "job").code, 0)
            self.finish(procs)
            self.assertEqual([name for name, _ in self.runs(log)], names)
        finally:
            frozen.thaw()

    def tickets(self):
        """Whether each server has a ticket counter."""
        out = []
        for s in self.cluster.servers:
            with s.client() as c:
                out.append(c.call("EXISTS", "{job}:redlock:ticket"))
        return out

    def test_plain_waiters_draw_tickets_only_behind_a_fair_queue(self):
        # Without a fair queue a plain waiter queues in arrival order and draws no ticket; once a
        # fair waiter queued, a plain one draws a ticket too and is served in its turn.
        log = os.path.join(self.scratch_dir(), "order")
        token = self.hold()
        plain = self.waiter(log, "plain", fair=False, verbose=True)
        wait_for(lambda: self.queued() >= 1, timeout=10, what="plain to queue")
        self.assertEqual(self.tickets(), [0] * self.N)
        fair = self.waiter(log, "fair")
        wait_for(lambda: self.queued() >= 2, timeout=10, what="fair to queue")
        late = self.waiter(log, "late", fair=False)
        wait_for(lambda: self.queued() >= 3, timeout=10, what="late to queue")
        self.assertEqual(self.tickets(), [1] * self.N)
        j = self.rl("--json", "status", "job").json()
        self.assertEqual([q["owner"] for q in j["queue"]], ["plain", "fair", "late"], j)
        self.assertEqual(self.rl("release", "--token", token, "job").code, 0)
        self.finish([plain, fair, late])
        self.assertEqual([name for name, _ in self.runs(log)], ["plain", "fair", "late"])
        self.assertIn("waiting, position 0 in the queue", plain.stderr.read().decode())

    def test_max_queue_gives_up_at_once_when_that_many_wait(self):
        log = os.path.join(self.scratch_dir(), "order")
        token = self.hold()
        procs = self.line_up(log, ["a", "b"])
        r = self.rl("--json", "acquire", "-w", "20s", "--fair", "--max-queue", "2", "job")
        self.assertEqual(r.code, 75, r)
        self.assertLess(r.elapsed, 5.0)
        j = r.json()
        self.assertEqual(j["reason"], "busy")
        self.assertIn("queued ahead", j["message"])
        self.assertEqual(self.queued(), 2)  # it left the queue
        for bad in ("2x", "-1"):  # -1 used to wrap to 2^64 - 1, and give up at once
            r = self.rl("acquire", "-w", "20s", "--max-queue", bad, "job")
            self.assertEqual(r.code, 64, r)
            self.assertIn("--max-queue", r.stderr)
        self.assertEqual(self.rl("release", "--token", token, "job").code, 0)
        self.finish(procs)

    def test_status_lists_the_queue_and_fair_answers_say_so(self):
        log = os.path.join(self.scratch_dir(), "order")
        token = self.hold()
        procs = self.line_up(log, ["alice", "bob"])
        j = self.rl("--json", "status", "job").json()
        queue = j["queue"]
        self.assertEqual([(q["owner"], q["position"]) for q in queue], [("alice", 0), ("bob", 1)], j)
        self.assertLess(queue[0]["ticket"], queue[1]["ticket"])
        # -v: a waiter is told its place.
        carol = self.waiter(log, "carol", verbose=True)
        wait_for(lambda: self.queued() >= 3, timeout=10, what="carol to queue")
        procs.append(carol)
        # A single attempt is refused while a fair waiter waits, even when the lock is free: the head's turn.
        self.assertEqual(self.rl("release", "--token", token, "job").code, 0)
        self.finish(procs)
        self.assertIn("waiting, position 2 in the queue (ticket %d)" % (queue[1]["ticket"] + 1),
                      carol.stderr.read().decode())
        j = self.rl("--json", "status", "job").json()
        self.assertEqual(j["queue"], [])
        r = self.rl("--json", "acquire", "--fair", "-w", "5s", "job")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.json()["fairness"], "fair")
        self.assertEqual(self.rl("--json", "acquire", "--fair", "--limit", "2", "job").code, 64)
        self.assertEqual(self.rl("--json", "acquire", "--fair", "--shared", "job").code, 64)

    def test_a_free_lock_goes_to_the_live_head_alone(self):
        # A queue as a fair waiter leaves it, its heartbeat 1.5 s: the lock is free, but its turn.
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("ZADD", QUEUE, "1", "0123456789abcdef")
                c.call("SET", "{job}:redlock:waiter:0123456789abcdef", "someone", "PX", "1500")
                c.call("SET", "{job}:redlock:fair", "1", "PX", "1500")
        r = self.rl("--json", "acquire", "-n", "job")
        self.assertEqual(r.code, 75, r)
        self.assertIn("another waiter's turn", r.json()["message"])
        self.assertEqual(self.rl("--json", "status", "job").json()["queue"],
                         [{"owner": "someone", "ticket": 1, "position": 0}])
        # Its heartbeat lapses: it is dropped, and the lock is anyone's again.
        time.sleep(1.6)
        r = self.rl("acquire", "-n", "job")
        self.assertEqual(r.code, 0, r)


    def test_heads_that_disagree_degrade_after_one_heartbeat(self):
        # Two servers each have another live head (a lost join, say), the third none: nobody can be
        # the head on a quorum. The waiter goes the unfair way after one heartbeat (3 s) and says so.
        for s, head in zip(self.cluster.servers, ["aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"]):
            with s.client() as c:
                c.call("ZADD", QUEUE, "1", head)
                c.call("SET", "{job}:redlock:waiter:" + head, "elsewhere", "PX", "20000")
                c.call("SET", "{job}:redlock:fair", "1", "PX", "20000")
        r = self.rl("--json", "acquire", "-w", "15s", "--fair", "job")
        self.assertEqual(r.code, 0, r)
        j = r.json()
        self.assertEqual(j["fairness"], "degraded", j)
        self.assertGreaterEqual(j["elapsed_ms"], 2900, j)
        self.assertLess(j["elapsed_ms"], 10000, j)


if __name__ == "__main__":
    main()
