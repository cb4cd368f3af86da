"""A counting semaphore (--limit K): K slots, each an ordinary lock, so at most K holders at once,
with a frozen server in the middle; fences per slot; the stored limit; a crashed holder's slot."""

import json
import os
import threading
import time

from harness import ClusterTest, main, redlock_binary

LIMIT = 3
WORKERS = 12
CYCLES = 3

# The work records itself: a line as it starts and as it ends, with its slot and fence.
WORK = ('echo "start $(date +%s%N) $REDLOCK_SLOT $REDLOCK_FENCE" >> "$LOG"; sleep 0.15; '
        'echo "end $(date +%s%N) $REDLOCK_SLOT $REDLOCK_FENCE" >> "$LOG"')


def most_at_once(lines):
    """The largest number of works running at once, from their own start and end lines."""
    events = sorted((int(t), 1 if kind == "start" else -1) for kind, t, _, _ in lines)
    running = peak = 0
    for _, step in sorted(events, key=lambda e: (e[0], e[1])):  # an end before a start at the same instant
        running += step
        peak = max(peak, running)
    return peak


class Semaphore(ClusterTest):
    N = 3

    def test_twelve_workers_never_more_than_three_at_once_under_a_frozen_server(self):
        log = os.path.join(self.scratch_dir(), "log")
        codes = []

        def worker():
            for _ in range(CYCLES):
                r = self.rl("run", "--limit", str(LIMIT), "--ttl", "2s", "-w", "25s", "sem", "-c", WORK,
                            env={"LOG": log}, timeout=40)
                codes.append(r.code)

        threads = [threading.Thread(target=worker) for _ in range(WORKERS)]
        for t in threads:
            t.start()
        # One server frozen for a while in the middle of it (a minority: the slots keep their quorum).
        frozen = self.cluster.servers[1]
        time.sleep(0.5)
        frozen.freeze()
        try:
            time.sleep(1.2)
        finally:
            frozen.thaw()
        for t in threads:
            t.join(60)
        self.assertEqual(codes, [0] * (WORKERS * CYCLES))
        with open(log) as f:
            lines = [line.split() for line in f.read().splitlines()]
        starts = [line for line in lines if line[0] == "start"]
        self.assertEqual(len(starts), WORKERS * CYCLES)
        self.assertEqual(most_at_once(lines), LIMIT)
        # Each slot is a lock of its own: its fences increase in the order its holders started.
        for slot in range(LIMIT):
            fences = [int(f) for _, t, s, f in sorted(starts, key=lambda line: int(line[1])) if s == str(slot)]
            self.assertTrue(fences, "slot %d never used" % slot)
            self.assertEqual(fences, sorted(set(fences)), "slot %d" % slot)
        self.assertEqual({s for _, _, s, _ in starts}, {str(i) for i in range(LIMIT)})

    def test_a_different_limit_is_a_configuration_error(self):
        first = self.rl("acquire", "--limit", "3", "--ttl", "5s", "deploys")
        self.assertEqual(first.code, 0, first)
        r = self.rl("acquire", "--limit", "2", "-n", "deploys")
        self.assertEqual(r.code, 78, r)
        self.assertIn("redlock: error: semaphore limit conflict: deploys has limit 3, asked 2", r.stderr)
        self.assertEqual(self.rl("status", "--limit", "2", "deploys").code, 78)
        # Nothing taken by the refused caller: the one holder is still alone.
        status = self.rl("--json", "status", "--limit", "3", "deploys").json()
        self.assertEqual(status["held"], 1)
        # Freed by force (every slot and the stored limit), the name takes another limit.
        self.assertEqual(self.rl("release", "--limit", "3", "--force", "deploys").code, 0)
        self.assertEqual(self.rl("acquire", "--limit", "2", "-n", "deploys").code, 0)

    def test_force_without_limit_on_a_semaphore_says_how_to_free_it(self):
        token = self.rl("acquire", "--limit", "2", "--ttl", "60s", "jobs").out.strip()
        r = self.rl("release", "--force", "jobs")
        self.assertEqual((r.code, r.stderr), (64, "redlock: error: jobs is a semaphore (limit 2): release --force "
                                                  "--limit 2 frees its slots\n"))
        self.assertEqual(self.rl("--json", "status", "jobs").json()["holders"][0]["token"], token.decode())
        self.assertEqual(self.rl("release", "--force", "--limit", "2", "jobs").code, 0)
        self.assertEqual(self.rl("--json", "status", "--limit", "2", "jobs").json()["held"], 0)
        # A NAME that is no semaphore (any more): a forced release of nothing, as before.
        j = self.rl("--json", "release", "--force", "jobs").json()
        self.assertEqual((j["released"], j["deleted"]), (True, 0))

    def test_a_forced_release_counts_servers_not_slots(self):
        # Two of three slots held: deleted on each of the 3 servers (it said 6 of 3), and each
        # server's report says released, whichever slot was the last one looked at.
        for _ in range(2):
            self.assertEqual(self.rl("acquire", "--limit", "3", "--ttl", "60s", "jobs").code, 0)
        j = self.rl("--json", "release", "--force", "--limit", "3", "jobs").json()
        self.assertEqual((j["released"], j["deleted"]), (True, self.N), j)
        self.assertEqual([s["result"] for s in j["servers"]], ["released"] * self.N, j)
        for _ in range(2):
            self.assertEqual(self.rl("acquire", "--limit", "3", "--ttl", "60s", "jobs").code, 0)
        r = self.rl("-v", "release", "--force", "--limit", "3", "jobs")
        self.assertEqual(r.code, 0, r)
        self.assertIn("deleted on 3 of 3 servers", r.stderr)

    def test_a_crashed_holders_slot_frees_after_its_ttl(self):
        # acquire returns at once and nobody releases: as a holder that crashed.
        for _ in range(2):
            self.assertEqual(self.rl("acquire", "--limit", "2", "--ttl", "1s", "jobs").code, 0)
        busy = self.rl("--json", "acquire", "--limit", "2", "-n", "jobs")
        self.assertEqual(busy.code, 75, busy)
        self.assertEqual(busy.json()["reason"], "busy")
        r = self.rl("--json", "acquire", "--limit", "2", "--ttl", "5s", "-w", "5s", "jobs")
        self.assertEqual(r.code, 0, r)
        self.assertGreater(r.json()["elapsed_ms"], 700)
        self.assertLess(r.json()["elapsed_ms"], 3000)

    def test_extend_release_and_status_find_the_slot_from_the_token(self):
        a = self.rl("--json", "acquire", "--limit", "2", "--ttl", "5s", "--owner", "alice", "jobs").json()
        b = self.rl("--json", "acquire", "--limit", "2", "--ttl", "5s", "--owner", "bob", "jobs").json()
        self.assertEqual({a["slot"], b["slot"]}, {0, 1})
        self.assertEqual(a["limit"], 2)
        self.assertGreater(min(a["fence"], b["fence"]), 0)
        self.assertEqual(self.rl("extend", "--limit", "2", "--token", a["token"], "--ttl", "20s", "jobs").code, 0)
        status = self.rl("--json", "status", "--limit", "2", "jobs")
        self.assertEqual(status.code, 0, status)
        s = status.json()
        self.assertEqual((s["mode"], s["limit"], s["held"], s["state"]), ("semaphore", 2, 2, "held"))
        holders = {h["slot"]: h for h in s["holders"]}
        self.assertEqual(holders[a["slot"]]["owner"], "alice")
        self.assertGreater(holders[a["slot"]]["ttl_ms"], 10000)
        self.assertLessEqual(holders[b["slot"]]["ttl_ms"], 5000)
        self.assertEqual(holders[b["slot"]]["fence"], b["fence"])
        # Every field a status has, those kept per holder null; the fence the highest slot's.
        self.assertEqual([s[k] for k in ("token", "ttl_ms", "owner", "since", "queue")], [None] * 4 + [[]], s)
        self.assertEqual(s["fence"], max(a["fence"], b["fence"]))
        self.assertGreater(s["elapsed_ms"], 0)
        # Without --limit, status finds the stored one.
        plain = self.rl("--json", "status", "jobs")
        self.assertEqual((plain.code, plain.json()["mode"], plain.json()["limit"], plain.json()["held"]),
                         (0, "semaphore", 2, 2), plain)
        self.assertEqual(self.rl("release", "--limit", "2", "--token", a["token"], "jobs").code, 0)
        again = self.rl("release", "--limit", "2", "--token", a["token"], "jobs")
        self.assertEqual(again.code, 1, again)
        self.assertIn("in none of the 2 slots", again.stderr)
        self.assertEqual(self.rl("--json", "status", "--limit", "2", "jobs").json()["held"], 1)
        self.assertEqual(self.rl("release", "--limit", "2", "--token", b["token"], "jobs").code, 0)
        free = self.rl("--json", "status", "--limit", "2", "jobs")
        self.assertEqual((free.code, free.json()["state"], free.json()["holders"]), (1, "free", []))

    def test_slot_names_the_slot_extend_and_release_act_on(self):
        a = self.rl("--json", "acquire", "--limit", "3", "--ttl", "5s", "jobs").json()
        b = self.rl("--json", "acquire", "--limit", "3", "--ttl", "5s", "jobs").json()
        other = next(i for i in range(3) if i != a["slot"])
        slot = ["--limit", "3", "--slot", str(a["slot"])]
        self.assertEqual(self.rl("extend", *slot, "--token", a["token"], "--ttl", "20s", "jobs").code, 0)
        self.assertGreater(self.cluster.servers[0].pttl("{jobs}:redlock:slot:%d" % a["slot"]), 10000)
        # The token is not in the slot named: nothing changes there, and it says so.
        wrong = self.rl("release", "--limit", "3", "--slot", str(other), "--token", a["token"], "jobs")
        self.assertEqual(wrong.code, 1, wrong)
        self.assertEqual(self.rl("--json", "status", "--limit", "3", "jobs").json()["held"], 2)
        for name, args, says in (("other", ["--slot", "0"], "--slot needs --limit"),
                                 ("jobs", ["--limit", "3", "--slot", "3"], "slots 0 to 2"),
                                 # Below 0 read as no --slot at all, and acted on the plain key NAME.
                                 ("jobs", ["--limit", "3", "--slot", "-1"], "--slot: '-1' is not a number from 0 to")):
            r = self.rl("release", *args, "--token", a["token"], name)
            self.assertEqual((r.code, r.out), (64, b""), r)
            self.assertIn(says, r.stderr)
        mutex = self.rl("acquire", "jobs").out.decode().strip()
        r = self.rl("release", "--slot", "-1", "--force", "jobs")
        self.assertEqual((r.code, r.out), (64, b""), r)
        self.assertEqual(self.cluster.values("jobs"), [mutex.encode()] * self.N)  # the mutex NAME untouched
        self.assertEqual(self.rl("release", "--token", mutex, "jobs").code, 0)
        # --force with --slot frees that slot alone, whoever holds it.
        self.assertEqual(self.rl("release", "--limit", "3", "--slot", str(b["slot"]), "--force", "jobs").code, 0)
        holders = self.rl("--json", "status", "--limit", "3", "jobs").json()["holders"]
        self.assertEqual([h["token"] for h in holders], [a["token"]])
        self.assertEqual(self.rl("release", *slot, "--token", a["token"], "jobs").code, 0)

    def test_a_token_in_no_slot_answers_with_the_read_of_the_slots(self):
        # Not held: the quorum and servers of the read that looked for the token, and the limit.
        self.rl("acquire", "--limit", "3", "--ttl", "5s", "jobs")
        for command in ("extend", "release"):
            with self.subTest(command=command):
                r = self.rl("--json", command, "--limit", "3", "--token", "bogus", "jobs")
                self.assertEqual(r.code, 1, r)
                j = r.json()
                self.assertEqual((j["reason"], j["limit"], j["quorum"]), ("not_held", 3, {"needed": 2, "ok": 0, "total": 3}), j)
                self.assertEqual(len(j["servers"]), 3, j)
                self.assertTrue(all(s["ok"] for s in j["servers"]), j)
                self.assertGreater(j["elapsed_ms"], 0, j)
        self.cluster.servers[0].freeze()
        self.cluster.servers[1].freeze()
        try:
            r = self.rl("--json", "--timeout", "100ms", "extend", "--limit", "3", "--token", "bogus", "jobs")
        finally:
            self.cluster.servers[0].thaw()
            self.cluster.servers[1].thaw()
        self.assertEqual(r.code, 69, r)
        j = r.json()
        self.assertEqual((j["reason"], j["quorum"]), ("no_quorum", {"needed": 2, "ok": 0, "total": 3}), j)
        self.assertEqual([s["ok"] for s in j["servers"]], [False, False, True], j)
        self.assertGreaterEqual(j["elapsed_ms"], 100, j)

    def test_slot_without_limit_takes_the_limit_stored_on_a_quorum(self):
        a = self.rl("--json", "acquire", "--limit", "3", "--ttl", "5s", "jobs").json()
        b = self.rl("--json", "acquire", "--limit", "3", "--ttl", "5s", "jobs").json()
        slot_a, slot_b = str(a["slot"]), str(b["slot"])
        ext = self.rl("extend", "--slot", slot_a, "--token", a["token"], "--ttl", "20s", "jobs")
        self.assertEqual(ext.code, 0, ext)
        self.assertGreater(self.cluster.servers[0].pttl("{jobs}:redlock:slot:" + slot_a), 10000)
        # --force --slot frees that slot alone, whoever holds it (it used to free the plain key).
        forced = self.rl("release", "--slot", slot_b, "--force", "jobs")
        self.assertEqual(forced.code, 0, forced)
        holders = self.rl("--json", "status", "--limit", "3", "jobs").json()["holders"]
        self.assertEqual([h["token"] for h in holders], [a["token"]])
        self.assertEqual(self.cluster.servers[0].get("{jobs}:redlock:limit"), b"3")
        # A slot past the stored limit, and --slot with --shared, are usage errors; nothing changes.
        for args, says in ((["--slot", "3", "--token", a["token"]], "a semaphore of stored limit 3 has slots 0 to 2"),
                           (["--slot", slot_a, "--shared", "--token", a["token"]], "--slot and --shared")):
            r = self.rl("release", *args, "jobs")
            self.assertEqual((r.code, r.out), (64, b""), r)
            self.assertIn(says, r.stderr)
        # The limit stored on one server of three is no quorum's: --slot alone is then a usage error.
        for server in self.cluster.servers[1:]:
            with server.client() as c:
                c.call("DEL", "{jobs}:redlock:limit")
        lone = self.rl("release", "--slot", slot_a, "--token", a["token"], "jobs")
        self.assertEqual(lone.code, 64, lone)
        self.assertEqual(lone.stderr.count("\n"), 1, lone)
        self.assertIn("--slot needs --limit: no semaphore limit is stored for jobs on a quorum", lone.stderr)
        self.assertEqual(self.rl("release", "--limit", "3", "--slot", slot_a, "--token", a["token"], "jobs").code, 0)

    def test_the_command_learns_its_slot_and_fence_and_a_nested_call_finds_the_slot(self):
        r = self.rl("run", "--limit", "2", "jobs", "-c",
                    'echo "$REDLOCK_SLOT $REDLOCK_FENCE $REDLOCK_KEY"; "$RL" extend --limit 2 --ttl 10s jobs && '
                    '"$RL" --json status --limit 2 jobs',
                    env={"RL": redlock_binary()}, timeout=20)
        self.assertEqual(r.code, 0, r)
        first, status = r.stdout.splitlines()
        slot, fence, key = first.split()
        self.assertIn(slot, ("0", "1"))
        self.assertGreater(int(fence), 0)
        self.assertEqual(key, "jobs")
        holder = json.loads(status)["holders"][0]
        self.assertEqual(holder["slot"], int(slot))
        self.assertGreater(holder["ttl_ms"], 9000)  # the nested extend found the slot from the inherited token

    def test_a_nested_run_with_the_same_limit_re_enters_its_slot(self):
        # With one slot, anything but a re-entry would be busy (75).
        r = self.rl("run", "--limit", "1", "-n", "one", "-c",
                    '"$RL" --json acquire --limit 1 -n one && "$RL" --json run --limit 1 -n one -- echo inner',
                    env={"RL": redlock_binary()}, timeout=20)
        self.assertEqual(r.code, 0, r)
        nested, inner, report = [line for line in r.stdout.splitlines() if line]  # a blank line before the report
        self.assertEqual((json.loads(nested)["nested"], json.loads(nested)["slot"], inner), (True, 0, "inner"))
        self.assertEqual((json.loads(report)["nested"], json.loads(report)["slot"]), (True, 0))

    def test_a_mutex_of_the_same_name_inside_is_another_lock(self):
        # A semaphore and a mutex of one NAME are two locks: the mutex inside the semaphore's run is
        # taken with a token of its own (and a run of it runs), not refused as a lost re-entry.
        r = self.rl("run", "--limit", "2", "-n", "mixed", "-c",
                    '"$RL" --json acquire -n --ttl 10s mixed && "$RL" --json run -n --ttl 10s mixed2 -- echo inner '
                    '&& echo "outer $REDLOCK_TOKEN"',
                    env={"RL": redlock_binary()}, timeout=20)
        self.assertEqual(r.code, 0, r)
        lines = [line for line in r.stdout.splitlines() if line]
        mutex = json.loads(lines[0])
        self.assertEqual((mutex["acquired"], mutex.get("nested")), (True, None), mutex)
        self.assertNotEqual(mutex["token"], lines[-1].split()[1])
        self.assertEqual(self.cluster.values("mixed"), [mutex["token"].encode()] * self.N)
        self.assertIn("inner", lines)
        # And a --limit call inside a mutex's run of the name is not a re-entry of the mutex.
        r = self.rl("run", "-n", "other", "-c", '"$RL" --json acquire --limit 2 -n --ttl 10s other',
                    env={"RL": redlock_binary()}, timeout=20)
        self.assertEqual(r.code, 0, r)
        sem = json.loads(r.stdout)
        self.assertEqual((sem["acquired"], sem.get("nested"), sem["limit"]), (True, None, 2), sem)

    def test_slot_and_limit_keys_are_no_lock_names(self):
        for name in ("jobs:redlock:slot:0", "{jobs}:redlock:slot:12", "jobs:redlock:limit"):
            r = self.rl("acquire", "-n", name)
            self.assertEqual(r.code, 64, (name, r))
        self.assertEqual(self.rl("acquire", "-n", "jobs:redlock:slot:x").code, 0)

    def test_a_slot_is_an_ordinary_lock_beside_the_name(self):
        token = self.rl("acquire", "--limit", "1", "--ttl", "5s", "one").stdout.strip()
        servers = self.cluster.servers
        self.assertEqual([s.get("{one}:redlock:slot:0") for s in servers], [token.encode()] * 3)
        self.assertEqual([s.get("{one}:redlock:limit") for s in servers], [b"1"] * 3)
        self.assertEqual([s.get("one") for s in servers], [None] * 3)


if __name__ == "__main__":
    main()
