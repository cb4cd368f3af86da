"""The shared mode (--shared): readers hold at once, a writer (any exclusive lock of the name) with
nobody else; a waiting writer holds new readers back; a writer that gives up leaves no trace; a
crashed reader leaves after its own TTL; redis-py's exclusive lock and our readers exclude each
other. The work records its own intervals."""

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from harness import ClusterTest, main, redlock_binary, spawn, wait_for  # first: a python3 with redis-py

import redis

WRITERS_KEY = "{data}:redlock:writers"

# A line as the work starts and as it ends: the time, who (reader or writer) and its fence.
WORK = ('echo "start $(date +%s%N) $WHO $REDLOCK_FENCE" >> "$LOG"; sleep $HOLD; '
        'echo "end $(date +%s%N) $WHO $REDLOCK_FENCE" >> "$LOG"')


def intervals(path):
    """(start ns, end ns, who, fence) of each work, from its own lines, in the order they started."""
    with open(path) as f:
        lines = [line.split() for line in f.read().splitlines()]
    starts = [line for line in lines if line[0] == "start"]
    ends = [line for line in lines if line[0] == "end"]
    out = []
    for s in starts:
        # A work's end is the first line after its start with the same who and fence that no other took.
        e = next(e for e in ends if e[2] == s[2] and e[3] == s[3] and int(e[1]) >= int(s[1]))
        ends.remove(e)
        out.append((int(s[1]), int(e[1]), s[2], int(s[3])))
    return sorted(out)


class Shared(ClusterTest):
    N = 3

    def writers_waiting(self):
        return [s.client().call("ZCARD", WRITERS_KEY) for s in self.cluster.servers]

    def test_readers_overlap_and_a_writer_never_overlaps_anyone(self):
        log = os.path.join(self.scratch_dir(), "log")
        codes = []

        def worker(who, cycles, hold, shared):
            for _ in range(cycles):
                args = ["run"] + (["--shared"] if shared else []) + ["--ttl", "2s", "-w", "20s", "data", "-c", WORK]
                r = self.rl(*args, env={"LOG": log, "WHO": who, "HOLD": hold}, timeout=30)
                codes.append((who, r.code))

        threads = [threading.Thread(target=worker, args=("reader", 3, "0.3", True)) for _ in range(8)]
        threads += [threading.Thread(target=worker, args=("writer", 3, "0.1", False)) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(40)
        self.assertEqual([c for _, c in codes], [0] * 30, codes)
        works = intervals(log)
        self.assertEqual(len(works), 30)
        for i, (start, end, who, _) in enumerate(works):
            if who != "writer":
                continue
            for j, (s2, e2, who2, _) in enumerate(works):
                self.assertFalse(i != j and s2 < end and start < e2, "a writer overlapped a %s" % who2)
        # Readers ran together: at some moment more than one was in.
        events = sorted([(s, 1) for s, _, w, _ in works if w == "reader"] +
                        [(e, -1) for _, e, w, _ in works if w == "reader"], key=lambda e: (e[0], e[1]))
        running = peak = 0
        for _, step in events:
            running += step
            peak = max(peak, running)
        self.assertGreater(peak, 1)
        print("SHARED readers at once: %d of 8; 30 works in %.2fs" % (peak, (works[-1][1] - works[0][0]) / 1e9),
              file=sys.stderr)
        # A reader's fence is at least that of every writer that finished before it started.
        for start, _, who, fence in works:
            if who == "reader":
                before = [f for s, e, w, f in works if w == "writer" and e < start]
                self.assertGreaterEqual(fence, max(before, default=0))
        self.assertEqual(self.writers_waiting(), [0, 0, 0])

    def test_a_writer_behind_a_stream_of_readers_gets_in_once_the_readers_it_found_are_done(self):
        readers = []
        stop = threading.Event()

        def stream():
            # A new reader every quarter second, each reading for a second: never a moment without one.
            while not stop.is_set():
                readers.append(spawn(["run", "--shared", "--ttl", "5s", "-w", "20s", "data", "--", "sleep", "1"],
                                     servers=self.cluster))
                time.sleep(0.25)

        t = threading.Thread(target=stream)
        t.start()
        try:
            time.sleep(1.2)
            arrived = time.time()
            r = self.rl("run", "--ttl", "5s", "-w", "10s", "data", "--", "date", "+%s.%N", timeout=20)
        finally:
            stop.set()
            t.join()
            for p in readers:
                p.wait(30)
        self.assertEqual(r.code, 0, r)
        waited = float(r.stdout.strip()) - arrived
        print("SHARED writer behind a stream of 1 s readers: in after %.3fs" % waited, file=sys.stderr)
        self.assertLess(waited, 2.0)  # 2 × the readers' run time
        self.assertEqual([p.returncode for p in readers], [0] * len(readers))

    def test_a_writer_that_gives_up_leaves_no_entry_among_the_waiting_writers(self):
        reader = self.rl("acquire", "--shared", "--ttl", "20s", "data")
        self.assertEqual(reader.code, 0, reader)
        busy = self.rl("--json", "acquire", "-n", "data")
        self.assertEqual(busy.code, 75, busy)
        self.assertEqual(busy.json()["holder"]["owner"], "readers")
        self.assertEqual(self.writers_waiting(), [0, 0, 0])
        timed_out = self.rl("acquire", "-w", "300ms", "data")
        self.assertEqual(timed_out.code, 75, timed_out)
        self.assertEqual(self.writers_waiting(), [0, 0, 0])
        # Stopped by a signal while it waits: its entry is there while it waits, gone after.
        p = spawn(["acquire", "-w", "20s", "data"], servers=self.cluster, stdout=subprocess.PIPE)
        wait_for(lambda: self.writers_waiting() == [1, 1, 1], what="the writer to queue")
        # Meanwhile new readers are held back.
        self.assertEqual(self.rl("acquire", "--shared", "-n", "data").code, 75)
        let_in = self.rl("acquire", "--shared", "-n", "--no-writer-priority", "data")
        self.assertEqual(let_in.code, 0, let_in)
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(10), 128 + signal.SIGTERM)
        p.stdout.close()
        self.assertEqual(self.writers_waiting(), [0, 0, 0])
        self.assertEqual(self.rl("acquire", "--shared", "-n", "data").code, 0)

    def test_a_crashed_reader_leaves_after_its_own_ttl(self):
        long = self.rl("acquire", "--shared", "--ttl", "20s", "--owner", "long", "data")
        self.assertEqual(long.code, 0, long)
        p = spawn(["run", "--shared", "--ttl", "1s", "--owner", "crash", "data", "--", "sleep", "30"],
                  servers=self.cluster, start_new_session=True)
        wait_for(lambda: len(self.rl("--json", "status", "data").json()["readers"]) == 2, what="the second reader")
        os.killpg(p.pid, signal.SIGKILL)  # redlock and its command at once: nobody releases
        p.wait(10)
        wait_for(lambda: len(self.rl("--json", "status", "data").json()["readers"]) == 1, timeout=5,
                 what="the crashed reader to expire")
        status = self.rl("--json", "status", "data").json()
        self.assertEqual([r["owner"] for r in status["readers"]], ["long"])
        self.assertGreater(status["readers"][0]["ttl_ms"], 15000)  # the marker still covers it
        self.assertEqual(self.rl("acquire", "-n", "data").code, 75)

    def test_a_forced_release_of_the_readers_counts_what_it_deleted(self):
        for owner in ("a", "b"):
            self.assertEqual(self.rl("acquire", "--shared", "--ttl", "20s", "--owner", owner, "data").code, 0)
        r = self.rl("--json", "release", "--shared", "--force", "data")
        self.assertEqual((r.code, r.json()["deleted"]), (0, self.N), r)
        self.assertEqual(self.rl("--json", "status", "--shared", "data").json()["state"], "free")
        # No readers: nothing deleted, and a writer's lock or application data under the name is
        # left as it is, and not said to be deleted.
        writer = self.rl("acquire", "--ttl", "20s", "data").stdout.strip()
        for name in ("data", "nobody"):
            r = self.rl("--json", "release", "--shared", "--force", name)
            self.assertEqual((r.code, r.json()["deleted"]), (0, 0), r)
            self.assertEqual({s["result"] for s in r.json()["servers"]}, {"not_held"}, r)
        self.assertEqual(self.cluster.values("data"), [writer.encode()] * self.N)

    def test_a_plain_forced_release_of_readers_takes_every_reader(self):
        for owner in ("a", "b"):
            self.assertEqual(self.rl("acquire", "--shared", "--ttl", "20s", "--owner", owner, "data").code, 0)
        r = self.rl("--json", "release", "--force", "data")
        self.assertEqual((r.code, r.json()["deleted"]), (0, self.N), r)
        s = self.rl("--json", "status", "--shared", "data").json()
        self.assertEqual((s["state"], s["readers"]), ("free", []), s)
        # A writer then holds it alone, as status says.
        writer = self.rl("acquire", "--ttl", "20s", "--owner", "w", "data")
        self.assertEqual(writer.code, 0, writer)
        s = self.rl("--json", "status", "--shared", "data").json()
        self.assertEqual((s["writer"]["owner"], s["readers"]), ("w", []), s)

    def test_status_json_and_usage(self):
        r = self.rl("--json", "acquire", "--shared", "--owner", "backup", "data")
        self.assertEqual((r.code, r.json()["mode"], r.json()["fence"]), (0, "shared", 0), r)
        status = self.rl("--json", "status", "data")  # plain status finds the mode
        self.assertEqual(status.code, 0, status)
        s = status.json()
        self.assertEqual((s["mode"], s["state"], s["writer"], s["writers_waiting"]), ("shared", "held", None, 0))
        self.assertEqual([s[k] for k in ("token", "ttl_ms", "owner", "since", "queue")], [None] * 4 + [[]], s)
        self.assertEqual([x["owner"] for x in s["readers"]], ["backup"])
        # Each server that answered says which address did, as a mutex's status does.
        self.assertEqual([x["resolved"] for x in s["servers"]], ["127.0.0.1:%d" % v.port for v in self.cluster.servers])
        self.assertEqual(self.rl("release", "--shared", "--token", r.json()["token"], "data").code, 0)
        writer = self.rl("--json", "acquire", "--owner", "maintenance", "data").json()
        s = self.rl("--json", "status", "--shared", "data").json()
        self.assertEqual((s["writer"]["owner"], s["writer"]["fence"], s["readers"]), ("maintenance", writer["fence"], []))
        self.assertEqual(self.rl("acquire", "--shared", "--limit", "2", "data").code, 64)
        self.assertEqual(self.rl("acquire", "--shared", "--token", "redlock:shared", "x").code, 64)
        self.assertEqual(self.rl("acquire", "-n", "data:redlock:readers").code, 64)

    def test_the_readers_marker_is_no_token_for_release_extend_or_a_give_back(self):
        reader = self.rl("acquire", "--shared", "--ttl", "60s", "data").out.strip()
        with tempfile.TemporaryDirectory() as d:
            marker_file = os.path.join(d, "token")
            with open(marker_file, "w") as f:
                f.write("redlock:shared\n")
            for args, env in ((["release", "--token", "redlock:shared", "data"], None),
                              (["release", "--token-file", marker_file, "data"], None),
                              (["extend", "--token", "redlock:shared", "--ttl", "1ms", "data"], None),
                              (["release", "data"], {"REDLOCK_TOKEN": "redlock:shared"}),
                              (["run", "-n", "data", "--", "true"], {"REDLOCK_TOKEN": "redlock:shared"}),
                              # As an enclosing run's own (REDLOCK_KEY names the lock), re-entered.
                              (["run", "-n", "data", "--", "true"],
                               {"REDLOCK_KEY": "data", "REDLOCK_TOKEN": "redlock:shared"})):
                r = self.rl(*args, env=env)
                self.assertEqual(r.code, 64, (args, r))
                self.assertIn("'redlock:shared' is the readers' marker, never a token", r.stderr)
        # The reader still holds on every server, and a writer is still kept out.
        self.assertEqual(self.cluster.values("data"), [b"redlock:shared"] * self.N)
        self.assertEqual(self.rl("acquire", "-n", "data").code, 75)
        self.assertEqual(self.rl("release", "--shared", "--token", reader, "data").code, 0)

    def test_a_nested_reader_re_enters_and_the_command_learns_the_write_fence(self):
        fence = self.rl("--json", "acquire", "--ttl", "1s", "data").json()["fence"]
        self.assertEqual(self.rl("release", "--force", "data").code, 0)
        r = self.rl("run", "--shared", "-n", "data", "-c",
                    'echo "$REDLOCK_FENCE"; "$RL" --json acquire --shared -n data >/dev/null && echo nested',
                    env={"RL": redlock_binary()}, timeout=20)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.stdout.split(), [str(fence), "nested"])

    def test_a_reader_inside_the_run_that_holds_the_lock_alone_re_enters(self):
        # The lock held alone covers a reader: re-entered, not refused as lost (79).
        r = self.rl("run", "-n", "data", "-c",
                    '"$RL" run -n --shared data -- echo inner; "$RL" acquire -n --shared data >/dev/null && echo acquired',
                    env={"RL": redlock_binary()}, timeout=20)
        self.assertEqual((r.code, r.stdout.split(), r.stderr), (0, ["inner", "acquired"], ""), r)
        self.assertEqual(self.cluster.values("data"), [None] * self.N)

    def test_the_lock_alone_inside_the_run_that_reads_it_is_refused_with_why(self):
        # Other readers may hold it too: not re-entered; waiting would be waiting for itself.
        r = self.rl("run", "-n", "--shared", "data", "-c",
                    '"$RL" run -n data -- echo inner; echo "run $?"; "$RL" acquire -n data; echo "acquire $?"',
                    env={"RL": redlock_binary()}, timeout=20)
        self.assertEqual((r.code, r.stdout.split("\n")[:2]), (0, ["run 79", "acquire 75"]), r)
        self.assertEqual(r.stderr.count("the enclosing run holds it shared: it cannot be taken alone inside that run"),
                         2, r)
        self.assertEqual(self.cluster.values("data"), [None] * self.N)


class RedisPyExclusion(ClusterTest):
    """redis-py's Lock on every server (as a Redlock client takes it) and our readers exclude each other."""
    N = 3

    def test_their_exclusive_lock_keeps_readers_out_and_readers_keep_it_out(self):
        clients = [redis.Redis(host="127.0.0.1", port=s.port) for s in self.cluster.servers]
        theirs = [c.lock("data", timeout=30) for c in clients]
        for lock in theirs:
            lock.local.token = b"their-token"
            self.assertTrue(lock.acquire(blocking=False, token=b"their-token"))
        self.assertEqual(self.rl("acquire", "--shared", "-n", "data").code, 75)
        for lock in theirs:
            lock.release()
        self.assertEqual(self.rl("acquire", "--shared", "--ttl", "10s", "data").code, 0)
        for c in clients:
            self.assertFalse(c.lock("data", timeout=30).acquire(blocking=False))


if __name__ == "__main__":
    main()
