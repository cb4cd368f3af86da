"""Three Redis Clusters as the only three quorum members, each `cluster://N1,N2` one vote cast by the
master that owns the lock's slot: acquire, status and release through the owning masters, a
contender refused while the lock is held, and contending `run -w` loops that never overlap.

Each cluster is three masters without replicas (`redis-cli --cluster create --cluster-replicas 0`),
so `--member-wait` defaults to 0 for them: a vote counts without WAIT, as a standalone server's
does (no replica could be promoted to forget it). The test checks that no WAIT was sent."""

import os
import shutil
import tempfile
import threading
import unittest

from harness import main, redlock
from test_cluster import RedisCluster

ENV = {"REDLOCK_TIMEOUT": "1s"}


class ThreeClusters(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="redlock-clusters-")
        cls.clusters = []
        try:
            for k in range(3):
                cls.clusters.append(RedisCluster(cls.workdir, masters=3, replicas=0, first=100 + 10 * k))
        except Exception:
            cls.tearDownClass()
            raise
        cls.servers = ",".join(c.url() for c in cls.clusters)

    @classmethod
    def tearDownClass(cls):
        for c in cls.clusters:
            c.stop()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def rl(self, *args):
        return redlock(list(args), servers=self.servers, env=ENV)

    def test_acquire_status_release_on_each_owning_master(self):
        name = "three-basic"
        r = self.rl("--json", "acquire", "--ttl", "20s", name)
        self.assertEqual(r.code, 0, r)
        token = r.json()["token"].encode()
        voted = 0
        for cluster, entry in zip(self.clusters, r.json()["servers"]):
            owner, replica = cluster.owner(name)
            self.assertIsNone(replica)
            self.assertEqual(entry["member"], cluster.url())
            # A quorum may decide before the last member answers. acquire then exits without waiting
            # for it, and a member still finding its slot's owner may never have been sent the SET:
            # the lock is held on the quorum (renewal and `extend` put it back on the rest).
            if entry["ok"] is not None:
                voted += 1
                self.assertTrue(entry["ok"], entry)
                self.assertEqual((entry["resolved"], entry["role"]), (owner.address, "master"), entry)
                self.assertEqual(owner.get(name), token)
                # Its helper keys (the fencing counter, the owner record) there too, on no other master.
                self.assertGreaterEqual(len(cluster.keys_on(owner, "*%s*" % name)), 3)
            for port in cluster.masters():
                if port != owner.port:
                    self.assertEqual(cluster.keys_on(cluster.node(port), "*%s*" % name), [])
        self.assertGreaterEqual(voted, 2, r.json()["servers"])

        r = self.rl("--json", "acquire", "-n", "--ttl", "20s", name)
        self.assertEqual(r.code, 75, r)  # busy
        self.assertEqual(r.json()["reason"], "busy", r.json())
        r = self.rl("--json", "status", name)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.json()["state"], "held", r.json())
        holding = [cluster.owner(name)[0].get(name) == token for cluster in self.clusters]
        r = self.rl("--json", "release", "--token", token.decode(), name)
        self.assertEqual(r.code, 0, r)
        self.assertEqual([s["ok"] for s in r.json()["servers"]], holding, r.json()["servers"])
        for cluster in self.clusters:
            owner, _ = cluster.owner(name)
            self.assertIsNone(owner.get(name))
            # No replica anywhere: --member-wait defaults to 0, and no vote waited for WAIT.
            with owner.client() as c:
                self.assertNotIn(b"cmdstat_wait:", c.call("INFO", "commandstats"))

    def test_contending_runs_never_overlap(self):
        d = tempfile.mkdtemp(dir=self.workdir)
        counter, log = os.path.join(d, "counter"), os.path.join(d, "log")
        with open(counter, "w") as f:
            f.write("0")
        # Read, pause, write: two holders at once lose an update, and their enter/exit lines interleave.
        body = ('echo enter >> {log}; n=$(cat {c}); sleep 0.02; echo $((n+1)) > {c}; echo exit >> {log}'
                .format(log=log, c=counter))
        runs, workers = 4, 3
        codes = []

        def worker():
            for _ in range(runs):
                r = redlock(["run", "-w", "30s", "--ttl", "5s", "three-loop", "--", "sh", "-c", body],
                            servers=self.servers, env=ENV, timeout=60)
                codes.append(r.code)

        threads = [threading.Thread(target=worker) for _ in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        self.assertEqual(codes, [0] * runs * workers)
        with open(counter) as f:
            self.assertEqual(int(f.read()), runs * workers)
        with open(log) as f:
            lines = f.read().split()
        self.assertEqual(lines, ["enter", "exit"] * runs * workers)


if __name__ == "__main__":
    main()
