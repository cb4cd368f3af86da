"""Servers that fail: frozen (SIGSTOP), answering garbage, nothing listening, a flushed script cache.
A dead or frozen server costs at most --timeout and never blocks the answer of the others."""

import json
import os
import socket
import subprocess
import threading
import time

from harness import ClusterTest, main, redlock, free_port, settle, spawn, wait_for


class Frozen(ClusterTest):
    def test_two_of_five_frozen_cost_no_more_than_the_timeout(self):
        self.cluster.servers[1].freeze()
        self.cluster.servers[3].freeze()
        r = self.rl("--timeout", "500ms", "--json", "acquire", "job")
        self.assertEqual(r.code, 0, r)
        j = r.json()
        self.assertLess(j["elapsed_ms"], 500)
        self.assertLess(r.elapsed, 0.5)
        results = [s["result"] for s in j["servers"]]
        self.assertEqual(results.count("locked"), 3, results)
        token = j["token"]
        # release waits for the frozen ones at most --timeout each, in parallel.
        start = time.monotonic()
        rel = self.rl("--timeout", "500ms", "release", "job", "--token", token)
        self.assertEqual(rel.code, 0, rel)
        self.assertLess(time.monotonic() - start, 1.0)

    def test_a_forced_release_counts_the_time_its_check_waited(self):
        # --force reads every server before it deletes: a frozen one costs that read --timeout,
        # which elapsed_ms counts (it gave the delete round's 0.2ms).
        self.assertEqual(self.rl("acquire", "job").code, 0)
        self.cluster.servers[1].freeze()
        try:
            j = self.rl("--timeout", "300ms", "--json", "release", "--force", "job").json()
        finally:
            self.cluster.servers[1].thaw()
        self.assertTrue(j["released"], j)
        self.assertGreaterEqual(j["elapsed_ms"], 250, j)

    def test_run_does_not_wait_out_the_frozen_servers_release(self):
        # run reports only whether a quorum released; the frozen ones have their release queued
        # behind their acquire and run both, in that order, when they wake.
        self.cluster.servers[0].freeze()
        self.cluster.servers[2].freeze()
        r = self.rl("--timeout", "2s", "run", "-n", "job", "--", "true")
        self.assertEqual(r.code, 0, r)
        self.assertLess(r.elapsed, 1.0)
        self.assertNotIn("release failed", r.stderr)
        self.cluster.servers[0].thaw()
        self.cluster.servers[2].thaw()
        wait_for(lambda: self.cluster.values("job") == [None] * 5, timeout=5, what="no key left")

    def test_run_releases_on_servers_it_does_not_wait_for_even_without_their_scripts(self):
        # The command waits for the lock on every server (on a loaded host the slowest may still
        # be taking it), then empties the script cache of two servers and freezes them: run's
        # release waits for the other three only, and is gone before the frozen two could answer
        # NOSCRIPT to a bare EVALSHA. Its release carries the script, so they drop the lock as
        # soon as they wake.
        late = self.cluster.servers[3:]
        everywhere = " && ".join("[ \"$(redis-cli -p %d EXISTS job)\" = 1 ]" % s.port for s in self.cluster.servers)
        child = "; ".join(["for i in $(seq 100); do { %s; } && break; sleep 0.05; done" % everywhere] +
                          ["redis-cli -p %d SCRIPT FLUSH >/dev/null" % s.port for s in late] +
                          ["kill -STOP %s" % " ".join(str(s.proc.pid) for s in late)])
        r = self.rl("--timeout", "2s", "run", "-n", "job", "--ttl", "60s", "-c", child)
        for s in late:
            s.thaw()
        self.assertEqual(r.code, 0, r)
        self.assertLess(r.elapsed, 1.5, r.stderr)
        wait_for(lambda: self.cluster.values("job") == [None] * 5, timeout=3, what="the lock gone everywhere")

    def test_an_acquire_answered_noscript_after_its_release_went_out_is_not_sent_again(self):
        # A server that lost its scripts is frozen while run takes the lock, so the acquire's
        # EVALSHA waits in its socket; the release follows it there (with its script). When the
        # server wakes it answers NOSCRIPT, then runs the release (nothing to delete). An acquire
        # sent again then would run after the release: a lock left that nobody holds, for its TTL.
        # Two more servers frozen keep run waiting for its release's outcome while this happens.
        slow, late = self.cluster.servers[2], self.cluster.servers[3:]
        with slow.client() as c:
            c.call("SCRIPT", "FLUSH")
        slow.freeze()
        marker = os.path.join(self.scratch_dir(), "frozen")
        child = "kill -STOP %s; touch %s" % (" ".join(str(s.proc.pid) for s in late), marker)
        p = spawn(["--timeout", "2s", "run", "-n", "job", "--ttl", "60s", "-c", child], servers=self.cluster,
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            wait_for(lambda: os.path.exists(marker), timeout=5, what="the command done")
            time.sleep(0.3)  # the release sent meanwhile
        finally:
            slow.thaw()
        out, err = p.communicate(timeout=10)
        for s in late:
            s.thaw()
        self.assertEqual(p.returncode, 0, err)
        wait_for(lambda: self.cluster.values("job") == [None] * 5, timeout=3, what="the lock gone everywhere")
        time.sleep(0.2)  # an acquire sent again would come after
        self.assertEqual(self.cluster.values("job"), [None] * 5)

    def test_acquire_that_cannot_keep_its_lock_gives_it_back_without_waiting_out_the_frozen(self):
        # The token file cannot be written: the lock goes back, and the exit waits for a quorum's
        # release, not for the frozen servers' --timeout.
        self.cluster.servers[1].freeze()
        self.cluster.servers[3].freeze()
        r = self.rl("--timeout", "2s", "acquire", "-n", "job", "--token-file", os.path.join(self.scratch_dir(), "none", "token"))
        self.assertEqual(r.code, 78, r)
        self.assertIn("--token-file", r.stderr)
        self.assertLess(r.elapsed, 1.0)
        self.assertEqual(self.cluster.values("job")[0::2], [None] * 3)
        self.cluster.servers[1].thaw()
        self.cluster.servers[3].thaw()
        wait_for(lambda: self.cluster.values("job") == [None] * 5, timeout=5, what="no key left")

    def test_run_taken_slowly_renews_before_its_short_validity_is_used_up(self):
        # A quorum answers only after 1.2s of a 3s TTL: 1.77s of validity, of which the last 1.1s
        # are kept for stopping the command. The first renewal must come before that, not after
        # the usual TTL/3, or the command is stopped with the servers healthy.
        frozen = self.cluster.servers[:3]
        for s in frozen:
            s.freeze()
        report = os.path.join(self.scratch_dir(), "report.json")
        p = spawn(["--timeout", "2s", "run", "job", "--ttl", "3s", "--report", report, "--", "sleep", "2"],
                  servers=self.cluster)
        try:
            time.sleep(1.2)
        finally:
            for s in frozen:
                s.thaw()
        self.assertEqual(p.wait(timeout=10), 0)
        with open(report) as f:
            j = json.load(f)
        self.assertEqual(j["outcome"], "child_exited", j)
        self.assertGreaterEqual(j["renewals"], 2, j)

    def test_three_of_five_frozen_is_69_quickly_and_leaves_no_key(self):
        for i in (0, 2, 4):
            self.cluster.servers[i].freeze()
        r = self.rl("--timeout", "200ms", "--json", "acquire", "-n", "job")
        self.assertEqual(r.code, 69, r)
        self.assertLess(r.elapsed, 1.0)
        j = r.json()
        self.assertEqual(j["reason"], "no_quorum")
        self.assertEqual([s["result"] for s in j["servers"]].count("timeout"), 3)
        self.assertIsNone(self.cluster.servers[1].get("job"))
        self.assertIsNone(self.cluster.servers[3].get("job"))
        # The frozen ones got the release right behind the acquire: nothing there when they wake.
        for i in (0, 2, 4):
            self.cluster.servers[i].thaw()
        self.assertEqual(settle(lambda: self.cluster.values("job"), [None] * 5), [None] * 5)

    def test_one_attempt_with_no_quorum_gives_up_at_once(self):
        for i in (0, 1, 2):
            self.cluster.servers[i].freeze()
        r = self.rl("--timeout", "100ms", "acquire", "-n", "job")
        self.assertEqual(r.code, 69, r)
        self.assertLess(r.elapsed, 1.0)
        self.assertIn("no quorum", r.stderr)

    def test_status_and_extend_with_frozen_servers(self):
        token = self.rl("acquire", "job").stdout.strip()
        self.cluster.servers[0].freeze()
        self.cluster.servers[4].freeze()
        st = self.rl("--timeout", "200ms", "--json", "status", "job")
        self.assertEqual(st.code, 0, st)
        self.assertLess(st.elapsed, 1.0)
        self.assertEqual(st.json()["state"], "held")
        ex = self.rl("--timeout", "200ms", "extend", "job", "--token", token)
        self.assertEqual(ex.code, 0, ex)
        self.assertLess(ex.elapsed, 0.5)
        for i in (1, 2, 3):
            self.cluster.servers[i].freeze()
        st = self.rl("--timeout", "200ms", "status", "job")
        self.assertEqual(st.code, 69, st)


class Unreachable(ClusterTest):
    """A server whose connection never comes up: SYNs go unanswered, as from a host that is powered
    off or behind a partition that drops. A listening socket whose accept queue is full does that."""
    N = 3

    def black_hole(self):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = []
        for _ in range(2):
            s = socket.socket()
            s.setblocking(False)
            try:
                s.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            fillers.append(s)
        self.addCleanup(lambda: [s.close() for s in fillers + [listener]])
        # The next connect stays in SYN-SENT: the queue is full and nothing accepts.
        probe = socket.socket()
        probe.settimeout(0.3)
        with self.assertRaises(socket.timeout):
            probe.connect(("127.0.0.1", port))
        probe.close()
        return "127.0.0.1:%d" % port

    def test_acquire_answers_without_waiting_for_the_connection(self):
        servers = self.cluster.spec + "," + self.black_hole()
        r = redlock(["--timeout", "3s", "--json", "acquire", "job"], servers=servers)
        self.assertEqual(r.code, 0, r)
        # The quorum (3 of 4) answered at once; nothing was sent to the fourth, so nothing needs
        # to reach it before the answer: its --timeout is not waited out.
        self.assertLess(r.elapsed, 1.5)
        self.assertEqual([s["ok"] for s in r.json()["servers"]], [True, True, True, None])
        self.assertEqual(r.json()["servers"][3]["result"], "not_waited_for")
        self.assertEqual(self.cluster.values("job"), [r.json()["token"].encode()] * 3)

    def test_run_does_not_wait_for_it_either(self):
        servers = self.cluster.spec + "," + self.black_hole()
        report = os.path.join(self.cluster.workdir, "report.json")
        r = redlock(["--timeout", "3s", "run", "-n", "job", "--report", report, "--", "true"], servers=servers)
        self.assertEqual(r.code, 0, r)
        self.assertLess(r.elapsed, 1.5)
        with open(report) as f:
            self.assertTrue(json.load(f)["released"])
        self.assertEqual(self.cluster.values("job"), [None] * 3)

    def test_a_failed_attempt_still_waits_to_release_where_it_may_hold(self):
        # Two servers answer, the third is frozen (connected: the acquire reached its socket), the
        # fourth unreachable. No quorum; the frozen one gets its release before redlock exits.
        self.cluster.servers[2].freeze()
        servers = self.cluster.spec + "," + self.black_hole()
        r = redlock(["--timeout", "300ms", "--json", "acquire", "-n", "job"], servers=servers)
        self.assertEqual(r.code, 69, r)
        self.assertLess(r.elapsed, 1.5)
        self.cluster.servers[2].thaw()
        wait_for(lambda: self.cluster.values("job") == [None] * 3, timeout=5, what="no key left")


class Blips(ClusterTest):
    """A wait outlasts servers that are down or frozen for a while: no quorum is "not yet" until
    the wait ends, and 69 only when it ends with the last attempt short of a quorum."""
    N = 3

    def test_a_wait_outlasts_two_of_three_frozen_for_four_seconds(self):
        frozen = self.cluster.servers[1:]
        for s in frozen:
            s.freeze()
        waiter = spawn(["-v", "--json", "acquire", "-w", "10s", "job"], servers=self.cluster,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            time.sleep(4)
            self.assertIsNone(waiter.poll(), "gave up while the servers were frozen")
        finally:
            for s in frozen:
                s.thaw()
        out, err = waiter.communicate(timeout=10)
        self.assertEqual(waiter.returncode, 0, (out, err))
        token = json.loads(out)["token"]
        # Held on a quorum, and nowhere by anyone else: the third server holds it too, or not at
        # all, as its backlog of this waiter's attempts and give-backs left it (acquire does not
        # heal; the first renewal of a run would).
        values = self.cluster.values("job")
        self.assertGreaterEqual(values.count(token.encode()), 2, values)
        self.assertEqual([v for v in values if v not in (None, token.encode())], [], values)
        # -v says what it waits for, once, not at every attempt.
        lines = [l for l in err.decode().splitlines() if "no quorum" in l]
        self.assertEqual(len(lines), 1, err)
        self.assertRegex(lines[0], r"^redlock: job: no quorum \(2 of 3 servers failed .*; retrying until the wait ends in "
                         r"(9|10)\.\d+s$")

    def test_a_wait_on_two_of_three_down_for_good_ends_with_69_at_its_deadline(self):
        down = "127.0.0.1:%d,127.0.0.1:%d" % (free_port(), free_port())
        servers = self.cluster.servers[0].address + "," + down
        r = redlock(["--json", "acquire", "-w", "2s", "job"], servers=servers)
        self.assertEqual(r.code, 69, r)
        self.assertGreaterEqual(r.elapsed, 1.8, r)
        self.assertLess(r.elapsed, 4.0, r)
        j = r.json()
        self.assertEqual(j["reason"], "no_quorum")
        self.assertIn("still no quorum when the wait ended", j["error"]["message"])
        self.assertGreater(j["attempts"], 3)
        self.assertIsNone(self.cluster.servers[0].get("job"))
        # One attempt (-n) keeps its answer at once.
        r = redlock(["acquire", "-n", "job"], servers=servers)
        self.assertEqual(r.code, 69, r)
        self.assertLess(r.elapsed, 1.0, r)

    def test_a_wrong_password_is_not_waited_for(self):
        s = self.cluster.servers[0]
        servers = ",".join("redis://u:wrong@%s" % x.address for x in self.cluster.servers)
        r = redlock(["acquire", "-w", "5s", "job"], servers=servers)
        self.assertEqual(r.code, 69, r)
        self.assertLess(r.elapsed, 1.0, r)
        self.assertIsNone(s.get("job"))


class ScriptCache(ClusterTest):
    N = 3

    def test_script_flush_is_handled_transparently(self):
        token = self.rl("acquire", "job").stdout.strip()
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("SCRIPT", "FLUSH")
        self.assertEqual(self.rl("extend", "job", "--token", token).code, 0)
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("SCRIPT", "FLUSH")
        self.assertEqual(self.rl("release", "job", "--token", token).code, 0)
        self.assertEqual(self.cluster.values("job"), [None] * 3)
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("SCRIPT", "FLUSH")
        self.assertEqual(self.rl("acquire", "job").code, 0)

    def test_extend_reaches_a_server_it_does_not_wait_for_even_without_its_script(self):
        # The third server lost its scripts and is frozen: extend decides on the other two and is
        # gone before it could answer NOSCRIPT to a bare EVALSHA. Its extend carries the script,
        # so the third server's expiry moves on too as soon as it wakes.
        token = self.rl("acquire", "job", "--ttl", "60s").stdout.strip()
        late = self.cluster.servers[2]
        with late.client() as c:
            c.call("SCRIPT", "FLUSH")
        late.freeze()
        try:
            r = self.rl("--timeout", "2s", "extend", "job", "--token", token, "--ttl", "300s")
        finally:
            late.thaw()
        self.assertEqual(r.code, 0, r)
        self.assertLess(r.elapsed, 1.5)
        wait_for(lambda: late.pttl("job") > 200000, timeout=3, what="the late server's expiry moved on")

    def test_restarted_servers_without_scripts(self):
        self.assertEqual(self.rl("acquire", "a").code, 0)
        for s in self.cluster.servers:
            s.restart()
        r = self.rl("--json", "acquire", "b")
        self.assertEqual(r.code, 0, r)
        self.assertGreaterEqual([s["result"] for s in r.json()["servers"]].count("locked"), 2)
        st = self.rl("--json", "status", "b").json()
        self.assertEqual(st["state"], "held")
        self.assertTrue(all(s["ok"] for s in st["servers"]), st)


class Garbage(ClusterTest):
    N = 1

    def garbage_server(self, payload):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        stop = threading.Event()

        def serve():
            sock.settimeout(0.1)
            while not stop.is_set():
                try:
                    c, _ = sock.accept()
                except OSError:
                    continue
                try:
                    c.sendall(payload)
                    time.sleep(0.05)
                finally:
                    c.close()

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        self.addCleanup(lambda: (stop.set(), t.join(2), sock.close()))
        return "127.0.0.1:%d" % sock.getsockname()[1]

    def test_a_server_that_answers_garbage_is_69_not_a_crash(self):
        addr = self.garbage_server(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        for args in (["acquire", "job"], ["status", "job"], ["release", "job", "--force"], ["extend", "job", "--token", "t"]):
            r = redlock(["--timeout", "300ms"] + args, servers=addr)
            self.assertEqual(r.code, 69, (args, r))
            self.assertLess(r.elapsed, 1.5)
            self.assertIn("not a Redis server", r.stderr + r.stdout)

    def test_binary_junk_too(self):
        addr = self.garbage_server(bytes(range(256)) * 4)
        r = redlock(["--timeout", "300ms", "acquire", "-n", "job"], servers=addr)
        self.assertEqual(r.code, 69, r)

    def test_nothing_listening_is_69_at_once(self):
        r = redlock(["--json", "acquire", "-n", "job"], servers="127.0.0.1:%d" % free_port())
        self.assertEqual(r.code, 69, r)
        self.assertLess(r.elapsed, 0.5)
        self.assertIn("refused", r.json()["servers"][0]["error"])

    def test_majority_of_bad_servers_with_one_good_one(self):
        bad = self.garbage_server(b"-ERR not really\r\n" * 10)
        servers = ",".join([self.cluster.servers[0].address, bad, "127.0.0.1:%d" % free_port()])
        r = redlock(["acquire", "-w", "500ms", "job"], servers=servers)
        self.assertEqual(r.code, 69, r)
        self.assertIsNone(self.cluster.servers[0].get("job"))


if __name__ == "__main__":
    main()
