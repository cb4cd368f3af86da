"""rediss:// against real TLS-only redis-servers, with a CA, server and client certificates made by
the openssl command for this run: verification of the chain, the name and the dates by default,
client certificates, --tls-insecure, the REDLOCK_TLS_* variables, the per-server deadline over the
handshake, TLS and plain servers in one quorum, and no OpenSSL at all in a plain run."""

import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import unittest

from harness import Pki, Server, TlsServer, clean_env, main, redlock, redlock_binary, spawn, wait_for, wait_until_waiting

PASSWORD = "tls-Secret-6f1d2b"
WARNING = "--tls-insecure: server certificates are not verified"


class Listener:
    """A loopback TCP port that accepts connections and never says a word (not TLS, not anything),
    or, with CONTEXT, completes a TLS handshake and records the server name (SNI) each client sent."""

    def __init__(self, context=None):
        self.context = context
        self.names = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.held = []
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        deadline = time.monotonic() + 60
        while not self.stop_event.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.held.append(conn)
            if self.context is None:
                continue
            conn.settimeout(2)
            try:
                tls = self.context.wrap_socket(conn, server_side=True)
                self.held.append(tls)
            except (OSError, ssl.SSLError):
                pass

    def _sni(self, sslobj, name, ctx):
        self.names.append(name)

    def close(self):
        self.stop_event.set()
        self.thread.join(5)
        for c in self.held:
            c.close()
        self.sock.close()


class Tls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="redlock-tls-")
        cls.all = []
        try:
            cls.start_servers()
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def start_servers(cls):
        pki = Pki(os.path.join(cls.workdir, "pki"))
        cls.ca = pki.ca_cert
        cls.good = pki.server("localhost", ["DNS:localhost", "IP:127.0.0.1"])
        other = pki.server("other.example", ["DNS:other.example"])
        expired = pki.server("expired", ["DNS:localhost", "IP:127.0.0.1"], expired=True)
        cls.client_cert = pki.client("redlock-client")
        rogue = Pki(os.path.join(cls.workdir, "rogue"), "rogue-ca")
        cls.rogue_ca = rogue.ca_cert
        cls.rogue_client = rogue.client("rogue-client")
        w = cls.workdir
        cls.tls = [TlsServer(w, i, *cls.good, cls.ca) for i in range(3)]
        cls.plain = [Server(w, 3 + i) for i in range(2)]
        cls.other = TlsServer(w, 5, *other, cls.ca)
        cls.expired = TlsServer(w, 6, *expired, cls.ca)
        cls.mtls = TlsServer(w, 7, *cls.good, cls.ca, auth_clients=True, client_cert=cls.client_cert)
        # TLS 1.2 refuses a missing client certificate in the handshake, TLS 1.3 only after it.
        cls.mtls12 = TlsServer(w, 8, *cls.good, cls.ca, auth_clients=True, client_cert=cls.client_cert,
                               extra=["--tls-protocols", "TLSv1.2"])
        cls.secret = TlsServer(w, 9, *cls.good, cls.ca, extra=["--requirepass", PASSWORD])
        for s in cls.tls + cls.plain + [cls.other, cls.expired, cls.mtls, cls.mtls12, cls.secret]:
            cls.all.append(s)
            s.start()

    @classmethod
    def tearDownClass(cls):
        for s in cls.all:
            s.kill()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def setUp(self):
        for s in self.all:
            with s.client(password=PASSWORD if s is self.secret else None) as c:
                c.call("FLUSHALL")

    def rl(self, servers, *args, env=None):
        """Runs redlock on SERVERS (URLs or servers), with a generous --timeout unless ARGS give one."""
        spec = ",".join(s if isinstance(s, str) else s.url for s in servers)
        timeout = [] if "--timeout" in args else ["--timeout", "2s"]
        return redlock(timeout + list(args), servers=spec, env=env)

    def assertRefused(self, r, *words):
        """Exit 69, and every one of WORDS in what it printed (status shows the reasons on stdout)."""
        self.assertEqual(r.code, 69, r)
        for w in words:
            self.assertIn(w, r.stdout + r.stderr, r)

    def assertHeldByQuorum(self, servers, token):
        # Not necessarily all: a server that had not answered when a quorum decided may still be
        # running the request, or (its script cache empty) drop an abandoned attempt.
        wait_for(lambda: sum(s.get("job") == token.encode() for s in servers) >= len(servers) // 2 + 1,
                 timeout=5, what="the token on a quorum")

    # --- verification by default -------------------------------------------------------------

    def test_acquire_status_release_over_tls_with_the_ca(self):
        r = self.rl(self.tls, "--tls-ca", self.ca, "--json", "acquire", "job", "--ttl", "20s")
        self.assertEqual(r.code, 0, r)
        j = r.json()
        # The answer comes with the quorum; a slower server may still be reported "not_waited_for".
        self.assertGreaterEqual([s["result"] for s in j["servers"]].count("locked"), 2, j)
        self.assertTrue(all(s["server"].startswith("rediss://127.0.0.1:") for s in j["servers"]), j)
        self.assertHeldByQuorum(self.tls, j["token"])
        st = self.rl(self.tls, "--tls-ca", self.ca, "--json", "status", "job")
        self.assertEqual(st.code, 0, st)
        self.assertEqual(st.json()["state"], "held")
        self.assertEqual(self.rl(self.tls, "--tls-ca", self.ca, "extend", "job", "--token", j["token"]).code, 0)
        rel = self.rl(self.tls, "--tls-ca", self.ca, "release", "job", "--token", j["token"])
        self.assertEqual(rel.code, 0, rel)
        self.assertEqual([s.get("job") for s in self.tls], [None] * 3)

    def test_an_unknown_ca_is_refused_and_says_why(self):
        for extra in ([], ["--tls-ca", self.rogue_ca]):
            r = self.rl(self.tls[:1], *extra, "acquire", "job")
            self.assertRefused(r, "certificate verification failed", "--tls-ca")
            self.assertRegex(r.stderr, "self-signed certificate in certificate chain|unable to get local issuer")
            self.assertIn("not signed by a CA we trust", r.stderr)
        j = self.rl(self.tls, "--json", "acquire", "job").json()
        self.assertEqual(j["reason"], "no_quorum")
        # Two refusals decide it; the third may not have answered by then.
        results = [s["result"] for s in j["servers"]]
        self.assertGreaterEqual(results.count("tls"), 2, j)
        self.assertNotIn("locked", results)
        self.assertIn("not signed by a CA we trust", [s for s in j["servers"] if s["result"] == "tls"][0]["error"])
        self.assertEqual([s.get("job") for s in self.tls], [None] * 3)

    def test_a_certificate_for_another_name_is_refused_unless_that_name_is_given(self):
        r = self.rl([self.other], "--tls-ca", self.ca, "status", "job")
        self.assertRefused(r, "IP address mismatch", "--tls-server-name")
        r = self.rl(["rediss://localhost:%d" % self.other.port], "--tls-ca", self.ca, "status", "job")
        self.assertRefused(r, "hostname mismatch", "--tls-server-name")
        for url in (self.other.url, "rediss://localhost:%d" % self.other.port):
            r = self.rl([url], "--tls-ca", self.ca, "--tls-server-name", "other.example", "status", "job")
            self.assertEqual(r.code, 1, r)  # answered: free
        # And the other way round: a name the certificate does not have is refused.
        r = self.rl(self.tls[:1], "--tls-ca", self.ca, "--tls-server-name", "other.example", "status", "job")
        self.assertRefused(r, "hostname mismatch")

    def test_one_tls_server_twice_is_refused_and_the_name_is_part_of_the_endpoint(self):
        s = self.tls[0]
        twice = [s.url, "rediss://localhost:%d" % s.port, self.tls[1]]
        # Verified as the same name: one endpoint, caught at connect.
        r = self.rl(twice, "--tls-ca", self.ca, "--tls-server-name", "localhost", "status", "job")
        self.assertEqual(r.code, 78, r)
        self.assertIn("both reach 127.0.0.1:%d as localhost" % s.port, r.stderr)
        # Under two names (an SNI router may send them to two servers): INFO's run_id tells.
        r = self.rl(twice, "--tls-ca", self.ca, "status", "job")
        self.assertEqual(r.code, 78, r)
        self.assertIn("run_id", r.stderr)

    def test_an_expired_certificate_is_refused_as_expired(self):
        r = self.rl([self.expired], "--tls-ca", self.ca, "acquire", "job")
        self.assertRefused(r, "certificate has expired")

    def test_client_certificates(self):
        for server in (self.mtls, self.mtls12):
            without = self.rl([server], "--tls-ca", self.ca, "--json", "acquire", "job")
            self.assertEqual(without.code, 69, without)
            error = without.json()["servers"][0]["error"]
            self.assertRegex(error, "certificate required|handshake failure|--tls-cert", without)
            r = self.rl([server], "--tls-ca", self.ca, "--tls-cert", self.client_cert[0], "--tls-key",
                        self.client_cert[1], "acquire", "job")
            self.assertEqual(r.code, 0, r)
            rogue = self.rl([server], "--tls-ca", self.ca, "--tls-cert", self.rogue_client[0], "--tls-key",
                            self.rogue_client[1], "status", "job")
            self.assertEqual(rogue.code, 69, rogue)
            # The alert, or (when the server's reset overtook it) the hint about certificates.
            self.assertRegex(rogue.stdout, "unknown ca|refuse the one we sent", rogue)

    def test_unloadable_certificate_files_are_configuration_errors(self):
        missing = os.path.join(self.workdir, "missing.pem")
        for args in (["--tls-ca", missing], ["--tls-cert", missing, "--tls-key", missing],
                     ["--tls-cert", self.client_cert[0], "--tls-key", self.good[1]]):
            r = self.rl(self.tls[:1], *args, "status", "job")
            self.assertEqual(r.code, 78, (args, r))
            self.assertIn("--tls-", r.stderr)
        # A certificate without its key, and no --tls-key: said so, not blamed on --tls-key.
        r = self.rl(self.tls[:1], "--tls-ca", self.ca, "--tls-cert", self.client_cert[0], "status", "job")
        self.assertEqual((r.code, r.stderr.splitlines()),
                         (78, ["redlock: error: --tls-cert '%s' holds no private key; give it with --tls-key"
                               % self.client_cert[0]]), r)

    def test_insecure_works_without_verification_and_warns_every_time(self):
        servers = [self.other, self.expired, self.tls[0]]
        for _ in range(2):
            r = self.rl(servers, "--tls-insecure", "--json", "acquire", "-n", "job")
            self.assertEqual(r.code, 0, r)
            self.assertIn(WARNING, r.stderr)
            self.assertTrue(r.json()["acquired"])
            r = self.rl(servers, "--tls-insecure", "release", "job", "--token", r.json()["token"])
            self.assertEqual(r.code, 0, r)
            self.assertIn(WARNING, r.stderr)
        r = self.rl(self.tls[:1], "--tls-insecure", "--json", "status", "job")
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.json()["state"], "free")
        self.assertIn(WARNING, r.stderr)
        # -q: nothing on stderr but errors, this warning included.
        r = self.rl(self.tls[:1], "-q", "--tls-insecure", "status", "job")
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.stderr, "", r)

    def test_every_tls_option_has_its_variable(self):
        ca = {"REDLOCK_TLS_CA": self.ca}
        self.assertEqual(self.rl(self.tls, "acquire", "job", env=ca).code, 0)
        self.assertEqual(self.rl(self.tls, "acquire", "-n", "job").code, 69)  # the variable did it
        pair = dict(ca, REDLOCK_TLS_CERT=self.client_cert[0], REDLOCK_TLS_KEY=self.client_cert[1])
        r = self.rl([self.mtls], "status", "job", env=pair)
        self.assertEqual(r.code, 1, r)
        name = dict(ca, REDLOCK_TLS_SERVER_NAME="other.example")
        r = self.rl([self.other], "status", "job", env=name)
        self.assertEqual(r.code, 1, r)
        # A flag wins over its variable.
        r = self.rl([self.other], "--tls-server-name", "localhost", "status", "job", env=name)
        self.assertRefused(r, "hostname mismatch")
        r = self.rl([self.other], "status", "job", env={"REDLOCK_TLS_INSECURE": "1"})
        self.assertEqual(r.code, 1, r)
        self.assertIn(WARNING, r.stderr)

    # --- deadlines, SNI, quorum ---------------------------------------------------------------

    def test_the_deadline_covers_the_handshake(self):
        silent = [Listener(), Listener()]
        try:
            urls = ["rediss://127.0.0.1:%d" % l.port for l in silent]
            r = self.rl(urls[:1], "--tls-ca", self.ca, "--timeout", "600ms", "--json", "status", "job")
            self.assertEqual(r.code, 69, r)
            j = r.json()
            self.assertEqual(j["servers"][0]["result"], "timeout")
            self.assertIn("timed out after 600ms", j["servers"][0]["error"])
            # The deadline, as measured inside: not less (the handshake was waited for), not much more.
            self.assertGreaterEqual(j["elapsed_ms"], 600)
            self.assertLess(j["elapsed_ms"], 1100)
            self.assertLess(r.elapsed, 3)
            # Two silent servers of five never block the answer of the others, and the exit waits
            # for them no longer than the deadline.
            r = self.rl(self.tls + urls, "--tls-ca", self.ca, "--timeout", "600ms", "--json", "acquire", "job")
            self.assertEqual(r.code, 0, r)
            self.assertLess(r.json()["elapsed_ms"], 600)
            self.assertLess(r.elapsed, 3)
            self.assertEqual([s["result"] for s in r.json()["servers"]][:3], ["locked"] * 3)
        finally:
            for l in silent:
                l.close()

    def test_server_name_indication(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(*self.good)
        listener = Listener(ctx)
        ctx.sni_callback = listener._sni
        try:
            for url, extra in (("rediss://localhost:%d", []),
                               ("rediss://127.0.0.1:%d", ["--tls-server-name", "other.example"]),
                               ("rediss://127.0.0.1:%d", [])):
                self.rl([url % listener.port], "--tls-ca", self.ca, "--timeout", "1s", *extra, "status", "job")
            wait_for(lambda: len(listener.names) >= 3, timeout=5, what="three handshakes")
            # No SNI for an IP address (RFC 6066), the URL's host name or --tls-server-name otherwise.
            self.assertEqual(listener.names[:3], ["localhost", "other.example", None])
        finally:
            listener.close()

    def test_tls_and_plain_servers_in_one_quorum(self):
        servers = self.tls + self.plain
        r = self.rl(servers, "--tls-ca", self.ca, "--json", "acquire", "job")
        self.assertEqual(r.code, 0, r)
        j = r.json()
        self.assertGreaterEqual([s["result"] for s in j["servers"]].count("locked"), 3, j)
        self.assertEqual([s["server"].split(":")[0] for s in j["servers"]], ["rediss"] * 3 + ["redis"] * 2)
        self.assertHeldByQuorum(servers, j["token"])
        st = self.rl(servers, "--tls-ca", self.ca, "status", "job")
        self.assertEqual(st.code, 0, st)
        self.assertRegex(st.stdout, "held on [345] of 5")
        self.assertEqual(self.rl(servers, "--tls-ca", self.ca, "release", "job", "--token", j["token"]).code, 0)
        # Without the CA, the three TLS servers are refused: two of five is no quorum.
        r = self.rl(servers, "--json", "acquire", "job")
        self.assertEqual(r.code, 69, r)
        results = [s["result"] for s in r.json()["servers"]]
        self.assertEqual(results[:3], ["tls"] * 3, results)
        self.assertTrue(set(results[3:]) <= {"locked", "not_waited_for"}, results)
        # What the plain servers gave was taken back.
        self.assertEqual([s.get("job") for s in servers], [None] * 5)

    def test_waiters_are_woken_over_tls_and_run_renews(self):
        holder = self.rl(self.tls, "--tls-ca", self.ca, "acquire", "job", "--ttl", "30s")
        self.assertEqual(holder.code, 0, holder)
        for s in self.tls:
            with s.client() as c:
                c.call("CONFIG", "RESETSTAT")
        waiter = spawn(["--tls-ca", self.ca, "--timeout", "2s", "acquire", "job", "-w", "30s", "--retry-delay", "10s"],
                       servers=",".join(s.url for s in self.tls), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            wait_until_waiting(lambda: [s.client() for s in self.tls], "{job}:redlock:wake")
            released = time.monotonic()
            rel = self.rl(self.tls, "--tls-ca", self.ca, "release", "job", "--token", holder.stdout.strip())
            self.assertEqual(rel.code, 0, rel)
            out, err = waiter.communicate(timeout=15)
            self.assertEqual(waiter.returncode, 0, err)
            # Woken by the release, not by its next poll (5 s after the last at the earliest).
            self.assertLess(time.monotonic() - released, 3)
        finally:
            if waiter.poll() is None:
                waiter.kill()
                waiter.wait(5)
        token = out.decode().strip()
        # The waiter may have tried a server before the release reached it: a quorum is what counts.
        self.assertHeldByQuorum(self.tls, token)
        report = os.path.join(self.workdir, "report.json")
        r = self.rl(self.tls, "--tls-ca", self.ca, "release", "job", "--token", token)
        self.assertEqual(r.code, 0, r)
        r = self.rl(self.tls, "--tls-ca", self.ca, "run", "job", "--ttl", "600ms", "--report", report, "--",
                    "sleep", "1")
        self.assertEqual(r.code, 0, r)
        with open(report) as f:
            j = json.load(f)
        self.assertEqual(j["outcome"], "child_exited")
        self.assertGreaterEqual(j["renewals"], 2)

    # --- credentials over TLS -----------------------------------------------------------------

    def test_auth_over_tls_and_no_password_in_any_message(self):
        url = "rediss://:%s@127.0.0.1:%d" % (PASSWORD, self.secret.port)
        r = self.rl([url], "--tls-ca", self.ca, "acquire", "job")
        self.assertEqual(r.code, 0, r)
        r = self.rl([self.secret], "--tls-ca", self.ca, "--json", "status", "job")
        self.assertEqual(r.code, 69, r)
        self.assertEqual(r.json()["servers"][0]["result"], "auth")
        self.assertIn("NOAUTH", r.json()["servers"][0]["error"])
        outputs = []
        for extra in ([], ["--json"], ["-vv"]):
            outputs.append(self.rl([url], *extra, "acquire", "job"))  # unknown CA
            outputs.append(self.rl([url], "--tls-ca", self.ca, *extra, "status", "job"))
            outputs.append(self.rl(["rediss://:%s@127.0.0.1:%d" % (PASSWORD, self.plain[0].port)], *extra,
                                   "status", "job"))  # not a TLS port
        self.assertEqual(outputs[0].code, 69, outputs[0])
        self.assertIn("rediss://***@127.0.0.1:%d" % self.secret.port, outputs[4].stdout)
        self.assertEqual(outputs[2].code, 69, outputs[2])
        self.assertIn("timed out", outputs[2].stdout + outputs[2].stderr)  # Redis waits for a line end
        for o in outputs:
            self.assertNotIn(PASSWORD.encode(), o.out + o.err, o)

    # --- OpenSSL only when needed -------------------------------------------------------------

    def test_a_plain_run_does_not_touch_openssl(self):
        if not shutil.which("ltrace"):
            self.fail("ltrace is missing: install it (scripts/deps.sh TEST_PACKAGES)")
        trace = os.path.join(self.workdir, "ltrace.out")

        def traced(libraries, servers, *args):
            cmd = ["ltrace", "-f", "-o", trace]
            for lib in libraries:
                cmd += ["-l", lib]
            env = clean_env({"REDLOCK_SERVERS": servers})
            # A sanitizer build: LeakSanitizer cannot work under ptrace (later options win).
            env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
            p = subprocess.run(cmd + [redlock_binary(), "--timeout", "5s"] + list(args), env=env,
                               capture_output=True, timeout=60)
            with open(trace) as f:
                calls = [l for l in f if "->" in l]
            return p, calls

        # The control: the trace sees OpenSSL being set up for a rediss:// server.
        # (ltrace does not pass the exit status on: what was printed tells that the run went well.)
        p, calls = traced(["libssl.so*"], self.tls[0].url, "--tls-ca", self.ca, "status", "job")
        self.assertIn(b"state  free", p.stdout, p)
        self.assertTrue(any("OPENSSL_init_ssl" in c for c in calls), calls[:20])
        # A plain run calls nothing in libssl or libcrypto at all.
        plain = self.plain[0].url
        p, calls = traced(["libssl.so*", "libcrypto.so*"], plain, "acquire", "job")
        self.assertRegex(p.stdout, b"^[0-9a-f]{32}\n$", p)
        self.assertEqual(calls, [])
        for args in (["status", "job"], ["release", "job", "--force"]):
            p, calls = traced(["libssl.so*", "libcrypto.so*"], plain, *args)
            self.assertEqual(p.stderr, b"", p)
            self.assertEqual(calls, [], args)


if __name__ == "__main__":
    main()
