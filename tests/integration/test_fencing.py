"""Fencing tokens across N masters: strictly increasing from holder to holder, through `run`, across
a kill -9 and empty restart of a minority, and after the counters expired; and the resource side (examples/fenced-write.*) rejecting
the late write of a holder paused past its TTL while accepting the next holder's."""

import os
import signal
import subprocess
import time

from harness import ROOT, ClusterTest, Server, main, spawn, wait_for, RespError

EXAMPLES = os.path.join(ROOT, "examples")


class Fences(ClusterTest):
    def acquire_release(self, name="job"):
        r = self.rl("--json", "acquire", name)
        self.assertEqual(r.code, 0, r)
        j = r.json()
        self.assertEqual(self.rl("release", name, "--token", j["token"]).code, 0)
        return j["fence"]

    def server_seconds(self, i=0):
        with self.cluster.servers[i].client() as c:
            return int(c.call("TIME")[0])

    def fence_keys(self, key="{job}:redlock:fence"):
        return [s.get(key) for s in self.cluster.servers]

    def test_strictly_increasing_over_many_holders(self):
        before = self.server_seconds()
        fences = [self.acquire_release() for _ in range(40)]
        self.assertEqual(fences, sorted(set(fences)))
        # A new counter starts at the servers' clock (microseconds, to the second), then counts by one.
        self.assertEqual(fences[0] % 10**6, 0)
        self.assertLessEqual(before, fences[0] // 10**6)
        self.assertLessEqual(fences[0] // 10**6, self.server_seconds())
        self.assertLess(fences[-1], 2**53)  # exact in a Lua number, a double, and JSON
        self.assertEqual(fences, list(range(fences[0], fences[0] + 40)))
        # Another name has a counter of its own, which starts at the clock too.
        other = self.acquire_release("other")
        self.assertEqual(other % 10**6, 0)
        self.assertEqual(self.rl("--json", "status", "job").json()["fence"], fences[-1])

    def test_through_run(self):
        out = []
        for _ in range(10):
            r = self.rl("run", "job", "--", "sh", "-c", 'echo "$REDLOCK_FENCE"')
            self.assertEqual(r.code, 0, r)
            out.append(int(r.stdout))
        self.assertEqual(out, sorted(set(out)))

    def test_across_kill_9_and_empty_restart_of_a_minority(self):
        last = 0
        for round_ in range(12):
            fence = self.acquire_release()
            self.assertGreater(fence, last)
            last = fence
            # Two of five servers crash and come back empty (no persistence), a different pair each time.
            for i in (round_ % 5, (round_ + 2) % 5):
                self.cluster.servers[i].restart()
        self.assertGreaterEqual(last, 12)

    def test_a_restarted_server_that_answers_late_still_gets_the_fence(self):
        # Restarted empty, the server has no scripts cached, and it answers after the quorum has
        # decided: the fence goes to it without waiting, so it must carry its script, since a
        # NOSCRIPT that nobody reads would leave its counter behind for the next holder. The counters
        # are far above the clock (as a server clock that was ahead leaves them), so that the one
        # the late server starts from its clock is below the fence.
        ahead = 2 * 10**15
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("SET", "{job}:redlock:fence", ahead)
        for _ in range(3):
            self.acquire_release()
        late = self.cluster.servers[4]
        late.restart()
        late.freeze()
        try:
            fence = self.acquire_release()
        finally:
            late.thaw()
        self.assertEqual(fence, ahead + 4)
        wait_for(lambda: late.get("{job}:redlock:fence") == str(ahead + 4).encode(), timeout=5,
                 what="the fence on the late server")

    def test_status_shows_the_last_fence(self):
        first = self.acquire_release()
        for _ in range(2):
            self.acquire_release()
        j = self.rl("--json", "status", "job").json()
        self.assertEqual(j["fence"], first + 2)

    def test_the_counter_expires_unused_and_never_changes_the_lock_key(self):
        r = self.rl("--json", "acquire", "job").json()
        day = 24 * 3600 * 1000
        for s in self.cluster.servers:
            self.assertEqual(s.get("job"), r["token"].encode())
            self.assertGreater(s.pttl("{job}:redlock:fence"), 30 * day - 60000)  # 30 days by default
            self.assertLessEqual(s.pttl("{job}:redlock:fence"), 30 * day)
        self.assertEqual(self.rl("release", "job", "--token", r["token"]).code, 0)
        # Every acquisition sets the expiry anew (a sliding expiry), to --fence-ttl.
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("PEXPIRE", "{job}:redlock:fence", 60000)
        self.assertEqual(self.rl("acquire", "job", "--fence-ttl", "2h", "--ttl", "5s").code, 0)
        for s in self.cluster.servers:
            self.assertGreater(s.pttl("{job}:redlock:fence"), 2 * 3600 * 1000 - 60000)
            self.assertLessEqual(s.pttl("{job}:redlock:fence"), 2 * 3600 * 1000)

    def test_a_fence_ttl_under_an_hour_is_a_usage_error(self):
        for bad in ("59m", "0", "-1h", "x"):
            r = self.rl("acquire", "job", "--fence-ttl=" + bad)
            self.assertEqual(r.code, 64, (bad, r))
            self.assertRegex(r.stderr, r"^redlock: error: .*--fence-ttl")
            self.assertEqual(self.fence_keys(), [None] * 5)
        self.assertEqual(self.rl("run", "--fence-ttl", "30m", "job", "--", "true").code, 64)

    def test_after_the_counters_expire_the_next_fence_is_still_higher(self):
        last = 0
        for _ in range(3):
            last = self.acquire_release()
        # The counters expire (here: are deleted) at least a second after the last fence, as an
        # expiry of an hour or more always is: a counter starts again at its server's clock.
        wait_for(lambda: self.server_seconds() > last // 10**6, timeout=3, what="the next second")
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("DEL", "{job}:redlock:fence")
        fence = self.acquire_release()
        self.assertGreater(fence, last)
        self.assertEqual(fence % 10**6, 0)
        # And through run too.
        wait_for(lambda: self.server_seconds() > fence // 10**6, timeout=3, what="the next second")
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("DEL", "{job}:redlock:fence")
        r = self.rl("run", "job", "--", "sh", "-c", 'echo "$REDLOCK_FENCE"')
        self.assertEqual(r.code, 0, r)
        self.assertGreater(int(r.stdout), fence)

    def test_a_counter_of_an_earlier_version_goes_on_and_gets_an_expiry(self):
        # Earlier versions kept the counter for ever and started it at 1.
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("SET", "{job}:redlock:fence", "7")
        self.assertEqual([self.acquire_release() for _ in range(2)], [8, 9])
        for s in self.cluster.servers:
            self.assertGreater(s.pttl("{job}:redlock:fence"), 0)


class Recipes(ClusterTest):
    N = 3

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.resource = Server(cls.cluster.workdir, 99).start()

    @classmethod
    def tearDownClass(cls):
        cls.resource.kill()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        with self.resource.client() as c:
            c.call("FLUSHALL")
        self.tmp = self.scratch_dir("redlock-fence-")

    def lua(self, fence, value):
        with open(os.path.join(EXAMPLES, "fenced-write.lua"), "rb") as f:
            script = f.read()
        with self.resource.client() as c:
            return c.call("EVAL", script, 2, "resource", "resource:fence", fence, value)

    def test_lua_recipe_rejects_lower_fences_only(self):
        self.assertEqual(self.lua(5, "a"), "OK")
        self.assertEqual(self.lua(5, "b"), "OK")
        self.assertEqual(self.lua(7, "c"), "OK")
        with self.assertRaisesRegex(RespError, "STALE fence 6 is older than 7"):
            self.lua(6, "late")
        with self.assertRaisesRegex(RespError, "BADFENCE"):
            self.lua("x", "bad")
        self.assertEqual(self.resource.get("resource"), b"c")

    def test_the_recipes_take_fences_as_large_as_a_clock_in_microseconds(self):
        big = 1795626127000005
        self.assertEqual(self.lua(big, "a"), "OK")
        with self.assertRaisesRegex(RespError, "STALE fence %d is older than %d$" % (big - 1, big)):
            self.lua(big - 1, "late")
        self.assertEqual(self.lua(big + 1, "b"), "OK")
        self.assertEqual(self.resource.get("resource:fence"), str(big + 1).encode())
        target = os.path.join(self.tmp, "state")
        write = os.path.join(EXAMPLES, "fenced-write.sh")
        self.assertEqual(subprocess.run([write, target, str(big)], input=b"big").returncode, 0)
        late = subprocess.run([write, target, str(big - 1)], input=b"late", capture_output=True)
        self.assertEqual(late.returncode, 3, late)

    def test_file_recipe_rejects_lower_fences_only(self):
        target = os.path.join(self.tmp, "state")
        write = os.path.join(EXAMPLES, "fenced-write.sh")
        self.assertEqual(subprocess.run([write, target, "4"], input=b"four").returncode, 0)
        self.assertEqual(subprocess.run([write, target, "9"], input=b"nine").returncode, 0)
        late = subprocess.run([write, target, "5"], input=b"late", capture_output=True)
        self.assertEqual(late.returncode, 3)
        self.assertIn(b"stale fence 5", late.stderr)
        self.assertEqual(subprocess.run([write, target, "x"], input=b"", capture_output=True).returncode, 2)
        with open(target, "rb") as f:
            self.assertEqual(f.read(), b"nine")

    def test_a_holder_paused_past_its_ttl_has_its_late_write_rejected(self):
        """Holder A starts a write that is delayed (its process is paused past the TTL); B takes the
        lock and writes; when A resumes, its write carries the older fence and is refused."""
        go = os.path.join(self.tmp, "go")
        a_fence = os.path.join(self.tmp, "a_fence")
        a_result = os.path.join(self.tmp, "a_result")
        target = os.path.join(self.tmp, "state")
        write = os.path.join(EXAMPLES, "fenced-write.sh")
        lua = os.path.join(EXAMPLES, "fenced-write.lua")
        resource = self.resource.port
        # A's write, in flight: a request that leaves A with A's fence and arrives late (it waits for
        # "go"). It runs in a session of its own, as a request on the wire would not die with A.
        writer = os.path.join(self.tmp, "writer.sh")
        with open(writer, "w") as f:
            f.write('while [ ! -e %s ]; do sleep 0.02; done\n' % go)
            f.write('echo A | %s %s "$REDLOCK_FENCE"; echo "file:$?" > %s\n' % (write, target, a_result))
            f.write('redis-cli -p %d EVAL "$(cat %s)" 2 resource resource:fence "$REDLOCK_FENCE" A >> %s 2>&1\n'
                    % (resource, lua, a_result))
        a_cmd = 'echo "$REDLOCK_FENCE" > %s; setsid sh %s & exec sleep 30' % (a_fence, writer)
        a = spawn(["run", "--ttl", "1s", "job", "--", "sh", "-c", a_cmd], servers=self.cluster,
                  stderr=subprocess.DEVNULL)
        wait_for(lambda: os.path.exists(a_fence) and open(a_fence).read().strip(), what="A to hold the lock")
        fence_a = int(open(a_fence).read())
        # Pause A entirely: redlock (no renewals) and its command.
        child_group = os.getpgid(wait_for(lambda: _child_of(a.pid), what="A's child"))
        os.kill(a.pid, signal.SIGSTOP)
        os.killpg(child_group, signal.SIGSTOP)
        time.sleep(1.3)
        b = self.rl("run", "-w", "5s", "job", "--", "sh", "-c",
                    'echo B | %s %s "$REDLOCK_FENCE" && redis-cli -p %d EVAL "$(cat %s)" 2 resource resource:fence '
                    '"$REDLOCK_FENCE" B && echo "$REDLOCK_FENCE"' % (write, target, resource, lua))
        self.assertEqual(b.code, 0, b)
        fence_b = int(b.stdout.split()[-1])
        self.assertGreater(fence_b, fence_a)
        # A wakes up and finishes its write.
        open(go, "w").close()
        os.killpg(child_group, signal.SIGCONT)
        os.kill(a.pid, signal.SIGCONT)
        wait_for(lambda: os.path.exists(a_result) and "STALE" in open(a_result).read(), timeout=10,
                 what="A's late write to be answered")
        a.wait(timeout=15)
        with open(a_result) as f:
            result = f.read()
        self.assertIn("file:3", result)
        self.assertIn("STALE fence %d" % fence_a, result)
        with open(target) as f:
            self.assertEqual(f.read(), "B\n")
        self.assertEqual(self.resource.get("resource"), b"B")
        self.assertEqual(a.returncode, 79)  # A's run knows it lost the lock


def _child_of(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            kids = f.read().split()
        return int(kids[0]) if kids else None
    except OSError:
        return None


if __name__ == "__main__":
    main()
