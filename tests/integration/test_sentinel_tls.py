"""A Sentinel group that speaks TLS only as one member: `sentinel+tls://S1,S2,S3/NAME` asks the
sentinels for the master over TLS and takes the lock on the master over TLS, verified against
--tls-ca, beside a standalone server (two members, so the quorum needs the group's vote); the
sentinels' own password is sent over TLS too, never printed. `doctor`'s sentinel check reaches
them the same way; a plain sentinel:// to the same sentinels finds no master. A group whose servers
speak TLS only and whose sentinels listen in plain text is `sentinel+rediss://`: plain to the
sentinels, TLS to the master they name."""

import os
import shutil
import tempfile
import unittest

from harness import Pki, SentinelGroup, Server, main, redlock, wait_for

SECRET = "St-planted-5e0c17"
ENV = {"REDLOCK_TIMEOUT": "2s"}


class SentinelOverTls(unittest.TestCase):
    PLAIN_SENTINELS = False

    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="redlock-sentinel-tls-")
        cls.group, cls.plain = None, None
        try:
            pki = Pki(os.path.join(cls.workdir, "pki"))
            # Replicas and sentinels connect to each other with it: for both ends.
            cert, key = pki.server("node", ["IP:127.0.0.1"], usage="serverAuth,clientAuth")
            cls.ca = pki.ca_cert
            cls.group = SentinelGroup(cls.workdir, 0, sentinel_password=SECRET, tls=(cert, key, cls.ca),
                                      plain_sentinels=cls.PLAIN_SENTINELS)
            cls.plain = Server(cls.workdir, 90).start()
        except Exception:
            cls.tearDownClass()
            raise
        cls.password_file = cls.group.sentinel_password_file()

    @classmethod
    def tearDownClass(cls):
        if cls.group:
            cls.group.stop()
        if cls.plain:
            cls.plain.kill()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def rl(self, member, *args):
        r = redlock(["--tls-ca", self.ca] + list(args), servers="%s,%s" % (member, self.plain.url), env=ENV)
        self.assertNotIn(SECRET, r.stdout + r.stderr)
        return r

    def test_acquire_and_release_over_tls(self):
        member = self.group.url(self.password_file)
        self.assertTrue(member.startswith("sentinel+rediss://" if self.PLAIN_SENTINELS else "sentinel+tls://"), member)
        r = self.rl(member, "--json", "acquire", "-n", "--ttl", "10s", "st-tls")
        self.assertEqual(r.code, 0, r)
        token = r.json()["token"].encode()
        entry = r.json()["servers"][0]
        port = self.group.master_port()
        self.assertEqual(entry["member"], member)
        self.assertEqual((entry["resolved"], entry["role"], entry["ok"]), ("127.0.0.1:%d" % port, "master", True),
                         entry)
        # WAIT confirmed the replica (over TLS replication) has it before the vote counted.
        for s in self.group.servers:
            self.assertEqual(self.group.get(s.port, "st-tls"), token)
        r = self.rl(member, "release", "--token", token.decode(), "st-tls")
        self.assertEqual(r.code, 0, r)
        wait_for(lambda: self.group.get(port, "st-tls") is None, timeout=10, what="the lock released")

    def test_doctor_asks_the_sentinels_over_tls(self):
        r = self.rl(self.group.url(self.password_file), "--json", "doctor", "--ttl", "1s")
        self.assertIn(r.code, (0, 1), r)  # warnings: two members, nothing on disk
        check = next(c for c in r.json()["checks"] if c["check"] == "sentinel")
        self.assertEqual(check["verdict"], "ok", check)
        self.assertEqual(r.json()["servers"][0]["sentinels"]["answered"], 3, r.json()["servers"][0])

    def test_plain_connections_to_tls_sentinels_find_no_master(self):
        plain = self.group.url(self.password_file).replace("sentinel+tls://", "sentinel://")
        r = self.rl(plain, "--json", "acquire", "-n", "--ttl", "10s", "st-plain")
        self.assertEqual(r.code, 69, r)
        self.assertIn("no sentinel named the master", r.json()["servers"][0]["error"])


class SentinelInPlainTextMasterOverTls(SentinelOverTls):
    PLAIN_SENTINELS = True

    def test_plain_connections_to_tls_sentinels_find_no_master(self):
        self.skipTest("the sentinels listen in plain text")

    def test_a_master_that_speaks_tls_only_is_not_reached_in_plain_text(self):
        plain = self.group.url(self.password_file).replace("sentinel+rediss://", "sentinel://")
        r = self.rl(plain, "--json", "acquire", "-n", "--ttl", "10s", "st-plain-master")
        self.assertEqual(r.code, 69, r)
        entry = r.json()["servers"][0]
        self.assertFalse(entry["ok"], entry)
        self.assertNotIn("not found", entry["error"])  # the sentinels named it
        for s in self.group.servers:
            self.assertIsNone(self.group.get(s.port, "st-plain-master"))

    def test_tls_to_plain_sentinels_finds_no_master(self):
        tls = self.group.url(self.password_file).replace("sentinel+rediss://", "sentinel+tls://")
        r = self.rl(tls, "--json", "acquire", "-n", "--ttl", "10s", "st-tls-sentinels")
        self.assertEqual(r.code, 69, r)
        # A TLS hello to a plain-text sentinel is never answered: the member fails within --timeout.
        self.assertIn("the master m0 not found", r.json()["servers"][0]["error"])


if __name__ == "__main__":
    main()
