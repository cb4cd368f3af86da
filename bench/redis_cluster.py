#!/usr/bin/env python3
"""Acquire latency with a Redis Cluster member against standalone servers.

Starts a 3-shard Redis Cluster (a master and a replica each, as tests/integration/test_cluster.py
does) and two standalone servers on free loopback ports, then runs `redlock --json acquire -n` and
its release N times against each set and prints the median of the acquire's own elapsed_ms and of
the whole process's wall time. The sets have two members, so that the quorum (2) needs every
member's vote: the cluster's is always waited for. Each invocation learns the slot map afresh
(CLUSTER SLOTS, a round trip before the acquire goes out): these are first-resolution figures.
Then, once resolved: the median renewal of `run`s against each set, in turn (bench/sentinel.py's
renewal_times()), and its ratio to the standalone servers' in the same run.
Usage: bench/redis_cluster.py [N] (default 40)."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))

from harness import Server  # noqa: E402
from sentinel import report  # noqa: E402
from test_cluster import RedisCluster  # noqa: E402


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    workdir = tempfile.mkdtemp(prefix="redlock-bench-cluster-")
    cluster, plain = None, []
    try:
        cluster = RedisCluster(workdir)
        plain = [Server(workdir, k).start() for k in range(2)]
        # Every name in one slot ({bench}), so that its owning master can be listed as a standalone
        # member too: what the node costs (a replica to feed, the cluster bus), apart from the member's kind.
        owner, _ = cluster.owner("{bench}")
        rows = (("2 standalone servers", "%s,%s" % (plain[0].url, plain[1].url), ()),
                ("its owning master as redis://, 1 standalone", "%s,%s" % (owner.url, plain[0].url), ()),
                ("a cluster member and 1 standalone", "%s,%s" % (cluster.url(), plain[0].url), ()),
                ("the same, --member-wait 0", "%s,%s" % (cluster.url(), plain[0].url), ("--member-wait", "0")))
        report(rows, n, names="{bench}-%d")
    finally:
        if cluster:
            cluster.stop()
        for s in plain:
            s.kill()


if __name__ == "__main__":
    main()
