#!/usr/bin/env python3
"""Acquire latency with Sentinel members against standalone servers.

Starts three Sentinel groups (a master, a replica and three sentinels each, as
tests/integration/test_sentinel.py does) and three standalone servers on free loopback ports, then
runs `redlock --json acquire -n` and its release N times against each set and prints the median
of the acquire's own elapsed_ms and of the whole process's wall time. Each invocation resolves its
members afresh: a sentinel's answer and the master's ROLE cost a round trip each before the
acquire goes out. Then, once resolved: the median renewal of `run`s against each set, in turn
(see renewal_times()), and its ratio to the standalone servers' in the same run.
Usage: bench/sentinel.py [N] (default 40)."""

import os
import re
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))

from harness import Cluster, SentinelGroup as Group, redlock  # noqa: E402


def measure(spec, args, n, names="bench-%d"):
    elapsed, wall = [], []
    for i in range(n):
        start = time.monotonic()
        r = redlock(["--json"] + list(args) + ["acquire", "-n", names % i], servers=spec)
        wall.append((time.monotonic() - start) * 1000)
        if r.code != 0:
            raise RuntimeError("acquire failed: %r" % r)
        elapsed.append(r.json()["elapsed_ms"])
        redlock(["release", "--token", r.json()["token"], names % i], servers=spec)
    return statistics.median(elapsed), statistics.median(wall)


# run's renewals: --ttl 1s, --drift 0 (an allowance of 2 ms), one every 50 ms while `sleep HOLD_S` runs.
RENEW_ARGS = ("--ttl", "1s", "--drift", "0", "--renew", "50ms")
RENEW_TTL_MS, RENEW_ALLOWANCE_MS = 1000.0, 2.0
HOLD_S = 3


def renewal_times(spec, args, name):
    """How long each renewal of one `run` took once the members were resolved (the connections up,
    the masters or the slot map known), in ms. `redlock -vv run` says "renewed, valid for X" as soon
    as it is told a renewal succeeded; the renewal that set out at T made the lock valid until
    T + ttl - drift allowance, so it took ttl - allowance - X until then (its round trip, WAIT
    included, and the turn of run's loop that saw it)."""
    r = redlock(["-vv"] + list(args) + ["run"] + list(RENEW_ARGS) + [name, "--", "sleep", str(HOLD_S)],
                servers=spec, timeout=HOLD_S + 30)
    if r.code != 0:
        raise RuntimeError("run failed: %r" % r)
    took = []
    for value, unit in re.findall(r"renewed, valid for ([0-9.e+-]+)(ms|s)\b", r.stderr):
        valid = float(value) * (1000.0 if unit == "s" else 1.0)
        took.append(RENEW_TTL_MS - RENEW_ALLOWANCE_MS - valid)
    if not took:
        raise RuntimeError("no renewal seen: %r" % r)
    return took


def report(rows, n, rounds=3, names="bench-%d"):
    """Each row's one-shot acquire (N times), then the median renewal once resolved over ROUNDS runs
    per row, taken in turn (a busy moment of the shared machine is spread over every row); the
    first row is the standalone baseline that the ratios are against. NAMES: the locks' names."""
    firsts = [measure(spec, args, n, names) for _, spec, args in rows]
    took = [[] for _ in rows]
    for i in range(rounds):
        for k, (_, spec, args) in enumerate(rows):
            took[k] += renewal_times(spec, args, names % (1000 + i))
    base = statistics.median(took[0])
    print("%-44s %16s %14s %20s %8s" % ("", "acquire elapsed", "process wall", "renewal, resolved", "ratio"))
    for (label, _, _), (e, w), t in zip(rows, firsts, took):
        renew = statistics.median(t)
        print("%-44s %13.3f ms %11.1f ms %11.3f ms (%3d) %7.2fx" % (label, e, w, renew, len(t), renew / base))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    workdir = tempfile.mkdtemp(prefix="redlock-bench-sentinel-")
    groups, plain = [], None
    try:
        groups = [Group(workdir, i) for i in range(3)]
        plain = Cluster(3)
        members = ",".join(g.url() for g in groups)
        # The same servers as the members, listed as standalone ones: what the servers cost (a
        # replica to feed, three sentinels asking), apart from what the member's kind costs.
        masters = ",".join("redis://127.0.0.1:%d" % g.master_port() for g in groups)
        rows = (("3 standalone servers", plain.spec, ()),
                ("the groups' masters as redis://", masters, ()),
                ("3 Sentinel members", members, ()),
                ("3 Sentinel members, --member-wait 0", members, ("--member-wait", "0")))
        report(rows, n)
    finally:
        for g in groups:
            g.stop()
        if plain:
            plain.stop()


if __name__ == "__main__":
    main()
