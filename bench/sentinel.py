#!/usr/bin/env python3
"""Acquire latency with Sentinel members against standalone servers.

Starts three Sentinel groups (a master, a replica and three sentinels each, as
tests/integration/test_sentinel.py does) and three standalone servers on free loopback ports, then
runs `redlock --json acquire -n` and its release N times against each set and prints the median
of the acquire's own elapsed_ms and of the whole process's wall time. Each invocation resolves its
members afresh: a sentinel's answer and the master's ROLE cost a round trip each before the
acquire goes out. Usage: bench/sentinel.py [N] (default 40)."""

import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))

from harness import Cluster, SentinelGroup as Group, redlock  # noqa: E402


def measure(spec, args, n):
    elapsed, wall = [], []
    for i in range(n):
        start = time.monotonic()
        r = redlock(["--json"] + list(args) + ["acquire", "-n", "bench-%d" % i], servers=spec)
        wall.append((time.monotonic() - start) * 1000)
        if r.code != 0:
            raise RuntimeError("acquire failed: %r" % r)
        elapsed.append(r.json()["elapsed_ms"])
        redlock(["release", "--token", r.json()["token"], "bench-%d" % i], servers=spec)
    return statistics.median(elapsed), statistics.median(wall)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    workdir = tempfile.mkdtemp(prefix="redlock-bench-sentinel-")
    groups, plain = [], None
    try:
        groups = [Group(workdir, i) for i in range(3)]
        plain = Cluster(3)
        members = ",".join(g.url() for g in groups)
        rows = (("3 standalone servers", plain.spec, ()),
                ("3 Sentinel members", members, ()),
                ("3 Sentinel members, --member-wait 0", members, ("--member-wait", "0")))
        print("%-38s %18s %18s" % ("", "acquire elapsed", "process wall"))
        for label, spec, args in rows:
            e, w = measure(spec, args, n)
            print("%-38s %15.3f ms %15.1f ms" % (label, e, w))
    finally:
        for g in groups:
            g.stop()
        if plain:
            plain.stop()


if __name__ == "__main__":
    main()
