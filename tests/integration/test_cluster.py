"""A Redis Cluster as one quorum member: `cluster://N1,N2` votes through the master that owns the
lock's slot (CRC16 of the hash tag), learnt with CLUSTER SLOTS from any answering seed; a MOVED is
followed within the request's deadline, every key of a lock lives in the owning shard, and names
whose keys could not share one slot, a cluster listed twice and a node of it listed on its own are
refused before anything is taken.

One 3-shard cluster (6 redis-server --cluster-enabled yes, each with a replica, made with
`redis-cli --cluster create`) beside 2 standalone servers, all on free loopback ports."""

import os
import shutil
import subprocess
import tempfile
import time
import unittest

from harness import RespError, Server, free_port, listeners, main, redlock, spawn, wait_for

ENV = {"REDLOCK_TIMEOUT": "1s"}


class RedisCluster:
    """Cluster nodes: three masters (MASTERS), each with a replica (REPLICAS per master)."""

    def __init__(self, workdir, node=Server, cli=(), masters=3, replicas=1, first=100):
        """NODE(workdir, index, extra) makes a node, indexes from FIRST on; CLI: what redis-cli needs
        to reach them."""
        extra = ("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000")
        self.nodes = []
        self.n_masters, self.n_replicas = masters, replicas
        try:
            for k in range(masters * (1 + replicas)):
                # The bus port of its own: PORT + 10000 may be taken, or past 65535.
                bus = ("--cluster-port", str(free_port()))
                self.nodes.append(node(workdir, first + k, extra + bus).start())
            create = ["redis-cli"] + list(cli) + ["--cluster", "create"] + [n.address for n in self.nodes] + \
                ["--cluster-replicas", str(replicas), "--cluster-yes"]
            done = subprocess.run(create, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
            if done.returncode != 0:
                raise RuntimeError("redis-cli --cluster create: %s" % done.stdout.decode()[-2000:])
            wait_for(self.ready, timeout=20, interval=0.1, what="the cluster to be ok, each replica in sync")
        except Exception:
            self.stop()
            raise

    def ready(self):
        try:
            for n in self.nodes:
                with n.client() as c:
                    if b"cluster_state:ok" not in c.call("CLUSTER", "INFO"):
                        return False
                    info = c.call("INFO", "replication")
                    if b"role:slave" in info and b"master_link_status:up" not in info:
                        return False
            return len(self.masters()) == self.n_masters and \
                all(len(r) == 3 + self.n_replicas for r in self.slots())
        except (OSError, RespError):
            return False

    def slots(self):
        with self.nodes[0].client() as c:
            return c.call("CLUSTER", "SLOTS")

    def masters(self):
        return sorted({int(r[2][1]) for r in self.slots()})

    def node(self, port):
        return next(n for n in self.nodes if n.port == port)

    def owner(self, key):
        """The master serving KEY's slot, and its replica (None without replicas), as the cluster says now."""
        with self.nodes[0].client() as c:
            slot = c.call("CLUSTER", "KEYSLOT", key)
        for r in self.slots():
            if r[0] <= slot <= r[1]:
                return self.node(int(r[2][1])), self.node(int(r[3][1])) if len(r) > 3 else None
        raise AssertionError("no node serves slot %d" % slot)

    def keys_on(self, node, pattern):
        with node.client() as c:
            return sorted(c.call("KEYS", pattern))

    def migrate(self, key, target):
        """Moves KEY's slot, with its keys, from its owner to TARGET (a master), as redis-cli's reshard
        does: IMPORTING, MIGRATING, MIGRATE of each key, then SETSLOT NODE on every master."""
        source, _ = self.owner(key)
        with source.client() as src, target.client() as dst:
            slot = src.call("CLUSTER", "KEYSLOT", key)
            src_id, dst_id = src.call("CLUSTER", "MYID"), dst.call("CLUSTER", "MYID")
            dst.call("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
            src.call("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
            for _ in range(100):
                keys = src.call("CLUSTER", "GETKEYSINSLOT", slot, 100)
                if not keys:
                    break
                src.call("MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", *keys)
            for port in self.masters():
                with self.node(port).client() as c:
                    c.call("CLUSTER", "SETSLOT", slot, "NODE", dst_id)
        wait_for(lambda: self.owner(key)[0].port == target.port, timeout=10, what="the slot to move")
        return source

    def url(self, seeds=2, scheme="cluster"):
        return scheme + "://" + ",".join(n.address for n in self.nodes[:seeds])

    def stop(self):
        for n in self.nodes:
            n.kill()


def errorstat(node, name):
    with node.client() as c:
        for line in c.call("INFO", "errorstats").decode().splitlines():
            if line.startswith("errorstat_%s:" % name):
                return int(line.split("count=", 1)[1].split(",", 1)[0])
    return 0


class ClusterBesideTwo(unittest.TestCase):
    """A Redis Cluster made with CLUSTER_OPTIONS and two standalone servers, for the class's tests."""
    cluster_options = {}

    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="redlock-cluster-")
        cls.plain = []
        cls.cluster = None
        try:
            cls.cluster = RedisCluster(cls.workdir, **cls.cluster_options)
            cls.plain = [Server(cls.workdir, k).start() for k in range(2)]
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.cluster:
            cls.cluster.stop()
        for s in cls.plain:
            s.kill()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def three(self):
        """The cluster beside the two standalone servers."""
        return "%s,%s,%s" % (self.cluster.url(), self.plain[0].url, self.plain[1].url)


class ClusterMember(ClusterBesideTwo):
    def two(self):
        """The cluster beside one standalone server: a quorum needs the cluster's vote."""
        return "%s,%s" % (self.cluster.url(), self.plain[0].url)

    def rl(self, servers, *args):
        return redlock(list(args), servers=servers, env=ENV)

    def test_acquire_status_release_on_the_owning_master(self):
        name = "cl-basic"
        r = self.rl(self.three(), "--json", "acquire", "--ttl", "20s", name)
        self.assertEqual(r.code, 0, r)
        token = r.json()["token"]
        owner, replica = self.cluster.owner(name)
        wait_for(lambda: owner.get(name) == token.encode(), timeout=10, what="the lock on the owning master")
        r = self.rl(self.three(), "acquire", "-n", "--ttl", "20s", name)  # another holder: busy
        self.assertEqual(r.code, 75, r)
        r = self.rl(self.three(), "--json", "status", name)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.json()["state"], "held")
        r = self.rl(self.three(), "--json", "release", "--token", token, name)
        self.assertEqual(r.code, 0, r)
        entry = r.json()["servers"][0]
        self.assertEqual(entry["member"], self.cluster.url())
        self.assertEqual(entry["resolved"], owner.address, entry)
        self.assertEqual(entry["role"], "master", entry)
        self.assertTrue(entry["ok"], entry)
        self.assertIsNone(owner.get(name))

    def test_a_vote_counts_once_a_replica_has_it(self):
        name = "cl-wait"
        r = self.rl(self.two(), "--json", "acquire", "--ttl", "20s", name)
        self.assertEqual(r.code, 0, r)
        token = r.json()["token"].encode()
        owner, replica = self.cluster.owner(name)
        self.assertEqual(owner.get(name), token)
        # Read at once: WAIT confirmed it before the vote counted (the replica takes no writes of
        # its own, READONLY lets it answer for its master's slot).
        with replica.client() as c:
            c.call("READONLY")
            self.assertEqual(c.call("GET", name), token)
        self.assertEqual(self.rl(self.two(), "release", "--token", token.decode(), name).code, 0)

    def test_run_holds_the_lock_its_command_sees(self):
        name = "cl-run"
        owner, _ = self.cluster.owner(name)
        check = 'test "$(redis-cli -p %d GET "$REDLOCK_KEY")" = "$REDLOCK_TOKEN"' % owner.port
        r = self.rl(self.two(), "run", "--ttl", "5s", name, "--", "sh", "-c", check)
        self.assertEqual(r.code, 0, r)
        self.assertIsNone(owner.get(name))

    def test_every_key_of_a_lock_is_in_the_owning_shard(self):
        for name, args in (("cl-plain", []), ("cl-sem", ["--limit", "2"]), ("cl-shared", ["--shared"]),
                           ("{cl-tag}.x", [])):
            r = self.rl(self.two(), "--json", "acquire", "--ttl", "20s", name, *args)
            self.assertEqual(r.code, 0, (name, r))
            self.assertTrue(r.json()["servers"][0]["ok"], (name, r.json()["servers"]))
            owner, _ = self.cluster.owner(name)
            tag = name[1:name.index("}")] if name.startswith("{") else name
            on_owner = self.cluster.keys_on(owner, "*%s*" % tag)
            self.assertGreaterEqual(len(on_owner), 2, (name, on_owner))  # the lock (or slot) and its fence at least
            for port in self.cluster.masters():
                if port != owner.port:
                    self.assertEqual(self.cluster.keys_on(self.cluster.node(port), "*%s*" % tag), [], name)

    def listening(self, name, *args):
        """Starts redlock ARGS against two(), and waits until it listens for NAME's wake-ups on the
        owning master; it is killed at the end of the test if still running."""
        owner, _ = self.cluster.owner(name)
        proc = spawn(list(args), servers=self.two(), env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

        def stop():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.addCleanup(stop)

        def subscribed():
            with owner.client() as c:
                return listeners(c, "{%s}:redlock:wake" % name) >= 1
        wait_for(subscribed, timeout=10, interval=0.05, what="%s to subscribe on the owning master" % args[0])
        return proc

    def test_a_waiter_is_woken_through_the_owning_master(self):
        name = "cl-wake"
        r = self.rl(self.two(), "--json", "acquire", "--ttl", "20s", name)
        self.assertEqual(r.code, 0, r)
        # Its fallback poll behind a redlock holder is 20 retry delays: 20 s.
        waiter = self.listening(name, "acquire", "--ttl", "5s", "-w", "30s", "--retry-delay", "1s", name)
        time.sleep(0.2)
        started = time.monotonic()
        self.assertEqual(self.rl(self.two(), "release", "--token", r.json()["token"], name).code, 0)
        out, err = waiter.communicate(timeout=30)
        self.assertEqual(waiter.returncode, 0, err)
        self.assertLess(time.monotonic() - started, 15.0)  # woken by the release, not by the poll

    def test_watch_sees_the_release(self):
        name = "cl-watch"
        r = self.rl(self.two(), "--json", "acquire", "--ttl", "20s", name)
        self.assertEqual(r.code, 0, r)
        watcher = self.listening(name, "watch", name, "--until", "free")
        self.assertEqual(self.rl(self.two(), "release", "--token", r.json()["token"], name).code, 0)
        out, err = watcher.communicate(timeout=15)
        self.assertEqual(watcher.returncode, 0, err)

    def test_names_whose_keys_cannot_share_a_slot_are_refused(self):
        for name in ("a{}b", "a}b"):
            r = self.rl(self.three(), "acquire", name)
            self.assertEqual(r.code, 64, r)
            self.assertIn("hash tag", r.stderr)
        # Without a cluster member such a name is an ordinary lock.
        r = self.rl(self.plain[0].url, "acquire", "--ttl", "1s", "a{}b")
        self.assertEqual(r.code, 0, r)

    def test_moved_is_followed_while_run_renews(self):
        name = "cl-moved"
        owner, _ = self.cluster.owner(name)
        target = self.cluster.node(next(p for p in self.cluster.masters() if p != owner.port))
        flag = os.path.join(self.workdir, "moved")
        # Once the slot has moved: a few renewals later, the lock is on its new master with our token.
        child = ('for i in $(seq 400); do [ -e %s ] && break; sleep 0.05; done; sleep 2; '
                 'test "$(redis-cli -p %d GET "$REDLOCK_KEY")" = "$REDLOCK_TOKEN"' % (flag, target.port))
        moved_before = errorstat(owner, "MOVED")
        run = spawn(["run", "--ttl", "1500ms", name, "--", "sh", "-c", child], servers=self.two(), env=ENV,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            wait_for(lambda: owner.get(name) is not None, timeout=10, what="run to take the lock")
            self.cluster.migrate(name, target)
            open(flag, "w").close()
            out, err = run.communicate(timeout=30)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        # The cluster's vote is needed for every renewal (two members): the run kept its lock.
        self.assertEqual(run.returncode, 0, err)
        self.assertGreater(errorstat(owner, "MOVED"), moved_before)
        self.assertIsNone(target.get(name))
        # A fresh process learns the new map.
        r = self.rl(self.two(), "--json", "acquire", "--ttl", "5s", name)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.json()["servers"][0]["resolved"], target.address)
        self.assertEqual(self.rl(self.two(), "release", "--token", r.json()["token"], name).code, 0)

    def test_ask_is_followed_during_a_migration(self):
        name = "cl-ask"
        source, _ = self.cluster.owner(name)
        target = self.cluster.node(next(p for p in self.cluster.masters() if p != source.port))
        with source.client() as src, target.client() as dst:
            slot = src.call("CLUSTER", "KEYSLOT", name)
            dst.call("CLUSTER", "SETSLOT", slot, "IMPORTING", src.call("CLUSTER", "MYID"))
            src.call("CLUSTER", "SETSLOT", slot, "MIGRATING", dst.call("CLUSTER", "MYID"))
        try:
            asked_before = errorstat(source, "ASK")
            r = self.rl(self.two(), "--json", "acquire", "-n", "--ttl", "5s", name)
            # The source has none of the lock's keys: it answers ASK, which is followed to the target;
            # there a script of several keys, some missing, is refused until the slot is stable.
            self.assertEqual(r.code, 69, r)
            entry = r.json()["servers"][0]
            self.assertIn("TRYAGAIN", entry["error"], entry)
            self.assertEqual(entry["resolved"], target.address, entry)
            self.assertGreater(errorstat(source, "ASK"), asked_before)
        finally:
            with source.client() as src, target.client() as dst:
                for c in (src, dst):
                    c.call("CLUSTER", "SETSLOT", slot, "STABLE")
        r = self.rl(self.two(), "--json", "acquire", "-n", "--ttl", "5s", name)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.rl(self.two(), "release", "--token", r.json()["token"], name).code, 0)

    def test_one_cluster_counted_twice_is_refused(self):
        nodes = self.cluster.nodes
        other_seeds = "cluster://%s,%s" % (nodes[3].address, nodes[4].address)
        for servers in ("%s,%s" % (self.cluster.url(), other_seeds),                  # one cluster, two seed lists
                        # a node that is no seed, found in the map; beside a standalone server, so that
                        # the outcome waits for the cluster's answer, whatever the node answers itself
                        "%s,redis://%s,%s" % (self.cluster.url(), nodes[5].address, self.plain[0].url),
                        "%s,redis://%s" % (self.cluster.url(), nodes[0].address)):    # a seed
            r = self.rl(servers, "acquire", "--ttl", "2s", "cl-twice")
            self.assertEqual(r.code, 78, (servers, r))
            self.assertIn("twice", r.stderr)
        self.assertIsNone(self.cluster.owner("cl-twice")[0].get("cl-twice"))

    def test_a_standalone_server_listed_as_a_cluster_is_a_configuration_error(self):
        r = self.rl("cluster://%s,%s" % (self.plain[1].address, self.cluster.nodes[0].address), "acquire", "cl-std")
        self.assertEqual(r.code, 78, r)
        self.assertIn("no cluster node", r.stderr)

    def test_a_wrong_password_on_every_node_is_not_waited_out(self):
        # As for a standalone server: a wait cannot cure it, so acquire and run (waiting for ever
        # by default) end at once with 69, where they waited for ever.
        guarded = Server(self.workdir, 9, ("--requirepass", "s3cr3t-pw")).start()
        try:
            for args in (["acquire", "cl-auth"], ["run", "cl-auth", "--", "true"]):
                for url in ("cluster://:wrong-pw@%s" % guarded.address, "cluster://%s" % guarded.address):
                    t0 = time.monotonic()
                    r = redlock(["-S", url] + args, env=ENV, timeout=20)
                    self.assertEqual(r.code, 69, r)
                    self.assertLess(time.monotonic() - t0, 5, r)
                    self.assertRegex(r.stderr, "AUTH refused|NOAUTH")
                    self.assertNotIn("wrong-pw", r.stderr)
        finally:
            guarded.kill()


if __name__ == "__main__":
    main()
