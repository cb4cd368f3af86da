"""`redlock doctor` against real servers: healthy ones, a frozen one, persistence settings, a
quorum down, an ACL user that may not do everything, one server under two addresses, and the probe
key that must not stay behind."""

import os
import time

from harness import ClusterTest, Server, free_port, main, redlock, settle

CHECKS = ["reachable", "fault-tolerance", "master", "distinct", "persistence", "clock", "uptime", "acl", "fences",
          "latency", "cluster", "eviction", "member-wait", "sentinel"]
ALWAYS = ("--appendonly", "yes", "--appendfsync", "always")


def checks_of(result):
    return {c["check"]: c for c in result.json()["checks"]}


def keys_everywhere(cluster):
    out = []
    for s in cluster.servers:
        if s.stopped or s.proc.poll() is not None:
            continue
        with s.client() as c:
            out += c.call("KEYS", "*")
    return out


class Healthy(ClusterTest):
    EXTRA = ALWAYS

    def test_fit_servers_pass_every_check_and_exit_0(self):
        r = self.rl("--timeout", "2s", "--json", "doctor", "--ttl", "1h")
        self.assertEqual(r.code, 0, r)
        j = r.json()
        self.assertEqual(list(j)[:2], ["version", "command"])
        self.assertEqual((j["version"], j["command"]), (1, "doctor"))
        self.assertEqual(j["verdict"], "fit")
        self.assertEqual([c["check"] for c in j["checks"]], CHECKS)
        for c in j["checks"]:
            self.assertEqual(c["verdict"], "ok", c)
        self.assertEqual(j["quorum"], {"needed": 3, "ok": 5, "total": 5})
        self.assertEqual(j["ttl_ms"], 3600000)
        self.assertEqual(len(j["servers"]), 5)
        for s in j["servers"]:
            self.assertTrue(s["reachable"])
            self.assertEqual(s["role"], "master")
            self.assertTrue(s["aof_enabled"])
            self.assertEqual(s["appendfsync"], "always")
            self.assertEqual(s["acl_denied"], [])
            self.assertRegex(s["run_id"], r"^[0-9a-f]{40}$")
        self.assertEqual(len({s["run_id"] for s in j["servers"]}), 5)
        self.assertLess(j["clock_skew_ms"], 50)

    def test_plain_output_has_a_verdict_per_check(self):
        r = self.rl("--timeout", "2s", "doctor")
        self.assertEqual(r.code, 0, r)
        lines = r.stdout.splitlines()
        for name in CHECKS:
            self.assertTrue(any(l.split()[:2] == ["ok", name] for l in lines if l.split()), (name, r.stdout))
        self.assertEqual(lines[-1], "verdict: fit (exit 0)")
        self.assertEqual(r.stderr, "")

    def test_the_probe_key_is_not_left_behind(self):
        r = self.rl("--timeout", "2s", "--prefix", "app:", "--json", "doctor")
        self.assertEqual(r.code, 0, r)
        probe = r.json()["probe_key"]
        self.assertRegex(probe, r"^app:redlock-doctor:[0-9a-f]{32}$")
        # Nothing under any name: not the key, not its owner record, not a fencing counter.
        self.assertEqual(keys_everywhere(self.cluster), [])

    def test_the_fencing_counters_under_the_prefix_are_counted(self):
        for name in ("build-1", "build-2", "{build}-3"):
            token = self.rl("--prefix", "app:", "acquire", name).stdout.strip()
            self.assertEqual(self.rl("--prefix", "app:", "release", name, "--token", token).code, 0)
        self.assertEqual(self.rl("--prefix", "other:", "acquire", "build-1").code, 0)
        self.assertEqual(self.rl("acquire", "app-lookalike").code, 0)
        r = self.rl("--timeout", "2s", "--prefix", "app:", "--json", "doctor")
        self.assertEqual(r.code, 0, r)
        for s in r.json()["servers"]:
            self.assertEqual((s["fence_keys"], s["fence_keys_complete"]), (3, True), s)
        fences = checks_of(r)["fences"]
        self.assertEqual(fences["verdict"], "ok")
        self.assertTrue(fences["summary"].startswith("3 fencing counters under the prefix 'app:'"), fences)
        plain = self.rl("--timeout", "2s", "--prefix", "app:", "doctor")
        self.assertIn("3 fencing counters", plain.stdout)
        # Without a prefix, every one.
        for s in self.rl("--timeout", "2s", "--json", "doctor").json()["servers"]:
            self.assertEqual(s["fence_keys"], 5)

    def test_an_empty_script_cache_changes_nothing(self):
        # After a restart or SCRIPT FLUSH the probe runs in the same order (a NOSCRIPT retried at
        # the end of the pipeline would come after the clean-up): fit, and nothing left behind.
        for attempt in range(4):
            for s in self.cluster.servers:
                with s.client() as c:
                    c.call("SCRIPT", "FLUSH")
            r = self.rl("--timeout", "2s", "--json", "doctor")
            self.assertEqual(r.code, 0, (attempt, r))
            self.assertEqual(keys_everywhere(self.cluster), [], attempt)

    def test_the_probe_does_not_touch_existing_locks(self):
        token = self.rl("acquire", "job", "--ttl", "20s").stdout.strip()
        self.assertEqual(self.rl("--timeout", "2s", "doctor").code, 0)
        self.assertEqual(self.cluster.values("job"), [token.encode()] * 5)

    def test_one_frozen_server_is_a_warning_that_costs_one_timeout(self):
        self.cluster.servers[2].freeze()
        start = time.monotonic()
        r = self.rl("--timeout", "300ms", "--json", "doctor")
        self.assertLess(time.monotonic() - start, 1.5, r)
        self.assertEqual(r.code, 1, r)
        j = r.json()
        self.assertEqual(j["verdict"], "warnings")
        self.assertEqual(j["quorum"]["ok"], 4)
        reachable = checks_of(r)["reachable"]
        self.assertEqual(reachable["verdict"], "warn")
        self.assertEqual([n["server"] for n in reachable["servers"]], [self.cluster.servers[2].url])
        self.assertIn("timeout", reachable["servers"][0]["detail"])
        frozen = j["servers"][2]
        self.assertFalse(frozen["reachable"])
        self.assertIsNone(frozen["role"])
        # The others were checked in full.
        self.assertEqual(checks_of(r)["acl"]["verdict"], "ok")
        self.cluster.servers[2].thaw()
        self.assertEqual(settle(lambda: keys_everywhere(self.cluster), []), [])

    def test_three_of_five_down_is_69(self):
        for i in (0, 1, 3):
            self.cluster.servers[i].kill()
        r = self.rl("--timeout", "300ms", "--json", "doctor")
        self.assertEqual(r.code, 69, r)
        j = r.json()
        self.assertEqual(j["verdict"], "no_quorum")
        self.assertEqual(j["quorum"], {"needed": 3, "ok": 2, "total": 5})
        self.assertEqual(checks_of(r)["reachable"]["verdict"], "fail")
        plain = self.rl("--timeout", "300ms", "doctor")
        self.assertEqual(plain.code, 69, plain)
        self.assertIn("redlock: error: no quorum: 2 of 5 servers answered", plain.stderr)
        self.assertTrue(plain.stdout.rstrip().endswith("verdict: no quorum (exit 69)"), plain.stdout)
        # Each dead server's reason once, in the transport's words.
        for i in (0, 1, 3):
            self.assertIn("- %s: connect: Connection refused\n" % self.cluster.servers[i].url, plain.stdout)
        self.assertNotIn("connect: connect", plain.stdout)


class FaultTolerance(ClusterTest):
    N = 4
    EXTRA = ALWAYS

    def doctor(self, n):
        spec = ",".join(s.address for s in self.cluster.servers[:n])
        return redlock(["--timeout", "2s", "--json", "doctor", "--ttl", "1s"], servers=spec)

    def test_one_two_or_four_servers_warn_three_are_fit(self):
        for n, code in ((1, 1), (2, 1), (3, 0), (4, 1)):
            r = self.doctor(n)
            self.assertEqual(r.code, code, (n, r))
            c = checks_of(r)
            self.assertEqual(c["fault-tolerance"]["verdict"], "ok" if code == 0 else "warn", (n, r))
            # Nothing else is wrong with these servers.
            self.assertEqual([name for name in c if c[name]["verdict"] != "ok"],
                             [] if code == 0 else ["fault-tolerance"], (n, r))
        self.assertIn("tolerates 1 failed server", checks_of(self.doctor(3))["fault-tolerance"]["summary"])
        two = checks_of(self.doctor(2))["fault-tolerance"]
        self.assertIn("losing any one stops every lock", two["summary"])
        self.assertIn("odd number", two["advice"])
        four = checks_of(self.doctor(4))["fault-tolerance"]
        self.assertIn("tolerates 1 failed server, no more than 3 servers would", four["summary"])
        plain = redlock(["--timeout", "2s", "doctor", "--ttl", "1s"], servers=self.cluster.servers[0].address)
        self.assertEqual(plain.code, 1, plain)
        self.assertIn("warn     fault-tolerance 1 server, a quorum of 1", plain.stdout)
        self.assertTrue(plain.stdout.rstrip().endswith("verdict: warnings (exit 1)"), plain.stdout)


class ReplicaListed(ClusterTest):
    N = 3
    EXTRA = ALWAYS

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.cluster.replicate(2, 0)

    def test_a_replica_fails_the_master_check_and_has_no_vote(self):
        r = self.rl("--timeout", "2s", "--json", "doctor", "--ttl", "1s")
        self.assertEqual(r.code, 1, r)
        c = checks_of(r)
        self.assertEqual(c["master"]["verdict"], "fail")
        notes = {n["server"]: n for n in c["master"]["servers"]}
        replica, master = self.cluster.servers[2], self.cluster.servers[0]
        self.assertEqual(notes[replica.url]["verdict"], "fail")
        self.assertEqual(notes[replica.url]["detail"], "a replica of %s" % master.address)
        self.assertEqual(notes[master.url]["detail"], "a master with 1 replica")
        # Reachable, but no vote: the quorum rests on the two masters.
        self.assertEqual(r.json()["quorum"], {"needed": 2, "ok": 2, "total": 3})
        self.assertEqual(c["reachable"]["verdict"], "warn")
        self.assertEqual([n["detail"] for n in c["reachable"]["servers"]], ["a replica: it never counts as a vote"])
        self.assertEqual(r.json()["servers"][2]["role"], "slave")
        self.assertEqual(r.json()["verdict"], "warnings")


class NotStandaloneOrEvicting(ClusterTest):
    N = 3
    EXTRA = ALWAYS

    def test_a_server_that_may_evict_fails_eviction(self):
        server = self.cluster.servers[1]
        with server.client() as c:
            c.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
            c.call("CONFIG", "SET", "maxmemory", "100mb")
        self.addCleanup(lambda: server.client().call("CONFIG", "SET", "maxmemory-policy", "noeviction", "maxmemory", "0"))
        r = self.rl("--timeout", "2s", "--json", "doctor", "--ttl", "1s")
        self.assertEqual(r.code, 1, r)
        c = checks_of(r)["eviction"]
        self.assertEqual(c["verdict"], "fail", c)
        self.assertEqual([n["server"] for n in c["servers"]], [server.url])
        self.assertIn("allkeys-lru", c["servers"][0]["detail"])
        self.assertEqual(checks_of(r)["cluster"]["verdict"], "ok")

    def test_a_cluster_node_listed_as_a_master_fails_cluster(self):
        # The cluster bus on a free port of its own: port + 10000 may be taken, or past 65535.
        node = Server(self.cluster.workdir, 9, ("--cluster-enabled", "yes", "--cluster-port", str(free_port()),
                                                "--cluster-config-file", os.path.join(self.cluster.workdir, "nodes-9.conf")))
        node.start()
        self.addCleanup(node.kill)
        spec = ",".join([s.address for s in self.cluster.servers[:2]] + [node.address])
        r = redlock(["--timeout", "2s", "--json", "doctor", "--ttl", "1s"], servers=spec)
        self.assertEqual(r.code, 1, r)
        c = checks_of(r)["cluster"]
        self.assertEqual(c["verdict"], "fail", c)
        self.assertEqual([n["server"] for n in c["servers"]], [node.url])


class DefaultPersistence(ClusterTest):
    N = 3

    def test_without_fsync_always_persistence_and_uptime_warn(self):
        r = self.rl("--timeout", "2s", "--json", "doctor", "--ttl", "2h")
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.json()["verdict"], "warnings")
        c = checks_of(r)
        self.assertEqual(c["persistence"]["verdict"], "warn")
        self.assertEqual(len(c["persistence"]["servers"]), 3)
        self.assertIn("appendonly no", c["persistence"]["servers"][0]["detail"])
        self.assertIn("must stay out for the longest TTL (2h)", c["persistence"]["advice"])
        # Just started, no fsync: it may have forgotten locks.
        self.assertEqual(c["uptime"]["verdict"], "warn")
        for name in ("reachable", "master", "distinct", "acl"):
            self.assertEqual(c[name]["verdict"], "ok", c[name])

    def test_fsync_always_on_one_server_leaves_the_other_two_warned(self):
        with self.cluster.servers[0].client() as client:
            client.call("CONFIG", "SET", "appendonly", "yes")
            client.call("CONFIG", "SET", "appendfsync", "always")
        try:
            r = self.rl("--timeout", "2s", "--json", "doctor")
            self.assertEqual(r.code, 1, r)
            warned = [n["server"] for n in checks_of(r)["persistence"]["servers"]]
            self.assertEqual(warned, [s.url for s in self.cluster.servers[1:]])
            self.assertEqual(r.json()["servers"][0]["appendfsync"], "always")
        finally:
            with self.cluster.servers[0].client() as client:
                client.call("CONFIG", "SET", "appendonly", "no")

    def test_everysec_is_a_warning_too(self):
        for s in self.cluster.servers:
            with s.client() as client:
                client.call("CONFIG", "SET", "appendonly", "yes")
                client.call("CONFIG", "SET", "appendfsync", "everysec")
        try:
            r = self.rl("--timeout", "2s", "--json", "doctor")
            self.assertEqual(r.code, 1, r)
            notes = checks_of(r)["persistence"]["servers"]
            self.assertEqual(len(notes), 3)
            self.assertIn("appendfsync everysec", notes[0]["detail"])
        finally:
            for s in self.cluster.servers:
                with s.client() as client:
                    client.call("CONFIG", "SET", "appendonly", "no")


class RestrictedUser(ClusterTest):
    N = 3
    EXTRA = ALWAYS

    def setUp(self):
        super().setUp()
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("ACL", "SETUSER", "locker", "reset", "on", ">secret", "~*", "&*", "+@all", "-config")
        # Server 1 lets this user do everything but SUBSCRIBE.
        with self.cluster.servers[1].client() as c:
            c.call("ACL", "SETUSER", "locker", "-subscribe")

    def servers_as(self, user):
        return ",".join("redis://%s:secret@%s" % (user, s.address) for s in self.cluster.servers)

    def test_acl_refusals_fail_and_a_refused_config_is_unknown(self):
        r = redlock(["--timeout", "2s", "--json", "doctor"], servers=self.servers_as("locker"))
        self.assertEqual(r.code, 1, r)
        self.assertNotIn("secret", r.stdout + r.stderr)
        c = checks_of(r)
        self.assertEqual(c["acl"]["verdict"], "fail")
        self.assertEqual([n["server"] for n in c["acl"]["servers"]],
                         ["redis://locker:***@%s" % self.cluster.servers[1].address])
        self.assertIn("SUBSCRIBE", c["acl"]["servers"][0]["detail"])
        self.assertIn("NOPERM", r.json()["servers"][1]["acl_denied"][0])
        # appendonly yes, but appendfsync hidden behind CONFIG: unknown, not a failure.
        self.assertEqual(c["persistence"]["verdict"], "unknown")
        self.assertIsNone(r.json()["servers"][0]["appendfsync"])
        self.assertIn("appendfsync unknown", c["persistence"]["servers"][0]["detail"])
        self.assertEqual(keys_everywhere(self.cluster), [])


    def test_a_refused_scan_is_an_acl_failure(self):
        # list needs SCAN; the probe asks for it.
        with self.cluster.servers[0].client() as c:
            c.call("ACL", "SETUSER", "locker", "-scan")
        r = redlock(["--timeout", "2s", "--json", "doctor"], servers=self.servers_as("locker"))
        self.assertEqual(r.code, 1, r)
        details = {n["server"]: n["detail"] for n in checks_of(r)["acl"]["servers"]}
        self.assertIn("SCAN (list)", details["redis://locker:***@%s" % self.cluster.servers[0].address], details)
        self.assertEqual(keys_everywhere(self.cluster), [])

    def test_a_refused_evalsha_is_an_acl_failure(self):
        with self.cluster.servers[2].client() as c:
            c.call("ACL", "SETUSER", "locker", "-evalsha")
        r = redlock(["--timeout", "2s", "--json", "doctor"], servers=self.servers_as("locker"))
        self.assertEqual(r.code, 1, r)
        acl = checks_of(r)["acl"]
        self.assertEqual(acl["verdict"], "fail")
        details = {n["server"]: n["detail"] for n in acl["servers"]}
        self.assertIn("EVALSHA", details["redis://locker:***@%s" % self.cluster.servers[2].address], details)
        self.assertEqual(keys_everywhere(self.cluster), [])


    def test_a_refused_time_warns_that_counters_never_expire_and_a_refused_scan_is_unknown(self):
        with self.cluster.servers[0].client() as c:
            c.call("ACL", "SETUSER", "locker", "-time")
        with self.cluster.servers[2].client() as c:
            c.call("ACL", "SETUSER", "locker", "-scan")
        r = redlock(["--timeout", "2s", "--json", "doctor"], servers=self.servers_as("locker"))
        fences = checks_of(r)["fences"]
        self.assertEqual(fences["verdict"], "warn", fences)
        notes = {n["server"]: n for n in fences["servers"]}
        first, last = ("redis://locker:***@%s" % self.cluster.servers[i].address for i in (0, 2))
        self.assertEqual(notes[first]["detail"], "TIME refused: fencing counters never expire here")
        self.assertEqual(notes[last]["verdict"], "unknown")
        self.assertIn("+time", fences["advice"])
        self.assertIsNone(r.json()["servers"][2]["fence_keys"])
        # The lock itself still works there; that server's counter just has no expiry.
        token = redlock(["acquire", "job"], servers=self.servers_as("locker"))
        self.assertEqual(token.code, 0, token)
        self.assertEqual([s.pttl("{job}:redlock:fence") > 0 for s in self.cluster.servers], [False, True, True])


class SameServerTwice(ClusterTest):
    N = 2
    EXTRA = ("--bind", "127.0.0.1", "127.0.0.2")

    def test_one_server_under_two_addresses_fails_distinct(self):
        a, b = self.cluster.servers
        spec = "%s,127.0.0.2:%d,%s" % (a.address, a.port, b.address)
        r = redlock(["--timeout", "2s", "--json", "doctor"], servers=spec)
        self.assertEqual(r.code, 1, r)
        c = checks_of(r)
        self.assertEqual(c["distinct"]["verdict"], "fail")
        # Whichever of the two answered second is the one named.
        noted = [n["server"] for n in c["distinct"]["servers"]]
        self.assertEqual(len(noted), 1, noted)
        self.assertIn(noted[0], ["redis://127.0.0.1:%d" % a.port, "redis://127.0.0.2:%d" % a.port])
        self.assertEqual(sorted(s["duplicate"] for s in r.json()["servers"]), [False, False, True])
        self.assertFalse(r.json()["servers"][2]["duplicate"])


if __name__ == "__main__":
    main()
