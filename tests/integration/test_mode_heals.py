"""A renewal heals a server restarted empty in both modes, as the mutex's does: a reader of the
shared mode (`run --shared`) is put back among the readers there, with the marker, and a
semaphore's slot (`run --limit`) is put back as a lock; a writer, and a second taker of the only
slot, polling all the while, never get in. Both runs share one restart, to keep the wall time
short."""

import os
import threading
import time

from harness import ClusterTest, main, spawn, wait_for  # first: a python3 with redis-py

TTL = 2.0
MARKER = b"redlock:shared"
READERS = "{data}:redlock:readers"
SLOT = "{jobs}:redlock:slot:0"


def read_token(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


class RenewalHeals(ClusterTest):
    N = 3

    def start_run(self, args, token_file):
        p = spawn(["run", "--ttl", "2s"] + args + ["--", "sh", "-c",
                   'echo "$REDLOCK_TOKEN" > %s; sleep 8' % token_file], servers=self.cluster)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
        return p

    def contend(self, args, stop, got_in):
        deadline = time.monotonic() + 30
        while not stop.is_set() and time.monotonic() < deadline:
            # A TTL no longer than the runs': an attempt that took the server coming back, and whose
            # retraction came too late there, holds it only that long (a heal never overwrites it).
            r = self.rl("--timeout", "50ms", "acquire", "-n", "--ttl", "2s", *args)
            if r.code == 0:
                got_in.append((args, r.stdout.strip()))
            stop.wait(0.02)

    def test_a_reader_and_a_slot_come_back_on_a_server_restarted_empty(self):
        tmp = self.scratch_dir()
        reader_file, slot_file = os.path.join(tmp, "reader"), os.path.join(tmp, "slot")
        reader = self.start_run(["--shared", "data"], reader_file)
        holder = self.start_run(["--limit", "1", "jobs"], slot_file)
        tokens = [wait_for(lambda f=f: read_token(f), what="a token") for f in (reader_file, slot_file)]

        # Both on every server before one restarts: a server whose answer came after the quorum's
        # (a slow machine) may not hold it until the first renewal puts it back, and a lock on
        # exactly a quorum is lost, rightly, when one of those forgets it.
        def everywhere():
            for s in self.cluster.servers:
                with s.client() as c:
                    if c.call("ZSCORE", READERS, tokens[0]) is None or c.call("GET", SLOT) != tokens[1].encode():
                        return False
            return True
        wait_for(everywhere, timeout=3 * TTL, what="both locks on every server")
        stop = threading.Event()
        got_in = []
        contenders = [threading.Thread(target=self.contend, args=(args, stop, got_in), daemon=True)
                      for args in (["data"], ["--limit", "1", "jobs"])]
        for t in contenders:
            t.start()
        restarted = self.cluster.servers[1]
        try:
            restarted.kill()
            time.sleep(TTL + 0.3)
            restarted.start(same_port=True)

            def reader_back():
                with restarted.client() as c:
                    return c.call("ZSCORE", READERS, tokens[0]) is not None and c.call("GET", "data") == MARKER

            for healed, what in ((reader_back, "the reader"),
                                 (lambda: restarted.get(SLOT) == tokens[1].encode(), "the slot")):
                try:
                    wait_for(healed, timeout=3 * TTL, what=what)
                except AssertionError:
                    self.fail("%s not healed on %s: data=%r slot=%r" % (what, restarted.url, restarted.get("data"),
                                                                         restarted.get(SLOT)))
            with restarted.client() as c:
                self.assertGreater(c.call("PTTL", "data"), 0)
            self.assertIsNone(reader.poll(), "the reader ended during the restart")
            self.assertIsNone(holder.poll(), "the slot's holder ended during the restart")
        finally:
            stop.set()
            for t in contenders:
                t.join(10)
        self.assertEqual(got_in, [])
        for p in (reader, holder):
            p.wait(timeout=30)
            self.assertEqual(p.returncode, 0)


if __name__ == "__main__":
    main()
