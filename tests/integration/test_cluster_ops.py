"""`list` and `doctor` with a Redis Cluster as one quorum member, beside standalone servers.

`list` walks every master the cluster's slot map names and reads each lock found from the master
that owns its slot: that master's answer is the member's vote. `doctor` runs its per-server checks
on every master of the cluster, each reported as a node of the member, counts the member once for
the quorum, and checks `cluster_state:ok` (CLUSTER INFO) and, with `--member-wait`, the replicas.

One 3-master cluster without replicas (3 redis-server --cluster-enabled yes) and 2 standalone
servers; a lone cluster node that serves a few slots only (cluster_state:fail) for the failing
check. All on free loopback ports."""

import time

from harness import Server, free_port, main, redlock, wait_for
from test_cluster import ClusterBesideTwo

ENV = {"REDLOCK_TIMEOUT": "1s"}


def names_on_each_master(cluster, count, prefix="ops-"):
    """COUNT names for each master of CLUSTER, whose lock keys hash to that master's slots."""
    with cluster.nodes[0].client() as c:
        slots = c.call("CLUSTER", "SLOTS")
        by_master = {}
        k = 0
        while any(len(by_master.get(int(r[2][1]), [])) < count for r in slots) and k < 10000:
            name = "%s%d" % (prefix, k)
            slot = c.call("CLUSTER", "KEYSLOT", name)
            port = next(int(r[2][1]) for r in slots if r[0] <= slot <= r[1])
            if len(by_master.setdefault(port, [])) < count:
                by_master[port].append(name)
            k += 1
    return by_master


class ClusterOps(ClusterBesideTwo):
    cluster_options = {"masters": 3, "replicas": 0}

    def setUp(self):
        for n in [self.plain[0], self.plain[1]] + [self.cluster.node(p) for p in self.cluster.masters()]:
            with n.client() as c:
                c.call("FLUSHALL")

    def three(self):
        return "%s,redis://%s,redis://%s" % (self.cluster.url(), self.plain[0].address, self.plain[1].address)

    def rl(self, servers, *args):
        return redlock(list(args), servers=servers, env=ENV)

    def on_every_member(self, servers, name, token, nodes):
        """An acquire ends once a quorum has voted, and a member not waited for may never have been
        sent its vote (a cluster still reading its slot map): `extend` puts the lock back wherever it
        is missing, as a renewal does."""
        for _ in range(3):
            try:
                for node in nodes:
                    wait_for(lambda: node.get(name) == token.encode(), timeout=1, what="every vote")
                return
            except AssertionError:
                r = self.rl(servers, "extend", "--token", token, "--ttl", "30s", name)
                self.assertEqual(r.code, 0, r)
        self.fail("%s is not on every member after three extends" % name)

    def test_list_shows_a_lock_held_through_the_cluster_member(self):
        name = "ops-held"
        r = self.rl(self.three(), "--json", "acquire", "--ttl", "30s", "--owner", "tester", name)
        self.assertEqual(r.code, 0, r)
        token = r.json()["token"]
        owner, _ = self.cluster.owner(name)
        self.on_every_member(self.three(), name, token, [owner] + self.plain)
        # The cluster's vote alone is missing on one standalone server: 2 of 3 still hold it.
        with self.plain[1].client() as c:
            c.call("DEL", name)
        r = self.rl(self.three(), "--json", "list")
        self.assertEqual(r.code, 0, r)
        j = r.json()
        self.assertEqual(j["quorum"], {"needed": 2, "ok": 3, "total": 3})
        self.assertEqual([lock["name"] for lock in j["locks"]], [name])
        lock = j["locks"][0]
        self.assertEqual((lock["state"], lock["token"], lock["owner"]), ("held", token, "tester"), lock)
        self.assertEqual(lock["servers_held"], 2, lock)
        entry = j["servers"][0]
        self.assertEqual(entry["member"], self.cluster.url())
        self.assertTrue(entry["ok"], entry)
        self.assertEqual(entry["role"], "master", entry)
        self.assertIn(entry["resolved"], [self.cluster.node(p).address for p in self.cluster.masters()], entry)
        # Without the cluster's vote (the key gone from its owning master), one server holds it:
        # a quorum holds nothing, so it is free, as status says.
        with owner.client() as c:
            c.call("DEL", name)
        r = self.rl(self.three(), "--json", "list")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.json()["locks"][0]["servers_held"], 1, r.json())
        self.assertEqual(r.json()["locks"][0]["state"], "free", r.json())

    def test_list_finds_locks_on_every_master(self):
        by_master = names_on_each_master(self.cluster, 2)
        self.assertEqual(len(by_master), 3, by_master)
        names = sorted(n for ns in by_master.values() for n in ns)
        tokens = {}
        for name in names:
            r = self.rl(self.three(), "acquire", "--ttl", "30s", name)
            self.assertEqual(r.code, 0, r)
            tokens[name] = r.stdout.strip()
        for port, ns in by_master.items():
            for name in ns:
                self.on_every_member(self.three(), name, tokens[name], [self.cluster.node(port)] + self.plain)
        r = self.rl(self.three(), "--json", "list", "ops-*")
        self.assertEqual(r.code, 0, r)
        locks = r.json()["locks"]
        self.assertEqual([lock["name"] for lock in locks], names)
        for lock in locks:
            self.assertEqual((lock["state"], lock["token"], lock["servers_held"]),
                             ("held", tokens[lock["name"]], 3), lock)
        # The plain table too: one row per lock, held on 3 of 3.
        r = self.rl(self.three(), "list", "ops-*")
        self.assertEqual(r.code, 0, r)
        rows = r.stdout.splitlines()[1:]
        self.assertEqual(len(rows), len(names), r.stdout)
        self.assertTrue(all(row.split()[-1] == "3/3" for row in rows), r.stdout)

    def test_a_key_on_a_master_that_does_not_own_its_slot_counts_for_nothing(self):
        by_master = names_on_each_master(self.cluster, 1, prefix="stray-")
        ports = sorted(by_master)
        name = by_master[ports[0]][0]
        owner, stray = self.cluster.node(ports[0]), self.cluster.node(ports[1])
        # Planted on a master that does not own its slot, as a slot migration left half done would
        # leave it: IMPORTING lets an ASKING client write there, STABLE ends it.
        with owner.client() as c:
            owner_id = c.call("CLUSTER", "MYID")
        with stray.client() as c:
            slot = c.call("CLUSTER", "KEYSLOT", name)
            c.call("CLUSTER", "SETSLOT", slot, "IMPORTING", owner_id)
            c.call("ASKING")
            c.call("SET", name, "stray-token", "PX", "30000")
            c.call("CLUSTER", "SETSLOT", slot, "STABLE")
            self.assertEqual(c.call("CLUSTER", "COUNTKEYSINSLOT", slot), 1)
        r = self.rl(self.three(), "--json", "list", "stray-*")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.json()["locks"], [], r.json())
        # Beside the same lock on both standalone servers: held on those two, not on the cluster.
        for s in self.plain:
            with s.client() as c:
                c.call("SET", name, "stray-token", "PX", "30000")
        r = self.rl(self.three(), "--json", "list", "stray-*")
        self.assertEqual(r.code, 0, r)
        lock = r.json()["locks"][0]
        self.assertEqual((lock["name"], lock["state"], lock["servers_held"]), (name, "held", 2), lock)

    def doctor(self, servers, *args):
        r = self.rl(servers, "--json", "doctor", *args)
        self.assertIn(r.code, (0, 1), r)
        j = r.json()
        self.assertEqual(j["exit_status"], r.code, j)
        return r, j, {c["check"]: c for c in j["checks"]}

    def test_doctor_checks_every_master_and_counts_the_member_once(self):
        r, j, checks = self.doctor(self.three())
        self.assertEqual(j["quorum"], {"needed": 2, "ok": 3, "total": 3}, j["quorum"])
        masters = [self.cluster.node(p).address for p in self.cluster.masters()]
        nodes = [s for s in j["servers"] if s["member"] == self.cluster.url()]
        self.assertEqual(sorted(s["resolved"] for s in nodes), sorted(masters), j["servers"])
        for s in nodes:
            self.assertEqual((s["reachable"], s["role"], s["cluster_state"]), (True, "master", "ok"), s)
        others = [s for s in j["servers"] if s["member"] != self.cluster.url()]
        self.assertEqual([s["resolved"] for s in others], [None, None], others)
        self.assertEqual(checks["cluster"]["verdict"], "ok", checks["cluster"])
        self.assertIn("cluster_state:ok", checks["cluster"]["summary"])
        self.assertEqual(checks["reachable"]["verdict"], "ok", checks["reachable"])
        self.assertEqual(checks["distinct"]["verdict"], "ok", checks["distinct"])
        self.assertEqual(checks["master"]["verdict"], "ok", checks["master"])
        self.assertEqual(checks["member-wait"]["verdict"], "ok", checks["member-wait"])
        # Every master ran the probe (a key of its own slots): the ACL check found nothing refused.
        self.assertEqual(checks["acl"]["verdict"], "ok", checks["acl"])
        # The plain report names every master.
        r = self.rl(self.three(), "doctor")
        self.assertIn(r.code, (0, 1), r)
        self.assertIn("3 servers, a quorum is 2", r.stdout)
        for address in masters:
            self.assertIn(address, r.stdout)
        # No probe key left on any node.
        for port in self.cluster.masters():
            self.assertEqual(self.cluster.keys_on(self.cluster.node(port), "*redlock-doctor*"), [])

    def test_doctor_fails_member_wait_without_the_replicas_it_names(self):
        r, j, checks = self.doctor(self.three(), "--member-wait", "1")
        self.assertEqual(r.code, 1, r)
        c = checks["member-wait"]
        self.assertEqual(c["verdict"], "fail", c)
        self.assertEqual(sorted(n["resolved"] for n in c["servers"]),
                         sorted(self.cluster.node(p).address for p in self.cluster.masters()), c)

    def test_doctor_with_a_cluster_that_is_not_ok(self):
        # A lone cluster node that serves a few slots only: cluster_state:fail at once.
        node = Server(self.workdir, 50, ("--cluster-enabled", "yes", "--cluster-config-file", "lone.conf",
                                        "--cluster-port", str(free_port()))).start()
        self.addCleanup(node.kill)
        with node.client() as c:
            c.call("CLUSTER", "ADDSLOTSRANGE", "0", "99")
        servers = "cluster://%s,redis://%s,redis://%s" % (node.address, self.plain[0].address, self.plain[1].address)
        r, j, checks = self.doctor(servers)
        self.assertEqual(r.code, 1, r)
        c = checks["cluster"]
        self.assertEqual(c["verdict"], "fail", c)
        self.assertEqual([(n["member"], n["resolved"]) for n in c["servers"]],
                         [("cluster://" + node.address, node.address)], c)
        self.assertIn("cluster_state:fail", c["servers"][0]["detail"])
        # The probe's CLUSTERDOWN says what state the cluster is in, not what the ACL refuses.
        self.assertEqual(checks["acl"]["verdict"], "unknown", checks["acl"])
        self.assertEqual([s["acl_denied"] for s in j["servers"] if s["resolved"] == node.address], [[]], j["servers"])
        # A wait outlasts a cluster that is down, as it does a server that is: it may come back.
        with node.client() as c:
            name = next(n for n in ("ops-down-%d" % k for k in range(5000)) if c.call("CLUSTER", "KEYSLOT", n) < 100)
        started = time.monotonic()
        r = self.rl("cluster://" + node.address, "--json", "acquire", "-w", "1s", name)
        self.assertEqual((r.code, r.json()["reason"]), (69, "no_quorum"), r)
        self.assertGreater(time.monotonic() - started, 0.9)
        self.assertIn("CLUSTERDOWN", r.json()["message"])
        # A standalone URL of a cluster node still fails the check, as before.
        r, j, checks = self.doctor("redis://%s,redis://%s,redis://%s" % (
            node.address, self.plain[0].address, self.plain[1].address))
        self.assertEqual(checks["cluster"]["verdict"], "fail", checks["cluster"])
        self.assertIn("cluster_enabled:1", checks["cluster"]["servers"][0]["detail"])

    def test_a_lone_node_that_names_itself_with_an_empty_host(self):
        # A node that has never met another does not know its own address: CLUSTER SLOTS names it
        # with an empty host, which means the host the question was sent to.
        node = Server(self.workdir, 51, ("--cluster-enabled", "yes", "--cluster-config-file", "alone.conf",
                                        "--cluster-port", str(free_port()))).start()
        self.addCleanup(node.kill)
        with node.client() as c:
            try:
                c.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
            except Exception as e:  # noqa: BLE001 (Redis < 7)
                self.skipTest("CLUSTER ADDSLOTSRANGE refused: %s" % e)
            host = c.call("CLUSTER", "SLOTS")[0][2][0]
            if host not in (b"", "", None):
                self.skipTest("this Redis names a lone node %r in CLUSTER SLOTS, not an empty host" % host)
            wait_for(lambda: b"cluster_state:ok" in c.call("CLUSTER", "INFO"), timeout=5, what="cluster_state:ok")
        servers = "cluster://%s,redis://%s,redis://%s" % (node.address, self.plain[0].address, self.plain[1].address)
        name = "ops-lone"
        r = self.rl(servers, "--json", "acquire", "--ttl", "30s", name)
        self.assertEqual(r.code, 0, r)
        token = r.json()["token"]
        self.on_every_member(servers, name, token, [node] + self.plain)
        r = self.rl(servers, "--json", "status", name)
        self.assertEqual((r.code, r.json()["state"]), (0, "held"), r)
        r = self.rl(servers, "--json", "list")
        self.assertEqual(r.code, 0, r)
        self.assertEqual([(lock["name"], lock["servers_held"]) for lock in r.json()["locks"]], [(name, 3)], r.json())
        r, j, checks = self.doctor(servers)
        self.assertEqual(checks["reachable"]["verdict"], "ok", checks["reachable"])
        nodes = [s for s in j["servers"] if s["member"] == "cluster://" + node.address]
        self.assertEqual([(s["resolved"], s["reachable"]) for s in nodes], [(node.address, True)], j["servers"])
        r = self.rl(servers, "--json", "release", "--token", token, name)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.json()["servers"][0]["resolved"], node.address, r.json())
        self.assertIsNone(node.get(name))


if __name__ == "__main__":
    main()
