"""A Redis Cluster whose nodes speak TLS only, as one member: `cluster+tls://N1,N2` takes the
slot map and the lock over TLS, verified against --tls-ca, beside a standalone server."""

import os
import shutil
import tempfile
import unittest

from harness import Pki, Server, TlsServer, main, redlock
from test_cluster import RedisCluster

ENV = {"REDLOCK_TIMEOUT": "2s"}


class ClusterOverTls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="redlock-cluster-tls-")
        cls.cluster, cls.plain = None, None
        try:
            pki = Pki(os.path.join(cls.workdir, "pki"))
            # The cluster bus asks every node for a client certificate: the nodes' is for both ends.
            cert, key = pki.server("node", ["IP:127.0.0.1"], usage="serverAuth,clientAuth")
            cls.ca = pki.ca_cert
            tls = ("--tls-cluster", "yes", "--tls-replication", "yes")

            def node(workdir, index, extra):
                return TlsServer(workdir, index, cert, key, cls.ca, extra=tuple(extra) + tls)
            cls.cluster = RedisCluster(cls.workdir, node, ("--tls", "--cacert", cls.ca))
            cls.plain = Server(cls.workdir, 0).start()
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.cluster:
            cls.cluster.stop()
        if cls.plain:
            cls.plain.kill()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def test_acquire_and_release_over_tls(self):
        servers = "%s,%s" % (self.cluster.url(scheme="cluster+tls"), self.plain.url)
        r = redlock(["--tls-ca", self.ca, "--json", "acquire", "-n", "--ttl", "10s", "cl-tls"], servers=servers, env=ENV)
        self.assertEqual(r.code, 0, r)
        entry = r.json()["servers"][0]
        owner, _ = self.cluster.owner("cl-tls")
        self.assertEqual(entry["member"], self.cluster.url(scheme="cluster+tls"))
        self.assertEqual(entry["resolved"], owner.address, entry)
        self.assertTrue(entry["ok"], entry)
        self.assertEqual(owner.get("cl-tls"), r.json()["token"].encode())
        r = redlock(["--tls-ca", self.ca, "release", "--token", r.json()["token"], "cl-tls"], servers=servers, env=ENV)
        self.assertEqual(r.code, 0, r)
        self.assertIsNone(owner.get("cl-tls"))

    def test_plain_connections_to_tls_nodes_fail(self):
        servers = "%s,%s" % (self.cluster.url(), self.plain.url)
        r = redlock(["--json", "acquire", "-n", "--ttl", "10s", "cl-tls-plain"], servers=servers, env=ENV)
        self.assertEqual(r.code, 69, r)


if __name__ == "__main__":
    main()
