#!/usr/bin/python3
"""The fault scenarios: one per property of RELIABILITY.md (S1-S17, L1, L3), each a nemesis, a set
of workers and its pass criteria, plus the negative controls that must be caught.

  scenarios.py NAME [--seconds S] [--binary PATH] [--fault F] [--seed N] [--json OUT]
runs one and prints its summary (exit 0 when its criteria held). The tests (test_*.py) and
scripts/soak call run_scenario() directly.
"""

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import checkers  # noqa: E402
import faultlib  # noqa: E402
from faultlib import MS, NAME, SEC, Env, Summary, now, summarize  # noqa: E402
from proxy import Proxy  # noqa: E402


class Ctx:
    """How to run a scenario: for how long, which binary, which negative control."""

    def __init__(self, seconds=None, binary=None, fault=None, seed=None):
        self.seconds = seconds
        self.binary = binary
        self.fault = fault
        self.seed = seed if seed is not None else random.randrange(1 << 30)


class Scenario:
    def __init__(self, name, fn, properties, seconds, netns=False, doc=""):
        self.name, self.fn, self.properties, self.seconds, self.netns, self.doc = name, fn, properties, seconds, netns, doc


SCENARIOS = {}


def scenario(name, properties, seconds, netns=False):
    def deco(fn):
        SCENARIOS[name] = Scenario(name, fn, properties, seconds, netns, (fn.__doc__ or "").strip())
        return fn
    return deco


def env_for(ctx, name, **kw):
    return Env(name, binary=ctx.binary, fault=ctx.fault, seed=ctx.seed, **kw)


def mixed_workers(env, runs=6, acquires=2, **kw):
    for _ in range(runs):
        env.add_worker(mode="run", **kw)
    for _ in range(acquires):
        env.add_worker(mode="acquire", **kw)


def fault_windows(events):
    """(start, end) of every fault the nemeses noted, paired with the heal that followed."""
    out, open_at = [], None
    for e in events:
        if e.get("ev") == "fault" and open_at is None:
            open_at = e["t"]
        elif e.get("ev") == "heal" and open_at is not None:
            out.append((open_at, e["t"]))
            open_at = None
    return out


def minority_faults(ctx, name, nemesis, servers=None):
    """The S2 shape: 6 `run` and 2 acquire workers under NEMESIS; no violation, acquires go on during
    the faults, and the lock is taken again soon after every heal. SERVERS(env) gives the workers'
    server list (default: the servers themselves)."""
    env = env_for(ctx, name)
    try:
        mixed_workers(env, 6, 2, **({"servers": servers(env)} if servers else {}))
        env.run(ctx.seconds, nemesis)
        s = summarize(env, name, expect_cycles=5, heal_bound_s=ttl_s(env) + 3)
        check_progress_under_faults(s)
        return s
    finally:
        env.close()


def check_progress_under_faults(s, minimum=1):
    """S2's "acquires keep succeeding": holders entered while a fault was in force."""
    windows = fault_windows(s.events)
    during = sum(1 for h in s.holds if any(a <= h.start <= b for a, b in windows))
    s["cycles_during_faults"] = during
    s.check(during >= minimum, "only %d lock cycles while a minority was faulted (%d fault windows)" % (during, len(windows)))


def ttl_s(env):
    return max(w.ttl_ns for w in env.workers) / SEC


# ---------------------------------------------------------------------------------------------
# S1, S9, S11, L3: contention without faults


@scenario("contention", "S1 S9 S11", 8)
def contention(ctx):
    """8 workers (6 `run`, 2 acquire/extend/release) on one name, no faults."""
    env = env_for(ctx, "contention")
    try:
        mixed_workers(env, 6, 2)
        env.run(ctx.seconds)
        return summarize(env, "contention", acceptable_codes=(0, 75), expect_cycles=5)
    finally:
        env.close()


class EnclosingRun:
    """One `redlock run batch -- …` whose command only records its environment and sleeps: workers
    given that environment are sibling workers inside one run, as a batch's parallel steps are."""

    def __init__(self, env, seconds):
        self.path = os.path.join(env.workdir, "batch.env")
        script = 'env -0 > "$1.tmp" && mv "$1.tmp" "$1" && exec sleep %d' % (int(seconds) + 60)
        self.proc = subprocess.Popen([env.binary, "run", "--ttl", "5s", "batch", "--", "sh", "-c", script, "sh",
                                      self.path], env=faultlib.clean_env({"REDLOCK_SERVERS": env.spec}),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def environment(self):
        """The REDLOCK_* variables the run's command was given (REDLOCK_KEY, REDLOCK_TOKEN, …)."""
        deadline = time.monotonic() + 10
        while not os.path.exists(self.path):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("the enclosing run did not start its command")
            time.sleep(0.02)
        with open(self.path, "rb") as f:
            pairs = [item.decode().split("=", 1) for item in f.read().split(b"\0") if b"=" in item]
        return {k: v for k, v in pairs if k.startswith("REDLOCK_")}

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


@scenario("siblings", "S1 S9", 8)
def siblings(ctx):
    """8 workers (6 `run`, 2 acquire/extend/release) that are siblings inside one `redlock run`:
    each inherits its REDLOCK_KEY and REDLOCK_TOKEN, and they contend for a second lock."""
    env = env_for(ctx, "siblings")
    batch = None
    try:
        batch = EnclosingRun(env, ctx.seconds)
        mixed_workers(env, 6, 2, env_extra=batch.environment())
        env.run(ctx.seconds)
        batch.stop()
        return summarize(env, "siblings", acceptable_codes=(0, 75), expect_cycles=5)
    finally:
        if batch:
            batch.stop()
        env.close()


@scenario("starvation", "L3", 60)
def starvation(ctx):
    """10 workers on one name: every one gets the lock within 60 s (the run ends when all have)."""
    env = env_for(ctx, "starvation")
    try:
        for _ in range(10):
            env.add_worker(mode="run", hold_ms=(20, 80), wait="60s")

        def all_served(env):
            for _ in range(100000):
                got = {e["w"] for e in env.history() if e.get("ev") == "enter"}
                if len(got) == len(env.workers) or not env.sleep(0.25):
                    return
        env.run(min(ctx.seconds, 60), all_served)
        s = summarize(env, "starvation", acceptable_codes=(0, 75), expect_cycles=5)
        firsts = {}
        for h in s.holds:
            firsts.setdefault(h.w, h.start - env.t_start)
        s["first_acquire_s"] = {w: round(t / SEC, 2) for w, t in sorted(firsts.items())}
        starved = checkers.starved(s.holds, range(len(env.workers)), env.t_start, 60 * SEC)
        s.check(not starved, "workers without the lock after 60s: %s" % starved)
        return s
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------
# A counting semaphore (--limit): at most K holders, each slot a lock of its own

SEMAPHORE_LIMIT = 3


def semaphore_summary(env, name, limit=SEMAPHORE_LIMIT, **kw):
    """The semaphore's criteria: never more than LIMIT holders at once, LIMIT at once reached, fences
    increasing per slot. The counters are shared by up to LIMIT holders at once: their lost updates
    say nothing here."""
    s = summarize(env, name, limit=limit, **kw)
    for key in ("lost_updates", "lost_updates_unfenced", "stale_accepted", "stale_accepted_unfenced"):
        s[key] = None
    s.check(s["most_at_once"] >= limit, "never %d holders at once (at most %d)" % (limit, s["most_at_once"]))
    return s


@scenario("semaphore", "S1 S2 S11", 8)
def semaphore(ctx):
    """12 `run --limit 3` workers on one name while 1-2 of 5 servers are paused, rotating: never more
    than 3 holders at once, 3 at once reached, fences increasing per slot."""
    env = env_for(ctx, "semaphore")
    try:
        for _ in range(12):
            env.add_worker(mode="run", run_args=["--limit", str(SEMAPHORE_LIMIT)], hold_ms=(30, 150))
        env.run(ctx.seconds, pause_minority)
        return semaphore_summary(env, "semaphore", expect_cycles=10)
    finally:
        env.close()


def client_groups(env, groups, workers, **kw):
    """GROUPS groups of WORKERS workers (KW: theirs), each group through proxies of its own to every
    server (env.groups[g][i]: group g's proxy to server i), so that a nemesis can cut one group off
    from a server while others still reach it."""
    env.groups = []
    for _ in range(groups):
        proxies = [Proxy(s.port) for s in env.servers]
        env.proxies.extend(proxies)
        env.groups.append(proxies)
        for _ in range(workers):
            env.add_worker(servers=",".join(p.address for p in proxies), **kw)


def links_cut_in_turn(env):
    """Three groups of clients, each through proxies of its own; each group has its link to one
    server cut, group g the server (g + k) % 3 in the k-th turn, so that every group reaches a
    majority and no two groups the same one. A cut link delivers nothing late (unlike a SIGSTOP, after
    which the server runs what was sent to it): an attempt never takes a place behind it."""
    rng = env.rng
    for k in range(10000):
        cut = [env.groups[g][(g + k) % 3] for g in range(3)]
        for p in cut:
            p.cut()
        env.note("fault", what="links cut", groups={g: (g + k) % 3 for g in range(3)})
        slept = env.sleep(rng.uniform(1.5, 3.0))
        for p in cut:
            p.heal()
        env.note("heal", what="links healed")
        if not slept:
            return


@scenario("semaphore-cuts", "S1 S2", 10)
def semaphore_cuts(ctx):
    """The counterexample to a plain majority over per-server limits: 3 servers, --limit 2, three
    `run` workers, each through proxies of its own and reaching another two of the servers (links
    cut in turn), so that holders come to sit on {A,B}, {B,C} and {A,C}. The real semaphore keeps 2
    at most (each slot needs its own quorum); REDLOCK_FAULT=semaphore-majority admits the third."""
    env = env_for(ctx, "semaphore-cuts", servers=3)
    try:
        client_groups(env, 3, 1, mode="run", ttl="1s", hold_ms=(150, 300), wait="10s", run_args=["--limit", "2"])
        env.run(ctx.seconds, links_cut_in_turn)
        # A holder on two servers loses its quorum when one of its links is cut before a renewal put
        # it on the third: lost (79), as it must be.
        return semaphore_summary(env, "semaphore-cuts", limit=2, acceptable_codes=(0, 75, 79), expect_cycles=5)
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------
# The shared mode (--shared): readers at once, a writer alone

@scenario("shared", "S1 S2 S9 S11", 8)
def shared(ctx):
    """8 `run --shared` readers and 3 writers (plain `run`) on one name while 1-2 of 5 servers are
    paused, rotating: a writer never overlaps anyone, readers overlap, writers get in, the writers'
    fences increase and a reader's is at least every earlier writer's."""
    env = env_for(ctx, "shared")
    try:
        for _ in range(8):
            env.add_worker(mode="run", run_args=["--shared"], env_extra={"FAULT_READER": "1"}, hold_ms=(30, 150))
        for _ in range(3):
            env.add_worker(mode="run", hold_ms=(10, 40))
        env.run(ctx.seconds, pause_minority)
        s = summarize(env, "shared", expect_cycles=10, shared=True)
        readers = [h for h in s.holds if h.reader]
        s["readers_at_once"] = checkers.most_at_once(readers)
        s["writer_holds"] = len(s.holds) - len(readers)
        s.check(s["readers_at_once"] >= 2, "readers never overlapped")
        s.check(s["writer_holds"] >= 1, "no writer got in")
        return s
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------
# The release hands the lock to the first queued waiter (see core/lock/grant.hpp)


@scenario("handover", "S1 S2 S9 S11", 10)
def handover(ctx):
    """6 `run -w` waiters on one name whose commands outlast a hand-over's 1.5 s expiry (TTL 6 s,
    first renewal at 2 s), while 1-2 of 5 servers are paused, rotating: the hand-offs between them
    are releases handing the lock over, and a waiter that kept the short expiry would overlap
    whoever tries after it lapsed: 2 contenders that try every 200 ms (-n, as cron jobs would),
    besides the waiters' own timers."""
    env = env_for(ctx, "handover")
    try:
        for _ in range(6):
            env.add_worker(mode="run", ttl="6s", hold_ms=(1600, 2400), wait="30s")
        for _ in range(2):
            env.add_worker(mode="run", ttl="6s", hold_ms=(10, 40), wait=None, run_args=["-n"],
                           wrapper=("sh", "-c", 'sleep 0.2; exec "$@"', "poll"))
        env.run(ctx.seconds, pause_minority)
        s = summarize(env, "handover", expect_cycles=3, heal_bound_s=ttl_s(env) + 3)
        check_progress_under_faults(s)
        return s
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------
# Fair hand-off (--fair): the queue's order is a hint, the lock is still the mutex


def fair_workers(env):
    """6 `run --fair` waiters and 2 plain `run` ones, which join the fair queue and wait their turn."""
    for _ in range(6):
        env.add_worker(mode="run", run_args=["--fair"], hold_ms=(10, 60))
    for _ in range(2):
        env.add_worker(mode="run", hold_ms=(10, 60))


# A fair waiter's attempt begins before its process has even started: a waiter that began this much
# later than another may still have joined the queue first.
ARRIVAL_SLACK_S = 0.5


def fair_summary(env, name):
    """The mutex's criteria (no overlap, no lost update, fences increasing), lock cycles under the
    faults, no fair waiter served before one that arrived earlier in a hand-off reported fair, and
    how many of the fair waiters' hand-offs degraded (reported, not judged: a server paused or
    restarted empty may leave the queues' heads apart for a heartbeat)."""
    s = summarize(env, name, expect_cycles=5, heal_bound_s=ttl_s(env) + 3)
    check_progress_under_faults(s)
    inversions = checkers.order_inversions(s.holds, int(ARRIVAL_SLACK_S * 1e9))
    s["order_inversions"] = len(inversions)
    s.check(not inversions, "%d fair hand-offs out of arrival order, e.g. %s" % (len(inversions), inversions[:2]))
    fair = [e["report"].get("fairness") for e in env.history()
            if e.get("ev") == "done" and e.get("code") == 0 and (e.get("report") or {}).get("fairness")]
    s["fair_handoffs"] = sum(1 for f in fair if f == "fair")
    s["degraded_handoffs"] = sum(1 for f in fair if f == "degraded")
    s.check(s["fair_handoffs"] > 0, "no fair waiter was served in its turn")
    return s


def fair_under(ctx, name, nemesis):
    """The fair workers on one name under NEMESIS, judged by fair_summary."""
    env = env_for(ctx, name)
    try:
        fair_workers(env)
        env.run(ctx.seconds, nemesis)
        return fair_summary(env, name)
    finally:
        env.close()


@scenario("fair", "S1 S2 S9 S11", 8)
def fair(ctx):
    """8 waiters on one name, 6 with --fair, while 1-2 of 5 servers are paused, rotating: no overlap,
    no lost update, fences increasing, and waiters served."""
    return fair_under(ctx, "fair", pause_minority)


@scenario("fair-kill", "S1 S2 S4 S9", 8)
def fair_kill(ctx):
    """As `fair`, with 1-2 of 5 servers killed and restarted empty after the longest TTL: their
    queues are lost, and the heads disagree until the waiters join again."""
    return fair_under(ctx, "fair-kill", kill_minority)


# Sentinel groups as members: failovers, and a member that forgets


def sentinel_groups(env, count):
    """COUNT Sentinel groups (a master, a replica, three sentinels each) in ENV's directory; the
    caller stops them."""
    groups = []
    try:
        for k in range(count):
            groups.append(faultlib.harness.SentinelGroup(env.workdir, 1 + k))
    except Exception:
        for g in groups:
            g.stop()
        raise
    return groups


def stop_groups(groups):
    for g in groups:
        g.stop()


def fail_over(env, group, kill):
    """GROUP's master replaced: SENTINEL FAILOVER, or (KILL) killed -9 and, once the sentinels
    promoted the replica, restarted empty on its port (they make it a replica again)."""
    old = group.master_port()
    victim = group.server_at(old)
    if kill:
        victim.kill()
    else:
        with group.sentinel_client() as c:
            c.call("SENTINEL", "FAILOVER", group.name)
    env.note("fault", what="failover" + (" (kill -9)" if kill else ""), group=group.name)
    faultlib.harness.wait_for(lambda: group.master_port() != old, timeout=30, interval=0.1, what="the failover")
    if kill:
        victim.start(same_port=True)
    env.note("heal", what="failed over", group=group.name, master=group.master_port())


def failovers(groups):
    def nemesis(env):
        for k in range(10000):
            if not env.sleep(2.0):
                return
            fail_over(env, groups[k % len(groups)], kill=k % 2 == 1)
            # Synced again before the next switch of this group (a replica to promote).
            g = groups[k % len(groups)]
            faultlib.harness.wait_for(g.synced_replica, timeout=60, interval=0.2, what="a synced replica")
    return nemesis


@scenario("sentinel-failover", "S2 S12", 30)
def sentinel_failover(ctx):
    """3 Sentinel groups as the members; one group at a time fails over (SENTINEL FAILOVER, or its
    master killed -9 and restarted empty) while 6 `run` and 2 acquire workers contend with the
    default --member-wait: no overlap, fences increase, the locks keep being taken through the
    switches."""
    env = env_for(ctx, "sentinel-failover", servers=0)
    groups = []
    try:
        groups = sentinel_groups(env, 3)
        mixed_workers(env, 6, 2, servers=",".join(g.url() for g in groups), timeout="500ms")
        env.run(ctx.seconds, failovers(groups))
        s = summarize(env, "sentinel-failover", expect_cycles=10, heal_bound_s=ttl_s(env) + 5)
        check_progress_under_faults(s)
        return s
    finally:
        stop_groups(groups)
        env.close()


def wait_new_holder(env, among, timeout=20.0):
    """Until a worker of AMONG is inside that was not when called (bounded by TIMEOUT)."""
    before = set(env.inside().items())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not env.stopping.is_set():
        if any(w in among and (w, v) not in before for w, v in env.inside().items()):
            return
        time.sleep(0.02)


def wait_lock_free(env, among, plain, group, replica, timeout=25.0):
    """Until no worker of AMONG is inside and the lock's key is on neither PLAIN (asked directly,
    not through its proxy) nor GROUP's REPLICA (bounded by TIMEOUT): the last holder's release has
    landed there, and the next holder has not come yet (the workers poll, so there are gaps)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not env.stopping.is_set():
        try:
            free = plain.get(faultlib.NAME) is None and group.get(replica.port, faultlib.NAME) is None
        except (OSError, faultlib.harness.RespError):
            free = False
        if free and not any(w in among for w in env.inside()):
            return
        time.sleep(0.005)


def forgetting(plain, proxy, groups, long_holders):
    """A member forgets: once the lock is free, the PLAIN server cut off behind its PROXY (so a
    holder has exactly a quorum, the two groups; a cut, not a freeze, so that no late SET lands
    there), one group's replica frozen and its link closed by the master (CLIENT KILL TYPE replica)
    until a long holder entered (up to 12 s: more than a long holder's hold, so one gets in if
    unconfirmed votes count; with confirmed votes nobody can, and the whole window passes), the
    master killed -9, the replica thawed, the proxy healed; the sentinels promote the replica, which
    lacks what the master took meanwhile. The old master comes back empty as a replica before the
    next round."""
    def nemesis(env):
        for _ in range(10000):
            if not env.sleep(2.0):
                return
            g = next((g for g in groups if g.synced_replica()), None)
            if g is None:
                continue  # the old masters still turning replicas (a sentinel in TILT on a busy host)
            old = g.master_port()
            replica = next(x for x in g.servers if x.port != old)
            # Not while a release may still be on its way: one cut off from the plain server, or
            # not yet copied to the replica, would leave a key that keeps everyone out.
            wait_lock_free(env, long_holders, plain, g, replica)
            proxy.cut()
            replica.freeze()
            with g.server_at(old).client() as c:
                c.call("CLIENT", "KILL", "TYPE", "replica")
            env.note("fault", what="plain server cut off, replica frozen and cut off", group=g.name)
            wait_new_holder(env, among=long_holders, timeout=12.0)
            g.server_at(old).kill()
            replica.thaw()
            proxy.heal()
            faultlib.harness.wait_for(lambda: g.master_port() == replica.port, timeout=90, interval=0.1,
                                      what="the failover")
            env.note("heal", what="forgot: replica promoted", group=g.name)
            g.server_at(old).start(same_port=True)
            groups.append(groups.pop(groups.index(g)))  # the other group next
    return nemesis


def sentinel_forgets_with(ctx, name, member_wait, hold_ms=(7000, 9000)):
    env = env_for(ctx, name, servers=1)
    groups = []
    try:
        groups = sentinel_groups(env, 2)
        spec = ",".join([proxied(env, [0])] + [g.url() for g in groups])  # the plain server first
        extra = {"REDLOCK_MEMBER_WAIT": member_wait} if member_wait is not None else {}
        # Every worker tries every 200 ms (-n), as cron jobs would: a waiter woken by a release takes
        # the lock within a millisecond, which leaves the nemesis no moment when it is free.
        poll = dict(wait=None, run_args=["-n"], servers=spec, timeout="500ms", env_extra=extra,
                    wrapper=("sh", "-c", 'sleep 0.2; exec "$@"', "poll"))
        for _ in range(3):  # holders that outlast a round without renewing
            env.add_worker(mode="acquire", ttl="30s", hold_ms=hold_ms, **poll)
        for _ in range(3):
            env.add_worker(mode="run", ttl="2s", hold_ms=(10, 40), **poll)
        env.run(ctx.seconds, forgetting(env.servers[0], env.proxies[0], groups, long_holders=range(3)))
        # Nobody gets in while a member forgets (the plain server cut, one group unable to confirm):
        # a 30 s round is mostly fault windows.
        return summarize(env, name, expect_cycles=2, quiet_end=False)
    finally:
        stop_groups(groups)
        env.close()


@scenario("sentinel-forgets", "S4", 40)
def sentinel_forgets(ctx):
    """Members: a plain server and 2 Sentinel groups. In turn, the plain server is cut off while a
    group's replica is cut off and its master killed, so the group forgets what its master took
    unconfirmed. With the default --member-wait such a vote never counted (the sentinels still know
    the cut-off replica): no overlap."""
    return sentinel_forgets_with(ctx, "sentinel-forgets", None)


@scenario("sentinel-forgets-unconfirmed", "S4 (control)", 40)
def sentinel_forgets_unconfirmed(ctx):
    """The negative control of sentinel-forgets: `--member-wait 0` counts unconfirmed votes, a
    holder of exactly the two groups loses one when it forgets, and a contender gets in beside it.
    Must be caught (an overlap). Its long holders hold longer than the real class's, so that one
    that got in unconfirmed is still inside when the failover (seconds on a busy host) is over."""
    return sentinel_forgets_with(ctx, "sentinel-forgets-unconfirmed", "0", hold_ms=(12000, 14000))


# ---------------------------------------------------------------------------------------------
# S2: minority faults (pause, crash, drops and partitions, delay and stalls)


def break_servers(env, gap, count, fault, heal, down, rounds=10000, ready=None, **note):
    """The shape of the nemeses that break servers: up to ROUNDS times (the end of the run stops it
    sooner), after a pause drawn from GAP (lo, hi) seconds, COUNT() servers drawn at random get FAULT
    and, once DOWN() has slept, HEAL. FAULT and HEAL: (the Server method, what the nemesis log says).
    READY(): false skips the round (no holder inside, say). NOTE: more fields of each fault record."""
    rng = env.rng
    for _ in range(rounds):
        if not env.sleep(rng.uniform(*gap)):
            return
        if ready is not None and not ready():
            continue
        victims = rng.sample(env.servers, count())
        for s in victims:
            getattr(s, fault[0])()
        env.note("fault", what=fault[1], servers=[s.index for s in victims], **note)
        down()
        for s in victims:
            getattr(s, heal[0])()
        env.note("heal", what=heal[1], servers=[s.index for s in victims])


def pause_minority(env):
    rng = env.rng
    break_servers(env, (0.2, 0.5), lambda: rng.choice((1, 2)), ("freeze", "SIGSTOP"), ("thaw", "SIGCONT"),
                  down=lambda: env.sleep(rng.uniform(0.3, 1.5)))


@scenario("pause-minority", "S2", 10)
def pause_minority_scenario(ctx):
    """SIGSTOP/SIGCONT of 1-2 of 5 servers, rotating."""
    return minority_faults(ctx, "pause-minority", pause_minority)


def kill_minority(env):
    rng = env.rng
    delay = ttl_s(env) + 0.3
    # Back only after the longest TTL (even when the run ends meanwhile): whatever they held has
    # expired everywhere else.
    break_servers(env, (0.3, 0.8), lambda: rng.choice((1, 2)), ("kill", "kill -9"), ("start", "restart after TTL"),
                  down=lambda: time.sleep(delay + rng.uniform(0, 0.5)))


@scenario("kill-minority", "S2 S4", 12)
def kill_minority_scenario(ctx):
    """kill -9 of 1-2 of 5 servers, restarted empty after the longest TTL, rotating."""
    return minority_faults(ctx, "kill-minority", kill_minority)


def netns_name():
    """The network namespace this process runs in, when it is one the suite made (rlkfault-…)."""
    try:
        out = subprocess.run(["ip", "netns", "identify", str(os.getpid())], capture_output=True, text=True,
                             timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out if out.startswith("rlkfault-") and out == os.environ.get("FAULT_NETNS") else None


def nft(*args):
    if not netns_name():
        raise RuntimeError("refusing to touch nftables outside a namespace made by the suite")
    subprocess.run(["nft"] + list(args), check=True, timeout=10)


def partitions(env):
    """Inside the suite's own network namespace: drops of all traffic to and from 1-2 servers, or
    probabilistic loss (numgen random) on one, rotating."""
    rng = env.rng
    nft("add", "table", "inet", "redlock_fault")
    nft("add", "chain", "inet", "redlock_fault", "input", "{ type filter hook input priority 0; policy accept; }")
    try:
        for _ in range(10000):
            if not env.sleep(rng.uniform(0.2, 0.5)):
                return
            if rng.random() < 0.6:
                victims = rng.sample(env.servers, rng.choice((1, 2)))
                for s in victims:
                    nft("add", "rule", "inet", "redlock_fault", "input", "tcp", "dport", str(s.port), "drop")
                    nft("add", "rule", "inet", "redlock_fault", "input", "tcp", "sport", str(s.port), "drop")
                what = "drop"
            else:
                victims = rng.sample(env.servers, 1)
                loss = rng.choice((20, 40, 60))
                for s in victims:
                    for d in ("dport", "sport"):
                        nft("add", "rule", "inet", "redlock_fault", "input", "tcp", d, str(s.port), "numgen", "random",
                            "mod", "100", "<", str(loss), "drop")
                what = "loss %d%%" % loss
            env.note("fault", what=what, servers=[s.index for s in victims])
            env.sleep(rng.uniform(0.4, 1.5))
            nft("flush", "chain", "inet", "redlock_fault", "input")
            env.note("heal", what="flush rules", servers=[s.index for s in victims])
    finally:
        nft("delete", "table", "inet", "redlock_fault")


@scenario("partition", "S2", 10, netns=True)
def partition_scenario(ctx):
    """nftables drops and probabilistic loss on 1-2 of 5 servers, in a network namespace."""
    return minority_faults(ctx, "partition", partitions)


def proxied(env, indexes):
    """Proxies in front of the servers at INDEXES; the spec the workers use (the others direct)."""
    parts = []
    for s in env.servers:
        if s.index in indexes:
            p = Proxy(s.port)
            env.proxies.append(p)
            parts.append(p.address)
        else:
            parts.append(s.address)
    return ",".join(parts)


def delays_and_stalls(env):
    rng = env.rng
    for p in env.proxies:
        p.set_delay(0.0, 0.03)
    for _ in range(10000):
        if not env.sleep(rng.uniform(0.2, 0.6)):
            return
        victims = rng.sample(env.proxies, rng.choice((1, len(env.proxies))))
        cut = rng.random() < 0.3
        for p in victims:
            p.cut() if cut else p.hold()
        env.note("fault", what="cut" if cut else "hold", proxies=[env.proxies.index(p) for p in victims])
        env.sleep(rng.uniform(0.3, 1.2))
        for p in victims:
            p.heal()
        env.note("heal", what="release", proxies=[env.proxies.index(p) for p in victims])


@scenario("proxy", "S2", 10)
def proxy_scenario(ctx):
    """A user-space TCP proxy in front of 2 of 5 servers: 0-30 ms delay per chunk, stalls that hold
    the traffic and deliver it late (in order), and cuts."""
    return minority_faults(ctx, "proxy", delays_and_stalls, servers=lambda env: proxied(env, {0, 1}))


# ---------------------------------------------------------------------------------------------
# S3, S16: no quorum, duplicate servers (deterministic)


@scenario("no-quorum", "S3", 0)
def no_quorum(ctx):
    """3 of 5 servers down (killed, then frozen): exit 69, the command never runs, no stray key."""
    env = env_for(ctx, "no-quorum")
    s = Summary(scenario="no-quorum", binary=os.path.basename(env.binary), fault=env.fault, failures=[], attempts=0)
    try:
        # A wait outlasts a blip: 69 comes when the wait ends with no quorum, not at once.
        w = env.add_worker(mode="run", wait="300ms", timeout="200ms")
        rng = env.rng
        start = time.monotonic()
        for how in ("kill", "freeze"):
            down = rng.sample(env.servers, 3)
            live = [x for x in env.servers if x not in down]
            for x in down:
                x.kill() if how == "kill" else x.freeze()
            for i in range(3):
                for mode in ("run", "acquire"):
                    w.mode = mode
                    w.cycle += 1
                    t = time.monotonic()
                    code = w.cycle_run(w.cycle) if mode == "run" else w.cycle_acquire(w.cycle)
                    took = time.monotonic() - t
                    s["attempts"] += 1
                    s.check(code == 69, "%s/%s with 3 of 5 %s: exit %s, expected 69" % (mode, i, how, code))
                    s.check(took < 2.0, "%s with 3 of 5 %s took %.2fs (a wait of 300ms must end with it)" %
                            (mode, how, took))
                    keys = env.lock_keys(live)
                    s.check(all(k["lock"] is None and not k["owner"] for k in keys),
                            "stray keys on the live servers after a failed %s: %s" % (mode, keys))
            for x in down:
                x.start() if how == "kill" else x.thaw()
            env.note("heal", what=how)
            time.sleep(0.3)
            keys = env.lock_keys()
            s.check(all(k["lock"] is None and not k["owner"] for k in keys),
                    "keys left after the %s servers came back: %s" % (how, keys))
            # Healed: the lock can be taken at once.
            w.mode = "run"
            w.cycle += 1
            code = w.cycle_run(w.cycle)
            s.check(code == 0, "after the heal, run exits %s, expected 0" % code)
        entered = [e for e in env.history() if e.get("ev") == "enter"]
        s["cycles"] = len(entered)
        s.check(len(entered) == 2, "the command ran %d times; only the 2 runs after a heal should" % len(entered))
        s["seconds"] = round(time.monotonic() - start, 1)
        return s
    finally:
        env.close()


@scenario("duplicate-server", "S16", 0)
def duplicate_server(ctx):
    """One server listed twice, by the same address or by another name of it: refused, 78."""
    env = env_for(ctx, "duplicate-server")
    s = Summary(scenario="duplicate-server", binary=os.path.basename(env.binary), fault=env.fault, failures=[],
                cycles=0, seconds=0)
    try:
        a, b = env.servers[0], env.servers[1]
        specs = {"same address": "%s,%s,%s" % (a.address, b.address, a.address),
                 "same endpoint, other name": "%s,%s,localhost:%d" % (a.address, b.address, a.port),
                 "same address, other form": "%s,%s,redis://127.0.0.1:%d/0" % (a.address, b.address, a.port)}
        w = env.add_worker(mode="run", wait="1s")
        for what, spec in specs.items():
            w.servers = spec
            for mode in ("run", "acquire"):
                w.mode = mode
                w.cycle += 1
                code = w.cycle_run(w.cycle) if mode == "run" else w.cycle_acquire(w.cycle)
                s.check(code == 78, "%s with %s: exit %s, expected 78" % (mode, what, code))
        keys = env.lock_keys()
        s.check(all(k["lock"] is None and not k["owner"] for k in keys), "keys written despite the refusal: %s" % keys)
        entered = [e for e in env.history() if e.get("ev") == "enter"]
        s.check(not entered, "the command ran %d times" % len(entered))
        return s
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------
# S4: crash-restart of a holder's server


def crash_restart(mode):
    """Two servers down; once a holder holds the other three, the two come back (empty), and one of
    the holder's three is killed -9 and restarted: at once (mode "empty", no persistence: its copy
    of the lock is gone, so the two plus it make a second quorum), after the longest TTL ("delayed")
    or with `appendfsync always` ("aof", the copy survives)."""

    def nemesis(env):
        rng = env.rng
        delay = ttl_s(env) + 0.5
        for _ in range(10000):
            if not env.sleep(rng.uniform(0.3, 0.6)):
                return
            down = rng.sample(range(len(env.servers)), 2)
            up = [i for i in range(len(env.servers)) if i not in down]
            for i in down:
                env.servers[i].kill()
            t_down = now()
            env.note("fault", what="down", servers=down)
            # A holder that tried only once the two were down: it holds the other three, no more.
            got = env.wait_inside(5.0, since=t_down)
            if got is None:
                for i in down:
                    env.servers[i].start()
                env.note("heal", what="up (no holder came)", servers=down)
                continue
            w, pid, pgid, n = got
            time.sleep(0.05)
            for i in down:
                env.servers[i].start()
            crashed = rng.choice(up)
            env.servers[crashed].kill()
            env.note("crash", what="kill -9 of a holder's server", server=crashed, holder=[w, n])
            if mode == "delayed":
                time.sleep(delay)
            env.servers[crashed].start()
            env.note("heal", what="restart (%s)" % mode, server=crashed)
            wait_next_cycle(env.workers[w], n, 10)  # that holder finishes before the next round
    return nemesis


def crash_env(ctx, name, aof):
    extra = ("--appendonly", "yes", "--appendfsync", "always") if aof else ()
    env = env_for(ctx, name, server_extra=extra)
    # Non-blocking attempts every few tens of ms: a fresh attempt comes right after the restart,
    # as from a client that was not waiting.
    for _ in range(4):
        env.add_worker(mode="run", hold_ms=(1200, 1600), wait=None, run_args=["-n"])
    return env


def run_crash_restart(ctx, mode):
    name = "crash-restart-" + mode
    env = crash_env(ctx, name, aof=mode == "aof")
    try:
        env.run(ctx.seconds, crash_restart(mode))
        return summarize(env, name, expect_cycles=2)
    finally:
        env.close()


@scenario("crash-restart-empty", "S4 (negative control)", 12)
def crash_restart_empty(ctx):
    """NEGATIVE CONTROL: a holder's server crashes and restarts at once without persistence. Must be
    caught: a second holder overlaps the first."""
    return run_crash_restart(ctx, "empty")


@scenario("crash-restart-delayed", "S4", 12)
def crash_restart_delayed(ctx):
    """A holder's server killed -9 and restarted empty only after the longest TTL: no overlap."""
    return run_crash_restart(ctx, "delayed")


@scenario("crash-restart-aof", "S4", 12)
def crash_restart_aof(ctx):
    """A holder's server killed -9 and restarted at once with `appendonly yes, appendfsync always`:
    no overlap."""
    return run_crash_restart(ctx, "aof")


# ---------------------------------------------------------------------------------------------
# S5: the key expires early on one server (a model of a server clock jump)

EXPIRE_IF = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], 1) end return 0"


def early_expiry(env):
    rng = env.rng
    for _ in range(100000):
        if not env.sleep(rng.uniform(0.03, 0.15)):
            return
        values = []
        for s in env.servers:
            with s.client() as c:
                values.append(c.call("GET", NAME))
        tokens = [v for v in values if v is not None]
        if not tokens:
            continue
        token = max(set(tokens), key=tokens.count)
        where = [i for i, v in enumerate(values) if v == token]
        # Only while a quorum keeps it afterwards: at least 4 of 5 hold it before.
        if len(where) < 4:
            continue
        i = rng.choice(where)
        with env.servers[i].client() as c:
            done = c.call("EVAL", EXPIRE_IF, 1, NAME, token)
        if done:
            env.note("fault", what="PEXPIRE 1", server=i, token=token.decode())


@scenario("early-expiry", "S5", 8)
def early_expiry_scenario(ctx):
    """PEXPIRE key 1 on one server during holds (never below a quorum): no overlap."""
    env = env_for(ctx, "early-expiry")
    try:
        mixed_workers(env, 6, 2, hold_ms=(30, 300))
        env.run(ctx.seconds, early_expiry)
        s = summarize(env, "early-expiry", acceptable_codes=(0, 75), expect_cycles=5)
        s["expiries"] = sum(1 for e in s.events if e.get("ev") == "fault")
        s.check(s["expiries"] > 0, "the nemesis never found a holder to expire early")
        return s
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------
# S6, S7: the client's clock


def quorum_loss(env, rounds=10000, hold_extra=0.5):
    """While someone holds: 3 of 5 servers frozen for longer than the TTL, then thawed."""
    ttl = ttl_s(env)
    break_servers(env, (0.5, 1.2), lambda: 3, ("freeze", "quorum lost (3 of 5 frozen)"), ("thaw", "thaw"),
                  down=lambda: time.sleep(ttl + hold_extra), rounds=rounds,
                  ready=lambda: env.wait_inside(5.0) is not None, loss=True)


def check_validity(s, env):
    """S13: every holder active when the quorum was lost ended before its validity could."""
    losses = [e["t"] for e in s.events if e.get("ev") == "fault" and e.get("loss")]
    ttl = max(w.ttl_ns for w in env.workers)
    late = checkers.outlived_validity(s.holds, losses, ttl)
    s["quorum_losses"] = len(losses)
    s["outlived_validity"] = len(late)
    s.check(not late, "holders still inside after the validity could have run out: %s" %
            [{"hold": faultlib.describe(h), "late_ms": faultlib.ms(d)} for h, t, d in late[:3]])
    active = [h for h in s.holds if any(h.start < t < h.end for t in losses)]
    s["holders_at_loss"] = len(active)
    bad = [faultlib.describe(h) for h in active if h.exit_how == "signal" and h.code != 79]
    s.check(not bad, "holders signalled for a lost lock without exit 79: %s" % bad[:3])
    return active


@scenario("clock-rate", "S6 S13", 10)
def clock_rate(ctx):
    """The clients' clocks run 0.5% slow (faketime x0.995, a few x1.005) while the quorum is lost
    now and then: the validity computed on the slow clock still ends before the servers' expiry."""
    lib = faultlib.libfaketime()
    if lib is None:
        raise RuntimeError("libfaketime not installed (Debian package faketime)")
    env = env_for(ctx, "clock-rate")
    try:
        # As `faketime -f x0.995 redlock …`, without the faketime process in between (signals and
        # pids must reach redlock itself).
        for i in range(6):
            env.add_worker(mode="run", hold_ms=(300, 1500),
                           env_extra={"LD_PRELOAD": lib, "FAKETIME": "x0.995" if i < 4 else "x1.005"})
        env.add_worker(mode="acquire", hold_ms=(100, 600), env_extra={"LD_PRELOAD": lib, "FAKETIME": "x0.995"})
        env.run(ctx.seconds, quorum_loss)
        s = summarize(env, "clock-rate", expect_cycles=3)
        check_validity(s, env)
        return s
    finally:
        env.close()


def clock_steps(path):
    def nemesis(env):
        rng = env.rng
        for _ in range(100000):
            if not env.sleep(rng.uniform(0.2, 0.6)):
                return
            step = rng.choice(("+1h", "-1h", "+3h", "-2h", "+0", "+1d", "-1d"))
            with open(path + ".tmp", "w") as f:
                f.write(step + "\n")
            os.rename(path + ".tmp", path)
            env.note("fault", what="wall clock " + step)
    return nemesis


@scenario("clock-step", "S7", 8)
def clock_step(ctx):
    """The clients' wall clock jumps by hours back and forth (libfaketime reading its offset from a
    file; CLOCK_MONOTONIC left alone, as in a real step): no lock lost, renewals on time, validity
    as without the steps."""
    lib = faultlib.libfaketime()
    if lib is None:
        raise RuntimeError("libfaketime not installed (Debian package faketime)")
    env = env_for(ctx, "clock-step")
    try:
        offset = os.path.join(env.workdir, "faketime")
        with open(offset, "w") as f:
            f.write("+0\n")
        extra = {"LD_PRELOAD": lib, "FAKETIME_TIMESTAMP_FILE": offset, "FAKETIME_NO_CACHE": "1",
                 "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
        for _ in range(5):
            env.add_worker(mode="run", ttl="1s", hold_ms=(200, 1200), env_extra=extra)
        for _ in range(2):
            env.add_worker(mode="acquire", ttl="1s", hold_ms=(50, 300), env_extra=extra)
        env.run(ctx.seconds, clock_steps(offset))
        s = summarize(env, "clock-step", acceptable_codes=(0, 75), expect_cycles=5)
        renew_ms = 1000 / 3
        short = []
        validity = []
        for e in s.events:
            if e.get("ev") != "done" or e.get("code") != 0:
                continue
            r = e.get("report") or {}
            if r.get("held_ms") is not None and r.get("renewals") is not None:
                if r["renewals"] < int(r["held_ms"] / renew_ms) - 1:
                    short.append(r)
            if r.get("validity_ms") is not None:
                validity.append(r["validity_ms"])
        s.check(not short, "runs with too few renewals under wall-clock steps: %s" % short[:3])
        # A validity computed from the wall clock would be off by hours.
        s.check(all(0 < v <= 1000 for v in validity),
                "acquire validity out of range under wall-clock steps: %s" % [v for v in validity if not 0 < v <= 1000][:5])
        s.check(validity, "no acquire succeeded under wall-clock steps")
        s["steps"] = sum(1 for e in s.events if e.get("ev") == "fault")
        return s
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------
# S8: only the owner


def stale_tokens(env):
    """Release and extend with tokens of holders that are gone, and with tokens nobody ever had,
    while others hold the lock; each checked in redlock's JSON and on every server."""
    rng = env.rng
    binary = env.binary
    e = faultlib.clean_env({"REDLOCK_SERVERS": env.spec})
    if env.fault:
        e["REDLOCK_FAULT"] = env.fault
    for _ in range(100000):
        if not env.sleep(rng.uniform(0.05, 0.2)):
            return
        if env.finished_tokens and rng.random() < 0.7:
            token, kind = rng.choice(list(env.finished_tokens)), "stale"
        else:
            token, kind = "%032x" % rng.getrandbits(128), "wrong"
        op = rng.choice(("release", "extend"))
        args = [binary, "--json", "release", NAME, "--token", token] if op == "release" else \
            [binary, "--json", "extend", NAME, "--token", token, "--ttl", "60s"]
        before = env.lock_keys()
        p = subprocess.run(args, env=e, capture_output=True, timeout=30)
        after_ttls = []
        for s in env.servers:
            with s.client() as c:
                after_ttls.append(c.call("PTTL", NAME))
        try:
            j = json.loads(p.stdout.decode())
        except ValueError:
            j = {}
        changed = [r for r in j.get("servers", []) if r.get("result") in ("released", "extended")]
        foreign = bool(j.get("deleted")) or bool(j.get("extended")) or bool(changed) or any(t > 10000 for t in after_ttls)
        env.note("stale-op", op=op, kind=kind, code=p.returncode, foreign=foreign, deleted=j.get("deleted"),
                 holders=[k["lock"].decode() if k and k["lock"] else None for k in before], ttls=after_ttls)


def probe_owner_only(env):
    """A name nobody else uses, held for 30s: wrong and stale tokens leave its value and TTL alone."""
    e = faultlib.clean_env({"REDLOCK_SERVERS": env.spec})
    if env.fault:
        e["REDLOCK_FAULT"] = env.fault
    probe = "fault-probe"
    problems = []

    def rl(*args):
        return subprocess.run([env.binary] + list(args), env=e, capture_output=True, timeout=30)

    r = rl("--json", "acquire", probe, "--ttl", "30s")
    held = json.loads(r.stdout.decode())["token"]
    old = rl("--json", "acquire", probe + "-old", "--ttl", "30s")
    stale = json.loads(old.stdout.decode())["token"]
    rl("release", probe + "-old", "--token", stale)
    for token in (stale, "0" * 32, held[:-1], held + "x", ""):
        for args in (["release", probe, "--token", token], ["extend", probe, "--token", token, "--ttl", "120s"]):
            before = []
            for s in env.servers:
                with s.client() as c:
                    before.append((c.call("GET", probe), c.call("PTTL", probe)))
            p = rl(*args)
            for s, (v0, t0) in zip(env.servers, before):
                with s.client() as c:
                    v1, t1 = c.call("GET", probe), c.call("PTTL", probe)
                if v1 != v0 or t1 > t0:
                    problems.append("%s %r: server %d went from %r/%d to %r/%d" % (args[0], token, s.index, v0, t0, v1, t1))
            if token and p.returncode != 1:
                problems.append("%s with token %r: exit %d, expected 1" % (args[0], token, p.returncode))
    rl("release", probe, "--token", held)
    return problems


@scenario("stale-token", "S8", 8)
def stale_token(ctx):
    """Release/extend with stale and wrong tokens during contention (and on a name held for 30 s):
    exit 1, nothing changed on any server, no foreign release."""
    env = env_for(ctx, "stale-token")
    try:
        mixed_workers(env, 5, 1, hold_ms=(50, 300))
        env.run(ctx.seconds, stale_tokens)
        s = summarize(env, "stale-token", acceptable_codes=(0, 75), expect_cycles=5)
        ops = [e for e in s.events if e.get("ev") == "stale-op"]
        s["stale_ops"] = len(ops)
        s["foreign_releases"] = sum(1 for o in ops if o["foreign"])
        s.check(s["foreign_releases"] == 0, "%d releases/extends with a stale or wrong token changed the lock: %s" %
                (s["foreign_releases"], [o for o in ops if o["foreign"]][:3]))
        bad = [o for o in ops if o["code"] != 1]
        s.check(not bad, "stale-token operations not answered with exit 1: %s" % bad[:3])
        s.check(len(ops) >= 5, "only %d stale-token operations" % len(ops))
        probe = probe_owner_only(env)
        s["probe_problems"] = probe
        s.check(not probe, "the held name changed under wrong tokens: %s" % probe[:3])
        return s
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------
# S10: a holder paused past its TTL; S12: renewal; S13: loss; S14/L1: holder crash; S15: signals


def holders(env, rounds, pause):
    """Up to ROUNDS times, after a pause of PAUSE seconds (none once the run ends), the first holder
    seen inside within 10 s whose worker's process is there: (round, w, child pid, n, that process);
    a round without one yields nothing."""
    for i in range(rounds):
        if not env.sleep(pause):
            return
        got = env.wait_inside(10.0)
        if got is None:
            continue
        w, pid, pgid, n = got
        proc = env.workers[w].proc
        if proc is not None:
            yield i, w, pid, n, proc


def wait_next_cycle(worker, n, timeout):
    """Until WORKER has left its cycle N (its holder finished), at most TIMEOUT seconds."""
    deadline = time.monotonic() + timeout
    while worker.cycle == n and time.monotonic() < deadline:
        time.sleep(0.02)


def history_has(path, w, n, ev):
    return any(e.get("ev") == ev and e.get("w") == w and e.get("n") == n for e in faultlib.read_jsonl(path))


def pause_holder(rounds):
    def nemesis(env):
        ttl = ttl_s(env)
        victim = env.workers[0]
        for _ in range(rounds):
            if not env.sleep(0.3):
                return
            got = env.wait_inside(10.0, among={0})
            proc = victim.proc
            if got is None or proc is None:
                continue
            w, pid, pgid, n = got
            os.kill(proc.pid, signal.SIGSTOP)
            try:
                os.killpg(pgid, signal.SIGSTOP)
            except ProcessLookupError:
                os.kill(proc.pid, signal.SIGCONT)
                continue
            env.note("fault", what="holder paused", holder=[w, n])
            time.sleep(ttl + 1.0)
            # Its command wakes first and finishes the write it was in the middle of (a request in
            # flight), then redlock wakes and finds the validity over.
            os.killpg(pgid, signal.SIGCONT)
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline and not history_has(victim.history, w, n, "write"):
                time.sleep(0.01)
            os.kill(proc.pid, signal.SIGCONT)
            env.note("heal", what="holder resumed", holder=[w, n])
            wait_next_cycle(victim, n, 15)
    return nemesis


@scenario("holder-pause", "S10 S9", 10)
def holder_pause(ctx):
    """A holder's `redlock run` and its command SIGSTOPped past the TTL, its write in flight: the
    fenced resource refuses the late write (the unfenced one takes it: the pause did its harm)."""
    env = env_for(ctx, "holder-pause")
    try:
        env.add_worker(mode="run", hold_ms=(600, 800), ignore_signals=True)
        for _ in range(4):
            env.add_worker(mode="run", hold_ms=(10, 60))
        env.run(ctx.seconds, pause_holder(rounds=max(1, int(ctx.seconds // 5))))
        paused = [tuple(e["holder"]) for e in env.history() if e.get("ev") == "fault"]
        s = summarize(env, "holder-pause", exclude=paused, acceptable_codes=(0, 75, 79), expect_cycles=3,
                      unfenced_may_lose=True)
        s["paused"] = len(paused)
        s.check(paused, "no holder was paused")
        by_key = {h.key: h for h in s.holds}
        windows = fault_windows(s.events)
        # Its exit status is not part of S10 (test_holder.PausedSupervisor checks it on its own).
        s["paused_exit_codes"] = [by_key[k].code if k in by_key else None for k in paused]
        for key, (a, b) in zip(paused, windows):
            h = by_key.get(key)
            if h is None:
                s.fail("paused holder %s has no history" % (key,))
                continue
            later = [x for x in s.holds if x.w != key[0] and a < x.start < b]
            s.check(later, "nobody took the lock while %s was paused: the scenario did nothing" % (key,))
            s.check(h.wrote, "paused holder %s never attempted its late write" % (key,))
            if h.wrote and later:
                s.check(str(h.fenced_answer).startswith("STALE"),
                        "late write of paused holder %s answered %r, expected STALE" % (key, h.fenced_answer))
        s.check(s["stale_accepted_unfenced"] > 0, "no stale write reached the unfenced resource: the pause had no effect")
        return s
    finally:
        env.close()


def long_runs(s):
    """The commands of workers 0 and 1 (5 x TTL long) that ran to their end; none at all fails S."""
    runs = [h for h in s.holds if h.w < 2 and h.exit_how == "end"]
    s["long_runs"] = len(runs)
    s.check(runs, "no command ran 5 x TTL to its end")
    return runs


@scenario("renewal", "S12", 14)
def renewal(ctx):
    """Commands that run 5 x TTL (1s): renewed throughout, nobody else inside meanwhile."""
    env = env_for(ctx, "renewal")
    try:
        for _ in range(2):
            env.add_worker(mode="run", ttl="1s", hold_ms=(5000, 5000), wait="20s")
        for _ in range(3):
            env.add_worker(mode="run", ttl="1s", hold_ms=(10, 60), wait="20s")
        env.run(ctx.seconds)
        s = summarize(env, "renewal", acceptable_codes=(0, 75), expect_cycles=2)
        for h in long_runs(s):
            s.check(h.code == 0, "long run %s exit %s" % (h.key, h.code))
            s.check((h.report.get("renewals") or 0) >= 10, "long run %s renewed only %s times in %s ms" %
                    (h.key, h.report.get("renewals"), h.report.get("held_ms")))
        return s
    finally:
        env.close()


def rolling_restart(env):
    """Every server in turn killed -9 and restarted empty after the longest TTL, one at a time."""
    delay = ttl_s(env) + 0.3
    for k in range(10000):
        if not env.sleep(0.5):
            return
        victim = env.servers[k % len(env.servers)]
        victim.kill()
        env.note("fault", what="rolling restart: kill -9", servers=[victim.index])
        time.sleep(delay)
        victim.start()
        env.note("heal", what="rolling restart: back empty", servers=[victim.index])


def through_rolling_restart(ctx, env, judge, name, acceptable_codes=(0, 75), **kw):
    """Runs ENV's workers through the rolling restart, judged by JUDGE(env, NAME, **KW), and checks
    that the long commands (workers 0 and 1) that ran to their end ended with 0."""
    env.run(ctx.seconds, rolling_restart)
    s = judge(env, name, acceptable_codes=acceptable_codes, **kw)
    for h in long_runs(s):
        s.check(h.code == 0, "long run %s exit %s through the rolling restart" % (h.key, h.code))
    return s


@scenario("rolling-restart", "S12 S4", 16)
def rolling_restart_scenario(ctx):
    """Commands that run 5 x TTL (1s) while the servers restart empty one at a time, each down longer
    than the TTL: a quorum is up at every moment, so they keep the lock to their end (each renewal
    puts it back on the server that came back), and nobody overlaps them."""
    env = env_for(ctx, "rolling-restart")
    try:
        for _ in range(2):
            env.add_worker(mode="run", ttl="1s", hold_ms=(5000, 5000), wait="20s")
        for _ in range(2):
            env.add_worker(mode="acquire", ttl="1s", hold_ms=(10, 60), wait=None, run_args=["-n"])
        return through_rolling_restart(ctx, env, summarize, "rolling-restart", expect_cycles=2)
    finally:
        env.close()


@scenario("semaphore-rolling", "S1 S4 S12", 16)
def semaphore_rolling(ctx):
    """12 `run -w 20s --limit 3` workers while every server in turn is killed -9 and restarted empty
    after the TTL (1s), one at a time; two of them run commands of 5 x TTL, the rest short ones. Never
    more than 3 at once, 3 reached, fences increasing per slot, and long commands end with 0: a slot's
    renewals put it back on each server that returns empty."""
    env = env_for(ctx, "semaphore-rolling")
    try:
        for i in range(12):
            env.add_worker(mode="run", ttl="1s", hold_ms=(5000, 5000) if i < 2 else (30, 300), wait="20s",
                           run_args=["--limit", str(SEMAPHORE_LIMIT)])
        # A slot taken on exactly a quorum (a contender had it on another server for a moment, one
        # server down) cannot be renewed once one of them restarts: lost (79), its command stopped.
        return through_rolling_restart(ctx, env, semaphore_summary, "semaphore-rolling", acceptable_codes=(0, 75, 79),
                                       expect_cycles=10)
    finally:
        env.close()


def blips(env):
    """3 of 5 servers frozen together for 0.3-1.5 s, rotating: no quorum for a while, then back."""
    rng = env.rng
    break_servers(env, (0.5, 1.0), lambda: 3, ("freeze", "SIGSTOP of a majority"), ("thaw", "SIGCONT"),
                  down=lambda: env.sleep(rng.uniform(0.3, 1.5)))


@scenario("blip", "S3 L3", 12)
def blip_scenario(ctx):
    """A majority frozen for up to 1.5 s at a time: waiters (-w 10s) wait the blips out, so none
    exits 69 before its 10 s are over (one whose last attempt, at the end of a wait spent losing to
    the others, falls in a blip may), nobody overlaps, and the lock is taken again soon after every
    blip."""
    env = env_for(ctx, "blip")
    try:
        mixed_workers(env, 4, 2, ttl="2s", hold_ms=(10, 60), wait="10s")
        env.run(ctx.seconds, blips)
        # A holder inside when the majority froze cannot renew: it is lost (79), as it must be.
        return summarize(env, "blip", acceptable_codes=(0, 75, 79), after_full_wait=(69,), expect_cycles=5,
                         heal_bound_s=3)
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------
# S1 S9 S11 on a loaded host: healthy servers, CPUs taken by others


BURN = "import time\nend = time.monotonic() + %f\nwhile time.monotonic() < end:\n    pass\n"
# One extra client: `acquire -n` + `release` on names of its own, each exit status a line of its file;
# it ends when the stop file appears, after MAX cycles, or (timeout) after its time.
CLIENT_LOOP = ('i=0; while [ $i -lt %d ] && [ ! -e "$STOP" ]; do '
               't=$("$RL" acquire -n --ttl 10s "loaded-$K-$i"); r=$?; echo "a $r" >> "$OUT"; '
               '[ $r -eq 0 ] && { "$RL" release "loaded-$K-$i" --token "$t" >/dev/null; echo "r $?" >> "$OUT"; }; '
               'i=$((i+1)); done')


class HostLoad:
    """What loads the host while a scenario runs: BURNERS python busy loops (at the scenario's own
    priority) and CLIENTS shell loops of `acquire -n` + `release` on distinct names, every one
    bounded in time (the SECONDS of start) and count, and stopped by its pid."""

    def __init__(self, env, burners, clients):
        self.env, self.burners, self.clients = env, burners, clients
        self.stop_file = os.path.join(env.workdir, "load.stop")
        self.procs = []
        self.outs = [os.path.join(env.workdir, "load-%d.codes" % k) for k in range(clients)]

    def start(self, seconds, max_cycles=100000):
        quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(self.burners):
            self.procs.append(subprocess.Popen([sys.executable, "-S", "-c", BURN % seconds], **quiet))
        for k, out in enumerate(self.outs):
            e = faultlib.clean_env({"REDLOCK_SERVERS": self.env.spec, "RL": self.env.binary, "K": str(k), "OUT": out,
                                    "STOP": self.stop_file})
            self.procs.append(subprocess.Popen(["timeout", "-s", "KILL", "%.0f" % seconds, "sh", "-c",
                                                CLIENT_LOOP % max_cycles], env=e, start_new_session=True, **quiet))

    def stop(self):
        """Stops every process it started: the loops at the end of their cycle, the busy loops at
        once, and whatever is left after 5 s by its pid (a loop with its own process group, which
        `timeout` leads, so its redlock goes too)."""
        open(self.stop_file, "w").close()
        deadline = time.monotonic() + 5
        for p in self.procs:
            if p.args[0] == sys.executable and p.poll() is None:
                p.kill()
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(timeout=10)

    def codes(self):
        """{"a": [acquire exits], "r": [release exits]} of the extra clients."""
        out = {"a": [], "r": []}
        for path in self.outs:
            try:
                with open(path) as f:
                    for line in f:
                        kind, _, code = line.partition(" ")
                        if kind in out and code.strip():
                            out[kind].append(int(code))
            except OSError:
                pass
        return out


def enough_cycles(seconds, cycles):
    """A nemesis that does nothing (the load runs on its own): the run lasts SECONDS, longer (the
    caller bounds it) while fewer than CYCLES holders have entered, so that a load that slows the
    lock down still leaves the checkers something to check."""
    def nemesis(env):
        deadline = time.monotonic() + seconds
        for _ in range(1000000):
            if time.monotonic() >= deadline and sum(1 for e in env.history() if e.get("ev") == "enter") >= cycles:
                return
            if not env.sleep(0.25):
                return
    return nemesis


@scenario("loaded-host", "S1 S9 S11", 8)
def loaded_host(ctx):
    """The `contention` workers on 5 healthy servers while 2-4 busy loops and 40 clients of their own
    (`acquire -n` + `release` on distinct names) take the CPUs: no overlap, no lost update, fences
    increasing, and no exit 69 from the workers (they wait with -w 10s, which outlasts a server's
    wait for a CPU); the extra clients' exits 69 (a healthy server taken for a dead one by a single
    attempt) are counted, not judged."""
    env = env_for(ctx, "loaded-host")
    load = HostLoad(env, env.rng.randint(2, 4), 40)
    try:
        mixed_workers(env, 6, 2)
        load.start(3 * ctx.seconds + 30)
        env.run(3 * ctx.seconds, enough_cycles(ctx.seconds, 5))
        load.stop()
        s = summarize(env, "loaded-host", acceptable_codes=(0, 75), expect_cycles=5)
        codes = load.codes()
        s["burners"], s["extra_clients"] = load.burners, load.clients
        s["exit_69_workers"] = sum(1 for e in s.events if e.get("ev") == "done" and e.get("code") == 69)
        s["extra_cycles"] = len(codes["a"])
        s["extra_exit_69"] = codes["a"].count(69) + codes["r"].count(69)
        s["extra_other_failures"] = sum(1 for c in codes["a"] + codes["r"] if c not in (0, 69))
        s.check(s["extra_cycles"] > 0, "the extra clients did not run")
        return s
    finally:
        load.stop()
        env.close()


@scenario("quorum-loss", "S13", 12)
def quorum_loss_scenario(ctx):
    """3 of 5 servers frozen past the TTL while a long command holds: the command is signalled and
    dead before the validity can end, exit 79, and nobody overlaps it."""
    env = env_for(ctx, "quorum-loss")
    try:
        # Commands longer than the TTL, so that the one inside at a loss would outlive the validity
        # if nothing stopped it.
        for _ in range(4):
            env.add_worker(mode="run", hold_ms=(4000, 6000))
        env.run(ctx.seconds, quorum_loss)
        s = summarize(env, "quorum-loss", expect_cycles=2, heal_bound_s=ttl_s(env) + 4)
        active = check_validity(s, env)
        s.check(active, "no holder was inside when the quorum was lost")
        return s
    finally:
        env.close()


def crash_holder(rounds):
    def nemesis(env):
        out = []
        for _, w, pid, n, proc in holders(env, rounds, 0.5):
            proc.kill()
            t = now()
            env.note("crash", what="kill -9 redlock run", holder=[w, n], child=pid)
            deadline = time.monotonic() + 3
            while faultlib.pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.005)
            dead_after = now() - t
            env.note("crash-result", holder=[w, n], child_alive=faultlib.pid_alive(pid), child_dead_ms=dead_after / MS)
            wait_next_cycle(env.workers[w], n, 10)
            out.append((w, n, t))
            env.sleep(2.5)  # the next holder has come (or not) before the next crash
        return out
    return nemesis


@scenario("holder-crash", "S14 L1", 12)
def holder_crash(ctx):
    """kill -9 of a holder's `redlock run`: its command dies with it, and the next holder gets the lock
    within TTL + one retry delay (plus slack for a loaded machine)."""
    env = env_for(ctx, "holder-crash")
    try:
        for _ in range(4):
            env.add_worker(mode="run", hold_ms=(800, 1500))
        crashes = env.run(ctx.seconds, crash_holder(rounds=max(1, int(ctx.seconds // 4)))) or []
        killed = [(w, n) for w, n, t in crashes]
        s = summarize(env, "holder-crash", acceptable_codes=(0, 75, -9), expect_cycles=2)
        ttl = ttl_s(env)
        bound = ttl + 0.25 + 1.0
        s["crashes"] = len(crashes)
        s.check(crashes, "no holder was crashed")
        for e in s.events:
            if e.get("ev") == "crash-result":
                s.check(not e["child_alive"], "the command of crashed holder %s outlived it by 3s" % e["holder"])
        delays = []
        for w, n, t in crashes:
            nxt = [h.start for h in s.holds if h.start > t]
            delays.append((min(nxt) - t) / SEC if nxt else None)
        s["l1_next_acquire_s"] = [round(d, 2) if d is not None else None for d in delays]
        s.check(all(d is not None and d <= bound for d in delays),
                "next holder after a crash later than TTL + retry + 1s (%.2fs): %s" % (bound, s["l1_next_acquire_s"]))
        s["p99_reacquire_ms"] = faultlib.ms(checkers.percentile([d * SEC for d in delays if d is not None], 99))
        s["killed"] = killed
        return s
    finally:
        env.close()


def send_signals(env):
    out = []
    sigs = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
    for i, w, _, n, proc in holders(env, 100, 0.3):
        sig = sigs[i % len(sigs)]
        proc.send_signal(sig)
        t = now()
        env.note("signal", holder=[w, n], sig=sig.name)
        wait_next_cycle(env.workers[w], n, 10)
        out.append((w, n, int(sig), t))
        if len(out) >= len(sigs) and env.stopping.is_set():
            return out
    return out


@scenario("signals", "S15", 10)
def signals_scenario(ctx):
    """INT, TERM, HUP to a holder's `redlock run`: forwarded to the command, the lock released at
    once (the next holder comes long before the TTL), exit 128+N."""
    env = env_for(ctx, "signals")
    try:
        for _ in range(3):
            env.add_worker(mode="run", ttl="6s", hold_ms=(1000, 2000))
        sent = env.run(ctx.seconds, send_signals) or []
        s = summarize(env, "signals", acceptable_codes=(0, 75, 130, 143, 129), expect_cycles=2)
        by_key = {h.key: h for h in s.holds}
        s["signals_sent"] = len(sent)
        s.check(len(sent) >= 2, "only %d signals sent" % len(sent))
        handoffs = []
        for w, n, sig, t in sent:
            h = by_key.get((w, n))
            name = signal.Signals(sig).name
            if h is None:
                s.fail("no history for signalled holder %s" % ((w, n),))
                continue
            s.check(h.code == 128 + sig, "%s to holder %s: exit %s, expected %d" % (name, (w, n), h.code, 128 + sig))
            s.check(h.exit_sig == name, "%s to holder %s: the command saw %s" % (name, (w, n), h.exit_sig))
            nxt = [x.start for x in s.holds if x.start > t]
            handoffs.append((min(nxt) - t) / SEC if nxt else None)
        s["handoff_s"] = [round(d, 2) if d is not None else None for d in handoffs]
        # Released, not expired: well under the 6s TTL (the last one may have met the end of the run).
        s.check(all(d is not None and d < 2.0 for d in handoffs[:-1]), "lock not released promptly after a signal: %s" %
                s["handoff_s"])
        return s
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------
# S17: script cache


def script_flushes(env):
    rng = env.rng
    for _ in range(100000):
        if not env.sleep(rng.uniform(0.05, 0.25)):
            return
        victims = rng.sample(env.servers, rng.randint(1, len(env.servers)))
        for s in victims:
            with s.client() as c:
                c.call("SCRIPT", "FLUSH")
        env.note("fault", what="SCRIPT FLUSH", servers=[s.index for s in victims])


@scenario("script-flush", "S17", 8)
def script_flush(ctx):
    """SCRIPT FLUSH on random servers every 50-250 ms while workers run: NOSCRIPT never surfaces
    (no failed run, no lost lock), no overlap."""
    env = env_for(ctx, "script-flush")
    try:
        mixed_workers(env, 6, 2, hold_ms=(30, 400))
        env.run(ctx.seconds, script_flushes)
        s = summarize(env, "script-flush", acceptable_codes=(0, 75), expect_cycles=5)
        errs = []
        for w in env.workers:
            try:
                with open(w.stderr_path, errors="replace") as f:
                    errs += [line.strip() for line in f if "NOSCRIPT" in line]
            except OSError:
                pass
        s.check(not errs, "NOSCRIPT surfaced: %s" % errs[:3])
        return s
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------
# Split brain: 4 servers, two groups of clients that each see one half during partitions


def halves(env):
    rng = env.rng
    groups = env.groups
    for _ in range(10000):
        if not env.sleep(rng.uniform(0.5, 1.0)):
            return
        # Group 0 loses servers 2 and 3, group 1 loses 0 and 1.
        for g, lost in ((0, (2, 3)), (1, (0, 1))):
            for i in lost:
                groups[g][i].cut()
        env.note("fault", what="partition into halves")
        env.sleep(rng.uniform(2.0, 3.0))
        for g in groups:
            for p in g:
                p.heal()
        env.note("heal", what="partition healed")


@scenario("split-brain", "S2 (half-quorum control)", 10)
def split_brain(ctx):
    """4 servers, two groups of clients; now and then a partition leaves each group with half of the
    servers. With the real quorum (3 of 4) nobody holds during the partition; with N/2 votes
    (REDLOCK_FAULT=half-quorum) both halves do."""
    env = env_for(ctx, "split-brain", servers=4)
    try:
        client_groups(env, 2, 3, mode="run", hold_ms=(300, 800))
        env.run(ctx.seconds, halves)
        return summarize(env, "split-brain", expect_cycles=3)
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------
# Running


_netns_counter = [0]


def cleanup_stale_netns():
    """Namespaces of earlier runs of the suite whose process is gone (a run killed from outside)."""
    try:
        names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        return
    for name in names:
        parts = name.split("-")
        if len(parts) == 3 and parts[0] == "rlkfault" and parts[1].isdigit() and not os.path.exists("/proc/" + parts[1]):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=10)


def netns_available():
    cleanup_stale_netns()
    _netns_counter[0] += 1
    name = "rlkfault-%d-%d" % (os.getpid(), _netns_counter[0])
    r = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True, timeout=10) \
        if os.geteuid() == 0 else None
    if r is None or r.returncode != 0:
        return None, (r.stderr.strip() if r is not None else "not root")
    return name, None


def run_in_netns(sc, ctx):
    ns, why = netns_available()
    if ns is None:
        raise NetnsUnavailable("cannot make a network namespace: %s" % why)
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True, timeout=10)
        fd, out = tempfile.mkstemp(prefix="redlock-fault-", suffix=".json")
        os.close(fd)
        env = dict(os.environ, FAULT_NETNS=ns)
        args = ["ip", "netns", "exec", ns, faultlib.PYTHON, os.path.abspath(__file__), sc.name, "--seconds",
                str(ctx.seconds), "--seed", str(ctx.seed), "--json", out, "--quiet"]
        if ctx.binary:
            args += ["--binary", ctx.binary]
        if ctx.fault:
            args += ["--fault", ctx.fault]
        try:
            r = subprocess.run(args, env=env, timeout=ctx.seconds + 180)
            try:
                with open(out) as f:
                    return Summary(json.load(f))
            except ValueError:
                return Summary(scenario=sc.name, failures=["the run inside namespace %s left no result (exit %s)" %
                                                           (ns, r.returncode)])
        finally:
            os.unlink(out)
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


class NetnsUnavailable(Exception):
    pass


def run_scenario(name, seconds=None, binary=None, fault=None, seed=None):
    sc = SCENARIOS[name]
    ctx = Ctx(seconds if seconds is not None else sc.seconds, binary, fault, seed)
    if sc.netns and not netns_name():
        return run_in_netns(sc, ctx)
    started = time.monotonic()
    s = sc.fn(ctx)
    s.setdefault("seconds", round(time.monotonic() - started, 1))
    s["wall_seconds"] = round(time.monotonic() - started, 1)
    s["seed"] = ctx.seed
    s["properties"] = sc.properties
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--binary")
    ap.add_argument("--fault")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--json")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    try:
        s = run_scenario(a.scenario, a.seconds, a.binary, a.fault, a.seed)
    except NetnsUnavailable as e:
        s = Summary(scenario=a.scenario, failures=[], skipped=str(e))
    except Exception:
        import traceback
        s = Summary(scenario=a.scenario, failures=["harness error: " + traceback.format_exc()])
    if a.json:
        with open(a.json, "w") as f:
            json.dump(s, f, indent=1, default=str)
    if not a.quiet:
        faultlib.print_summary(s, sys.stdout)
    return 1 if s["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
