"""Hand-off without polling: a release wakes the waiters at once; a holder that never announces
(another client, a crashed holder) is noticed at its expiry or by the slow fallback poll; many
waiters on one name each get the lock exactly once with no overlap; a waiter costs the servers at
most 2 commands per second."""

import os
import subprocess
import threading
import time

from harness import ClusterTest, main, spawn, wait_for


# Only what clients send counts: the commands a Lua script runs inside the server appear in
# commandstats too, but they are not requests.
def total_commands(cluster):
    """Requests the clients sent to all servers (our own INFO calls included: one per server)."""
    total = 0
    for s in cluster.servers:
        with s.client() as c:
            info = c.call("INFO", "commandstats").decode()
        for line in info.splitlines():
            name, _, rest = line.partition(":")
            if name.startswith("cmdstat_") and name[8:] in ("evalsha", "eval", "subscribe", "info", "auth", "select"):
                total += int(rest.split(",")[0].split("=")[1])
    return total


class Handoff(ClusterTest):
    def test_an_attempt_without_a_quorum_announces_a_retraction_not_a_release(self):
        # Another holder on 3 of 5: our attempt takes the other 2, is busy, and gives them back.
        for s in self.cluster.servers[:3]:
            with s.client() as c:
                c.call("SET", "job", "theirs", "PX", 30000)
        heard = []
        for s in self.cluster.servers:
            c = s.client()
            self.addCleanup(c.close)
            c.call("SUBSCRIBE", "{job}:redlock:wake")
            heard.append(c)
        r = self.rl("acquire", "-n", "job")
        self.assertEqual(r.code, 75, r)
        for c in heard[3:]:
            self.assertEqual(c.read(), [b"message", b"{job}:redlock:wake", b"acquired"])
            self.assertEqual(c.read(), [b"message", b"{job}:redlock:wake", b"retracted 1"])
        self.assertEqual([s.get("job") for s in self.cluster.servers], [b"theirs"] * 3 + [None] * 2)
        # A holder's release is announced as one.
        token = self.rl("acquire", "job", servers=",".join(s.address for s in self.cluster.servers[3:])).stdout.strip()
        self.rl("release", "--token", token, "job", servers=",".join(s.address for s in self.cluster.servers[3:]))
        for c in heard[3:]:
            self.assertEqual(c.read(), [b"message", b"{job}:redlock:wake", b"acquired"])
            self.assertEqual(c.read(), [b"message", b"{job}:redlock:wake", b"released 1"])

    def test_a_wait_ends_at_its_deadline_however_many_holders_announce_themselves(self):
        # Holders that come and go without a release (killed ones): each "acquired" moves the
        # waiter's plan later, never past its -w.
        self.rl("acquire", "job")
        stop = threading.Event()

        def announce():
            clients = [s.client() for s in self.cluster.servers]
            try:
                while not stop.wait(0.1):
                    for c in clients:
                        c.call("PUBLISH", "{job}:redlock:wake", "acquired")
            finally:
                for c in clients:
                    c.close()
        t = threading.Thread(target=announce)
        t.start()
        try:
            r = self.rl("acquire", "-w", "500ms", "--timeout", "100ms", "job", timeout=10)
        finally:
            stop.set()
            t.join()
        self.assertEqual(r.code, 75, r)
        # The last attempt starts at 500 ms and takes at most two --timeout; the rest is start-up.
        self.assertLess(r.elapsed, 1.5, r)

    def test_a_release_wakes_the_waiter_without_waiting_out_its_retry_delay(self):
        token = self.rl("acquire", "job").stdout.strip()
        waiter = spawn(["acquire", "-w", "20s", "--retry-delay", "5s", "job"], servers=self.cluster,
                       stdout=subprocess.PIPE)
        time.sleep(0.5)  # the waiter is asleep (its next poll would be 2.5-7.5s away)
        released = time.monotonic()
        self.assertEqual(self.rl("release", "job", "--token", token).code, 0)
        waiter.wait(timeout=10)
        took = time.monotonic() - released
        self.assertEqual(waiter.returncode, 0)
        self.assertLess(took, 0.3)
        self.assertEqual(self.cluster.servers[0].get("job"), waiter.stdout.read().strip())

    def test_run_hands_off_to_a_waiting_run_promptly(self):
        tmp = self.scratch_dir()
        end, start = os.path.join(tmp, "end"), os.path.join(tmp, "start")
        holder = spawn(["run", "job", "--", "sh", "-c", "sleep 0.5; date +%%s.%%N > %s" % end],
                       servers=self.cluster)
        wait_for(lambda: self.cluster.servers[0].get("job"), what="the holder")
        waiter = spawn(["run", "-w", "20s", "--retry-delay", "5s", "job", "--", "sh", "-c",
                        "date +%%s.%%N > %s" % start], servers=self.cluster)
        holder.wait(timeout=10)
        waiter.wait(timeout=10)
        self.assertEqual((holder.returncode, waiter.returncode), (0, 0))
        gap = float(open(start).read()) - float(open(end).read())
        self.assertGreater(gap, 0)
        self.assertLess(gap, 0.25)

    def foreign_lock(self, ttl_ms, token=b"node-redlock-token"):
        """A lock as node-redlock writes it: SET NX PX on every server, no wake-ups."""
        for s in self.cluster.servers:
            with s.client() as c:
                self.assertEqual(c.call("SET", "job", token, "NX", "PX", ttl_ms), "OK")

    def test_a_waiter_gets_a_foreign_lock_when_it_expires(self):
        self.foreign_lock(1000)
        start = time.monotonic()
        r = self.rl("acquire", "-w", "20s", "job")
        took = time.monotonic() - start
        self.assertEqual(r.code, 0, r)
        self.assertGreater(took, 0.9)
        self.assertLess(took, 1.5)

    def test_a_silent_release_is_noticed_by_the_fallback_poll(self):
        self.foreign_lock(60000)
        waiter = spawn(["acquire", "-w", "20s", "--retry-delay", "100ms", "job"], servers=self.cluster,
                       stdout=subprocess.PIPE)
        time.sleep(0.3)
        released = time.monotonic()
        for s in self.cluster.servers:  # node-redlock's release: compare-and-delete, nothing published
            with s.client() as c:
                c.call("EVAL", "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end "
                       "return 0", 1, "job", "node-redlock-token")
        waiter.wait(timeout=10)
        took = time.monotonic() - released
        self.assertEqual(waiter.returncode, 0)
        # The fallback poll is 20 x the retry delay, jittered 0.75-1.25: at most 2.5s here.
        self.assertLess(took, 2.8)

    def test_a_crashed_holder_is_replaced_within_its_ttl_and_one_retry_delay(self):
        holder = spawn(["run", "--ttl", "1s", "job", "--", "sleep", "30"], servers=self.cluster)
        wait_for(lambda: self.cluster.servers[0].get("job"), what="the holder")
        waiter = spawn(["acquire", "-w", "20s", "job"], servers=self.cluster, stdout=subprocess.DEVNULL)
        time.sleep(0.3)
        crashed = time.monotonic()
        holder.kill()  # kill -9: no release, no wake-up; its child dies with it
        holder.wait()
        waiter.wait(timeout=10)
        self.assertEqual(waiter.returncode, 0)
        self.assertLess(time.monotonic() - crashed, 1.0 + 0.2 + 0.2)

    def test_twenty_waiters_each_get_it_exactly_once_without_overlap(self):
        tmp = self.scratch_dir()
        log = os.path.join(tmp, "log")
        body = 'echo "enter $REDLOCK_FENCE $W" >> %s; sleep 0.02; echo "exit $REDLOCK_FENCE $W" >> %s' % (log, log)
        procs = [spawn(["run", "-w", "60s", "job", "--", "sh", "-c", body], servers=self.cluster,
                       env={"W": str(i)}) for i in range(20)]
        for p in procs:
            p.wait(timeout=90)
        self.assertEqual([p.returncode for p in procs], [0] * 20)
        lines = open(log).read().split("\n")[:-1]
        self.assertEqual(len(lines), 40)
        inside = None
        seen = []
        for line in lines:
            kind, fence, who = line.split()
            if kind == "enter":
                self.assertIsNone(inside, "two holders at once: %s" % lines)
                inside = who
                seen.append(int(who))
            else:
                self.assertEqual(inside, who)
                inside = None
        self.assertEqual(sorted(seen), list(range(20)))
        fences = [int(l.split()[1]) for l in lines if l.startswith("enter")]
        self.assertEqual(fences, sorted(set(fences)))

    def test_a_waiter_costs_at_most_two_commands_per_second(self):
        self.rl("acquire", "--ttl", "60s", "job")
        waiter = spawn(["acquire", "-w", "30s", "job"], servers=self.cluster, stdout=subprocess.DEVNULL)
        self.addCleanup(lambda: (waiter.kill(), waiter.wait()))
        time.sleep(1.0)  # past the first attempts and the subscriptions
        before = total_commands(self.cluster)
        window = 10.0
        time.sleep(window)
        after = total_commands(self.cluster)
        waiter_commands = after - before - len(self.cluster.servers)  # our own INFO calls
        self.assertLessEqual(waiter_commands / window, 2.0, waiter_commands)
        self.assertIsNone(waiter.poll())


if __name__ == "__main__":
    main()
