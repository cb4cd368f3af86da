"""Fencing tokens across N masters: strictly increasing from holder to holder, through `run`, across
a kill -9 and empty restart of a minority; and the resource side (examples/fenced-write.*) rejecting
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

    def test_strictly_increasing_over_many_holders(self):
        fences = [self.acquire_release() for _ in range(40)]
        self.assertEqual(fences, sorted(set(fences)))
        self.assertEqual(fences[0], 1)
        # Another name has a counter of its own.
        self.assertEqual(self.acquire_release("other"), 1)

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
        # NOSCRIPT that nobody reads would leave its counter behind for the next holder.
        for _ in range(3):
            self.acquire_release()
        late = self.cluster.servers[4]
        late.restart()
        late.freeze()
        try:
            fence = self.acquire_release()
        finally:
            late.thaw()
        self.assertEqual(fence, 4)
        wait_for(lambda: late.get("{job}:redlock:fence") == b"4", timeout=5,
                 what="fence 4 on the late server")

    def test_status_shows_the_last_fence(self):
        for _ in range(3):
            self.acquire_release()
        j = self.rl("--json", "status", "job").json()
        self.assertEqual(j["fence"], 3)

    def test_the_counter_never_expires_and_never_changes_the_lock_key(self):
        r = self.rl("--json", "acquire", "job").json()
        for s in self.cluster.servers:
            self.assertEqual(s.get("job"), r["token"].encode())
            if s.get("{job}:redlock:fence") is not None:
                self.assertEqual(s.pttl("{job}:redlock:fence"), -1)


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
