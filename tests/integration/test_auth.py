"""Passwords and ACL users against real servers: where the password comes from (URL, password file,
REDLOCK_PASSWORD) and the user (URL, --user, REDLOCK_USER); a refused AUTH or a NOPERM is that
server's failure; the least-privilege ACL rule that README documents works for every command and
loses something when any one of its parts is removed; and no secret leaks into any output, the
child's environment or command line, or a file readable by others."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from harness import (Cluster, Server, free_port, main, pid_alive, redlock, settle, spawn, wait_for,
                     wait_until_waiting)

PASSWORD = "Pw-url-5c9e1a7d"       # in URLs
ENV_PASSWORD = "Pw-env-b3f08e26"   # in REDLOCK_PASSWORD
WRONG = "Pw-wrong-d41f9c03"        # refused by the servers


def stop(proc):
    """Kills PROC (one of ours) if it still runs, and closes its pipes."""
    if proc is None:
        return
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=10)


def url(server, password=None, user=None, host="127.0.0.1", scheme="redis"):
    auth = ""
    if password is not None or user is not None:
        # A user alone is written "user:@": "user@" is a password, as redis-cli reads it.
        auth = "%s:%s@" % (user or "", password or "")
    return "%s://%s%s:%d" % (scheme, auth, host, server.port)


class Servers(unittest.TestCase):
    """Servers started with EXTRA, reached by the tests as an admin with ADMIN (user, password)."""

    N = 3
    EXTRA = ()
    ADMIN = (None, None)

    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="redlock-auth-")
        cls.servers = [Server(cls.workdir, i, cls.EXTRA) for i in range(cls.N)]
        try:
            for s in cls.servers:
                s.start()
            cls.prepare()
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def prepare(cls):
        pass

    @classmethod
    def tearDownClass(cls):
        for s in cls.servers:
            s.kill()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    @classmethod
    def admin(cls, server):
        user, password = cls.ADMIN
        return server.client(user=user, password=password)

    def setUp(self):
        for s in self.servers:
            with self.admin(s) as c:
                c.call("FLUSHALL")

    def get(self, server, key):
        with self.admin(server) as c:
            return c.call("GET", key)

    def path(self, name):
        return os.path.join(self.workdir, name)

    def password_file(self, content, mode):
        p = self.path("pw-%o-%d" % (mode, time.monotonic_ns()))
        with open(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
            f.write(content)
        os.chmod(p, mode)
        return p

    def rl(self, servers, *args, env=None):
        return redlock(list(args), servers=",".join(servers), env=env)


class Passwords(Servers):
    EXTRA = ("--requirepass", PASSWORD)
    ADMIN = (None, PASSWORD)

    def plain_urls(self):
        return [url(s) for s in self.servers]

    def test_password_from_the_url(self):
        urls = [url(s, PASSWORD) for s in self.servers]
        r = self.rl(urls, "acquire", "job")
        self.assertEqual(r.code, 0, r)
        token = r.stdout.strip()
        self.assertEqual(self.get(self.servers[0], "job"), token.encode())
        self.assertEqual(self.rl(urls, "release", "job", "--token", token).code, 0)
        # The URL wins over the file and the variable.
        pw = self.password_file(WRONG + "\n", 0o600)
        r = self.rl(urls, "--password-file", pw, "status", "job", env={"REDLOCK_PASSWORD": WRONG})
        self.assertEqual(r.code, 1, r)

    def test_a_password_with_commas_and_spaces_in_the_url(self):
        # The server list is split at commas and white space, but not inside a URL's password.
        odd = "hun,ter 2,,x"
        for s in self.servers:
            with self.admin(s) as c:
                c.call("CONFIG", "SET", "requirepass", odd)
        try:
            urls = [url(s, odd) for s in self.servers]
            r = redlock(["acquire", "job"], servers=", ".join(urls))
            self.assertEqual(r.code, 0, r)
            self.assertNotIn("hun", r.stdout + r.stderr)
            r = redlock(["--json", "status", "job"], servers=" ".join(urls))
            self.assertEqual((r.code, r.json()["state"]), (0, "held"), r)
            self.assertNotIn("hun", r.stdout + r.stderr)
            # A URL that is wrong besides (no host): the message shows no piece of the password.
            r = redlock(["status", "job"], servers="redis://:hun,ter 2@")
            self.assertEqual(r.code, 78, r)
            for piece in ("hun", "ter", " 2"):
                self.assertNotIn(piece, r.stderr)
        finally:
            for s in self.servers:
                with s.client(password=odd) as c:
                    c.call("CONFIG", "SET", "requirepass", PASSWORD)

    def test_password_from_the_environment(self):
        r = self.rl(self.plain_urls(), "acquire", "job", env={"REDLOCK_PASSWORD": PASSWORD})
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.get(self.servers[1], "job"), r.out.strip())

    def test_an_empty_password_in_the_url_is_none(self):
        # redis://:@host gives no password (as redis-py and go-redis read it): the variable's is used.
        empty = [url(s, "") for s in self.servers]
        self.assertTrue(empty[0].startswith("redis://:@"), empty[0])
        r = self.rl(empty, "acquire", "job", env={"REDLOCK_PASSWORD": PASSWORD})
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.get(self.servers[2], "job"), r.out.strip())
        r = self.rl(empty, "status", "job")
        self.assertEqual(r.code, 69, r)
        self.assertIn("NOAUTH", r.stdout)

    def test_password_file_with_a_private_mode(self):
        pw = self.password_file(PASSWORD + "\n", 0o600)
        r = self.rl(self.plain_urls(), "--password-file", pw, "acquire", "job")
        self.assertEqual(r.code, 0, r)
        # The file wins over REDLOCK_PASSWORD, and REDLOCK_PASSWORD_FILE is the same option.
        r = self.rl(self.plain_urls(), "--password-file", pw, "status", "job", env={"REDLOCK_PASSWORD": WRONG})
        self.assertEqual(r.code, 0, r)
        r = self.rl(self.plain_urls(), "status", "job", env={"REDLOCK_PASSWORD_FILE": pw})
        self.assertEqual(r.code, 0, r)
        for mode in (0o400, 0o200 | 0o400, 0o620):  # not readable by group or others
            os.chmod(pw, mode)
            self.assertEqual(self.rl(self.plain_urls(), "--password-file", pw, "status", "job").code, 0, oct(mode))
        crlf = self.password_file(PASSWORD + "\r\nsecond line\n", 0o600)
        self.assertEqual(self.rl(self.plain_urls(), "--password-file", crlf, "status", "job").code, 0)

    def test_unsafe_or_missing_password_files_are_configuration_errors(self):
        for mode in (0o640, 0o644, 0o604, 0o660):
            pw = self.password_file(PASSWORD + "\n", mode)
            r = self.rl(self.plain_urls(), "--password-file", pw, "acquire", "job")
            self.assertEqual(r.code, 78, (oct(mode), r))
            self.assertIn("readable by group or others (mode 0%o)" % mode, r.stderr)
            self.assertIn("chmod 600", r.stderr)
            self.assertNotIn(PASSWORD, r.stdout + r.stderr)
            # Also when the URLs carry passwords: the file is checked whenever it is named.
            urls = [url(s, PASSWORD) for s in self.servers]
            self.assertEqual(self.rl(urls, "--password-file", pw, "status", "job").code, 78)
        missing = self.path("no-such-file")
        r = self.rl(self.plain_urls(), "--password-file", missing, "acquire", "job")
        self.assertEqual(r.code, 78, r)
        self.assertIn("No such file", r.stderr)
        r = self.rl(self.plain_urls(), "--json", "status", "job", env={"REDLOCK_PASSWORD_FILE": missing})
        self.assertEqual(r.code, 78, r)
        self.assertEqual(r.json()["error"]["code"], 78)
        for bad in (self.password_file("", 0o600), self.password_file("\n", 0o600)):
            r = self.rl(self.plain_urls(), "--password-file", bad, "status", "job")
            self.assertEqual(r.code, 78, r)
            self.assertIn("is empty", r.stderr)
        r = self.rl(self.plain_urls(), "--password-file", self.workdir, "status", "job")
        self.assertEqual(r.code, 78, r)
        self.assertIn("not a regular file", r.stderr)
        # Nothing was taken by any of these.
        self.assertEqual([self.get(s, "job") for s in self.servers], [None] * 3)

    def test_no_password_is_each_servers_failure(self):
        r = self.rl(self.plain_urls(), "--json", "acquire", "job")
        self.assertEqual(r.code, 69, r)
        servers = r.json()["servers"]
        self.assertGreaterEqual([s["result"] for s in servers].count("auth"), 2, servers)
        self.assertIn("NOAUTH", [s for s in servers if s["result"] == "auth"][0]["error"])
        # A reader's request is longer than a server answers with NOAUTH: still an auth failure.
        r = self.rl(self.plain_urls(), "--json", "acquire", "--shared", "job")
        self.assertEqual(r.code, 69, r)
        self.assertGreaterEqual([s["result"] for s in r.json()["servers"]].count("auth"), 2, r.json()["servers"])

    def test_a_wrong_password_is_that_servers_failure_with_its_reason(self):
        only = [url(self.servers[0], WRONG)]
        r = self.rl(only, "acquire", "job")
        self.assertEqual(r.code, 69, r)
        self.assertIn("WRONGPASS", r.stderr)
        self.assertNotIn(WRONG, r.stdout + r.stderr)
        r = self.rl(only, "status", "job")
        self.assertEqual(r.code, 69, r)
        self.assertIn("redis://***@127.0.0.1:%d  auth" % self.servers[0].port, r.stdout)
        self.assertIn("WRONGPASS", r.stdout)
        self.assertNotIn(WRONG, r.stdout + r.stderr)
        # The error says why: the servers refused, they were not silent.
        for command in ("status", "list"):
            r = self.rl(only, command, "job") if command == "status" else self.rl(only, command)
            self.assertEqual(r.code, 69, r)
            self.assertRegex(r.stderr, r"no quorum: only 0 of 1 server answered; first failure: "
                                       r"redis://\*\*\*@127\.0\.0\.1:%d: .*WRONGPASS" % self.servers[0].port)
        # One wrong password of three: the lock still works, and the JSON says which and why.
        urls = [url(self.servers[0], WRONG)] + [url(s, PASSWORD) for s in self.servers[1:]]
        r = self.rl(urls, "--json", "acquire", "job")
        self.assertEqual(r.code, 0, r)
        j = r.json()
        self.assertTrue(j["acquired"])
        # status waits for every server (acquire answers once a quorum has).
        st = self.rl(urls, "--json", "status", "job")
        self.assertEqual(st.code, 0, st)
        first = st.json()["servers"][0]
        self.assertEqual(first["server"], "redis://***@127.0.0.1:%d" % self.servers[0].port)
        self.assertEqual((first["ok"], first["result"]), (False, "auth"))
        self.assertIn("WRONGPASS", first["error"])
        self.assertNotIn(WRONG.encode(), r.out + r.err + st.out + st.err)
        self.assertEqual(self.rl(urls, "release", "job", "--token", j["token"]).code, 0)

    def test_a_refused_server_is_named_in_the_plain_error(self):
        r = self.rl([url(self.servers[0], WRONG)], "acquire", "job")
        self.assertEqual(r.code, 69, r)
        self.assertIn("redis://***@127.0.0.1:%d" % self.servers[0].port, r.stderr)


ALICE = "Pw-alice-7e2a90c4"


class AclUsers(Servers):
    # The default user has a password of its own, so that only AUTH alice ALICE gets in as alice.
    EXTRA = ("--requirepass", PASSWORD)
    ADMIN = (None, PASSWORD)

    @classmethod
    def prepare(cls):
        for s in cls.servers:
            with cls.admin(s) as c:
                c.call("ACL", "SETUSER", "alice", "on", ">" + ALICE, "~*", "&*", "+@all")
                c.call("ACL", "SETUSER", "nobody", "on", ">" + ALICE, "~*", "&*", "-@all", "+info")

    def test_user_from_the_url(self):
        urls = [url(s, ALICE, "alice") for s in self.servers]
        r = self.rl(urls, "acquire", "job")
        self.assertEqual(r.code, 0, r)
        st = self.rl(urls, "status", "job")
        self.assertIn("redis://alice:***@127.0.0.1:%d" % self.servers[0].port, st.stdout)
        # The URL's user wins over --user and REDLOCK_USER.
        r = self.rl(urls, "--user", "nobody", "status", "job", env={"REDLOCK_USER": "nobody"})
        self.assertEqual(r.code, 0, r)

    def test_user_from_the_option_and_the_variable(self):
        plain = [url(s) for s in self.servers]
        env = {"REDLOCK_PASSWORD": ALICE}
        r = self.rl(plain, "--user", "alice", "acquire", "job", env=env)
        self.assertEqual(r.code, 0, r)
        r = self.rl(plain, "status", "job", env=dict(env, REDLOCK_USER="alice"))
        self.assertEqual(r.code, 0, r)
        # --user wins over REDLOCK_USER; a password alone is the default user's, refused here.
        r = self.rl(plain, "--user", "alice", "status", "job", env=dict(env, REDLOCK_USER="nobody"))
        self.assertEqual(r.code, 0, r)
        r = self.rl(plain, "--json", "status", "job", env=env)
        self.assertEqual(r.code, 69, r)
        self.assertIn("WRONGPASS", r.json()["servers"][0]["error"])
        # The user also goes with a password from the URL ("redis://:PW@host" plus --user).
        r = self.rl([url(s, ALICE) for s in self.servers], "--user", "alice", "status", "job")
        self.assertEqual(r.code, 0, r)
        # Per server: alice on one, the file's password with --user on the others.
        pw = self.password_file(ALICE, 0o600)
        mixed = [url(self.servers[0], ALICE, "alice")] + plain[1:]
        r = self.rl(mixed, "--user", "alice", "--password-file", pw, "status", "job")
        self.assertEqual(r.code, 0, r)

    def test_a_user_without_a_password_is_a_configuration_error(self):
        for servers, args in (([url(s, None, "alice") for s in self.servers], []),
                              ([url(s) for s in self.servers], ["--user", "alice"])):
            r = self.rl(servers, *args, "status", "job")
            self.assertEqual(r.code, 78, r)
            self.assertIn("ACL user 'alice' without a password", r.stderr)
        r = self.rl([url(s) for s in self.servers], "status", "job", env={"REDLOCK_USER": "alice"})
        self.assertEqual(r.code, 78, r)

    def test_noperm_is_that_servers_failure(self):
        r = self.rl([url(self.servers[0], ALICE, "nobody")], "acquire", "job")
        self.assertEqual(r.code, 69, r)
        self.assertIn("NOPERM", r.stderr)
        urls = [url(self.servers[0], ALICE, "nobody")] + [url(s, ALICE, "alice") for s in self.servers[1:]]
        r = self.rl(urls, "--json", "acquire", "job")
        self.assertEqual(r.code, 0, r)
        st = self.rl(urls, "--json", "status", "job")
        self.assertEqual(st.code, 0, st)
        self.assertEqual(st.json()["state"], "held")
        first = st.json()["servers"][0]
        self.assertEqual(first["server"], "redis://nobody:***@127.0.0.1:%d" % self.servers[0].port)
        self.assertEqual((first["ok"], first["result"]), (False, "auth"))
        self.assertIn("NOPERM", first["error"])


# The least-privilege rule (README and redlock(1) document it), for --prefix locks:.
LOCKER = "Pw-locker-0a6b3d95"
RULE_COMMANDS = ["+evalsha", "+eval", "+get", "+set", "+incr", "+pexpire", "+pttl", "+type", "+del", "+time",
                 "+zadd", "+zrem", "+zrange", "+exists",
                 "+publish", "+pubsub|numsub", "+subscribe", "+info", "+scan"]
RULE_KEYS = ["~locks:*", "~{locks:*}:redlock:*"]
RULE_CHANNELS = ["&{locks:*}:redlock:wake*"]
RULE = RULE_COMMANDS + RULE_KEYS + RULE_CHANNELS
# What each part is needed for: the first of LeastPrivilege.STEPS that fails without it.
NEEDED_FOR = {
    "+evalsha": "fresh", "+eval": "fresh", "+get": "fresh", "+set": "fresh", "+incr": "fresh", "+pexpire": "commands",
    "+pttl": "fresh", "+type": "fresh", "+del": "fresh", "+time": "fence-expiry", "+publish": "fresh",
    "+pubsub|numsub": "fresh", "+subscribe": "wake-up", "+zadd": "queue", "+zrem": "queue", "+zrange": "queue",
    "+exists": "queue", "+info": "duplicate", "+scan": "list", "~locks:*": "fresh",
    "~{locks:*}:redlock:*": "fresh",
    "&{locks:*}:redlock:wake*": "fresh",
}
# Only for what needs them: a URL that names a database, a NAME with a hash tag of its own.
FOR_DATABASES = ["+select"]
FOR_TAGGED_NAMES = ["&locks:*:redlock:wake*"]
# The shared mode's (--shared) sorted sets and the readers' owner records, beyond the sorted-set
# commands the rule has for the waiters' queue.
FOR_SHARED = ["+zscore", "+zcard", "+zcount", "+zrangebyscore", "+zremrangebyscore", "+hset", "+hget", "+hdel"]


class LeastPrivilege(unittest.TestCase):
    """Every command works as the user 'locker' limited to RULE, and fails without any one part of it.
    The default user (no password) is the tests' admin."""

    @classmethod
    def setUpClass(cls):
        # A second address, so that one server under two addresses needs INFO's run_id to be found out.
        cls.cluster = Cluster(3, ("--bind", "127.0.0.1", "127.0.0.2"))
        cls.servers = cls.cluster.servers
        cls.workdir = cls.cluster.workdir
        cls.urls = [url(s, LOCKER, "locker") for s in cls.servers]

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def setUp(self):
        self.cluster.flushall()
        self.cluster.warm_scripts()

    def set_rule(self, parts):
        for s in self.servers:
            with s.client() as c:
                c.call("ACL", "DELUSER", "locker")
                c.call("ACL", "SETUSER", "locker", "on", ">" + LOCKER, "resetkeys", "resetchannels", "-@all", *parts)

    def rl(self, *args, urls=None, env=None):
        return redlock(["--prefix", "locks:", "--timeout", "1s"] + list(args), servers=",".join(urls or self.urls),
                       env=env)

    def numsub(self, channel):
        counts = []
        for s in self.servers:
            with s.client() as c:
                counts.append(c.call("PUBSUB", "NUMSUB", channel)[1])
        return counts

    def check(self, result, code, what):
        if result.code != code:
            raise AssertionError("%s: exit %s, not %s: %s" % (what, result.code, code, result.stderr.strip()))

    # Each step raises AssertionError when something does not work.

    def step_fresh(self):
        """acquire and release on servers that have no script cached (EVAL after NOSCRIPT)."""
        for s in self.servers:
            with s.client() as c:
                c.call("SCRIPT", "FLUSH")
        r = self.rl("acquire", "job")
        self.check(r, 0, "acquire")
        self.check(self.rl("release", "job", "--token", r.stdout.strip()), 0, "release --token")

    def step_fence_expiry(self):
        """the fencing counter gets an expiry (TIME: where it is refused, counters never expire)."""
        r = self.rl("acquire", "job")
        self.check(r, 0, "acquire")
        ttls = [s.pttl("{locks:job}:redlock:fence") for s in self.servers]
        self.check(self.rl("release", "job", "--token", r.stdout.strip()), 0, "release --token")
        if not all(t > 0 for t in ttls):
            raise AssertionError("fencing counters without an expiry: PTTL %s" % ttls)

    def step_commands(self):
        """acquire, busy, status, extend, re-acquire with --token, release --token and --force."""
        r = self.rl("--json", "acquire", "job", "--ttl", "20s")
        self.check(r, 0, "acquire")
        token = r.json()["token"]
        self.check(self.rl("acquire", "-n", "job"), 75, "acquire -n (busy)")
        st = self.rl("--json", "status", "job")
        self.check(st, 0, "status")
        if st.json()["token"] != token or st.json()["fence"] < 1:
            raise AssertionError("status: %r" % st.json())
        self.check(self.rl("extend", "job", "--token", token, "--ttl", "25s"), 0, "extend")
        self.check(self.rl("acquire", "-n", "job", "--token", token), 0, "acquire --token (re-acquire)")
        self.check(self.rl("release", "job", "--token", token), 0, "release --token")
        self.check(self.rl("status", "job"), 1, "status (free)")
        self.check(self.rl("acquire", "job"), 0, "acquire")
        self.check(self.rl("release", "job", "--force"), 0, "release --force")
        if self.cluster.values("locks:job") != [None] * 3:
            raise AssertionError("release --force left the key")

    def step_duplicate(self):
        """the same server under two addresses is found out (INFO's run_id)."""
        s = self.servers[0]
        urls = [url(s, LOCKER, "locker"), url(s, LOCKER, "locker", host="127.0.0.2"), self.urls[1]]
        r = self.rl("status", "job", urls=urls)
        self.check(r, 78, "status with one server listed twice")
        if "same Redis server" not in r.stderr:
            raise AssertionError("duplicate: %s" % r.stderr)

    def step_wake_up(self):
        """acquire -w is woken by the release (SUBSCRIBE), long before its next poll."""
        holder = self.rl("acquire", "job", "--ttl", "30s")
        self.check(holder, 0, "acquire")
        for s in self.servers:
            with s.client() as c:
                c.call("CONFIG", "RESETSTAT")
        waiter = spawn(["--prefix", "locks:", "--timeout", "1s", "acquire", "job", "-w", "30s", "--retry-delay", "10s"],
                       servers=",".join(self.urls), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            try:
                wait_until_waiting(lambda: [s.client() for s in self.servers], "{locks:job}:redlock:wake", timeout=3)
            except AssertionError:
                raise AssertionError("acquire -w: not subscribed on every server: %s" %
                                     self.numsub("{locks:job}:redlock:wake"))
            released = time.monotonic()
            self.check(self.rl("release", "job", "--token", holder.stdout.strip()), 0, "release")
            out, err = waiter.communicate(timeout=15)
            took = time.monotonic() - released
        finally:
            stop(waiter)
        if waiter.returncode != 0:
            raise AssertionError("acquire -w: exit %s: %s" % (waiter.returncode, err))
        if took > 3:  # its next poll would have been 5 s after the last at the earliest
            raise AssertionError("acquire -w took %.1fs after the release: not woken" % took)
        self.check(self.rl("release", "job", "--token", out.decode().strip()), 0, "release")

    def step_queue(self):
        """a waiter joins the queue on every server (ZADD), the release names it (ZRANGE, EXISTS) and
        it leaves the queue once it has the lock (ZREM)."""
        queue, channel = "{locks:job}:redlock:waiters", "{locks:job}:redlock:wake"
        holder = self.rl("acquire", "job", "--ttl", "30s")
        self.check(holder, 0, "acquire")
        # Closed when the step ends: a listener left on the lock's channel would make a later
        # step's waiter look subscribed (the rule's parts are each tried in turn, in one test).
        heard = []
        for s in self.servers:
            c = s.client()
            c.call("SUBSCRIBE", channel)
            heard.append(c)
        waiter = spawn(["--prefix", "locks:", "--timeout", "1s", "acquire", "job", "-w", "30s", "--retry-delay", "10s"],
                       servers=",".join(self.urls), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            def sizes():
                out = []
                for s in self.servers:
                    with s.client() as c:
                        out.append(c.call("ZCARD", queue))
                return out
            try:
                wait_for(lambda: sizes() == [1] * 3, timeout=3, what="the waiter to queue")
            except AssertionError:
                raise AssertionError("acquire -w: not queued on every server: %s" % sizes())
            # Queued where every command of the join was allowed (ZREM among them), it listens on a
            # channel of its own; else on the lock's, beside ours.
            with self.servers[0].client() as c:
                own = channel + ":" + c.call("ZRANGE", queue, 0, 0)[0].decode()
            wait_for(lambda: self.numsub(own) == [1] * 3 or max(self.numsub(channel)) > 1, timeout=5,
                     what="the waiter to subscribe")
            if self.numsub(own) != [1] * 3:
                raise AssertionError("acquire -w: not listening on a channel of its own: %s" % self.numsub(own))
            self.check(self.rl("release", "job", "--token", holder.stdout.strip()), 0, "release")
            # Named wherever the release came before the waiter's win: on the quorum it took at
            # least. A server the release reached last may find it gone (it won, and left).
            messages = [c.read()[2].decode() for c in heard]
            named = [m for m in messages if m.startswith("released") and len(m.split()) >= 3 and
                     not m.split()[2].startswith("granted:")]
            if len(named) < 2:
                raise AssertionError("the release named no waiter: %r" % messages)
            out, err = waiter.communicate(timeout=15)
        finally:
            stop(waiter)
            for c in heard:
                c.close()
        if waiter.returncode != 0:
            raise AssertionError("acquire -w: exit %s: %s" % (waiter.returncode, err))
        # Its leaving, sent without waiting (well within the queue's own expiry, 3 s after its last
        # heartbeat, which would hide a ZREM refused).
        left = settle(sizes, [0] * 3, timeout=1.0)
        if left != [0] * 3:
            raise AssertionError("the waiter that took the lock is still queued: %s" % left)
        self.check(self.rl("release", "job", "--token", out.decode().strip()), 0, "release")

    def step_run(self):
        """run renews while its command runs; a second run waits and takes over when the first ends.
        (How soon is step_wake_up's business: the second also polls at the first's expiry.)"""
        report_a, report_b = os.path.join(self.workdir, "a.json"), os.path.join(self.workdir, "b.json")
        first = spawn(["--prefix", "locks:", "--timeout", "1s", "run", "job", "--ttl", "900ms", "--report", report_a,
                       "--", "sleep", "1.5"], servers=",".join(self.urls), stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE)
        second = None
        try:
            wait_for(lambda: self.cluster.values("locks:job").count(None) < 2 or first.poll() is not None,
                     timeout=5, what="the first run to hold the lock")
            second = spawn(["--prefix", "locks:", "--timeout", "1s", "run", "job", "-w", "20s", "--retry-delay", "4s",
                            "--report", report_b, "--", "true"], servers=",".join(self.urls),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            _, err = first.communicate(timeout=15)
            if first.returncode != 0:
                raise AssertionError("first run: exit %s: %s" % (first.returncode, err))
            _, err = second.communicate(timeout=25)
            if second.returncode != 0:
                raise AssertionError("second run: exit %s: %s" % (second.returncode, err))
        finally:
            for p in (first, second):
                stop(p)
        with open(report_a) as f:
            a = json.load(f)
        with open(report_b) as f:
            b = json.load(f)
        if a["renewals"] < 2 or a["outcome"] != "child_exited" or not a.get("released"):
            raise AssertionError("first run's report: %r" % a)
        if b["outcome"] != "child_exited" or b["attempts"] < 2 or b["fence"] <= a["fence"]:
            raise AssertionError("second run's report (it should have waited): %r" % b)

    def step_list(self):
        """list finds the locks under the prefix (SCAN) and reads them."""
        r = self.rl("acquire", "job")
        self.check(r, 0, "acquire")
        listed = self.rl("--json", "list")
        self.check(listed, 0, "list")
        if [(row["name"], row["state"]) for row in listed.json()["locks"]] != [("job", "held")]:
            raise AssertionError("list: %r" % listed.json())

    def step_watch(self):
        """watch --until free hears the release (CONFIG GET is refused: no keyspace notifications)."""
        token = self.rl("acquire", "job").stdout.strip()
        watcher = spawn(["--prefix", "locks:", "--timeout", "1s", "watch", "job", "--until", "free"],
                        servers=",".join(self.urls), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            wait_for(lambda: min(self.numsub("{locks:job}:redlock:wake")) >= 1 or watcher.poll() is not None,
                     timeout=5, what="watch to subscribe")
            self.check(self.rl("release", "job", "--token", token), 0, "release")
            out, err = watcher.communicate(timeout=10)
        finally:
            stop(watcher)
        if watcher.returncode != 0 or b'"event":"released"' not in out:
            raise AssertionError("watch: exit %s: %r %r" % (watcher.returncode, out, err))

    STEPS = [("fresh", step_fresh), ("fence-expiry", step_fence_expiry), ("commands", step_commands),
             ("duplicate", step_duplicate), ("wake-up", step_wake_up), ("queue", step_queue), ("run", step_run),
             ("list", step_list),
             ("watch", step_watch)]

    def first_failure(self):
        for name, step in self.STEPS:
            try:
                step(self)
            except AssertionError as e:
                return name, str(e)
            self.cluster.flushall()
        return None

    def test_every_command_works_under_exactly_the_rule(self):
        self.set_rule(RULE)
        with self.servers[0].client() as c:
            user = c.call("ACL", "GETUSER", "locker")
        info = dict(zip(user[::2], user[1::2]))
        self.assertEqual(sorted(info[b"commands"].decode().split()), sorted(["-@all"] + RULE_COMMANDS))
        self.assertEqual(info[b"keys"].decode().split(), RULE_KEYS)
        self.assertEqual(info[b"channels"].decode().split(), RULE_CHANNELS)
        self.assertIsNone(self.first_failure())

    def test_removing_any_part_of_the_rule_breaks_something(self):
        broken = {}
        for part in RULE:
            self.setUp()
            self.set_rule([p for p in RULE if p != part])
            failure = self.first_failure()
            self.assertIsNotNone(failure, "the rule works without %s: it is not minimal" % part)
            broken[part] = failure[0]
        self.assertEqual(broken, NEEDED_FOR, sorted(set(broken.items()) ^ set(NEEDED_FOR.items())))

    def test_without_info_a_server_listed_twice_is_found_by_its_answer(self):
        # INFO refused: run_id cannot tell two names of one server apart. But a token made for this
        # attempt that a server says it already holds was taken there a moment before, under its
        # other name: refused (78), and what was taken given back, where it counted twice.
        self.set_rule([p for p in RULE if p != "+info"])
        s = self.servers[0]
        urls = [url(s, LOCKER, "locker"), url(s, LOCKER, "locker", host="127.0.0.2"), self.urls[1]]
        for _ in range(3):
            r = self.rl("acquire", "-n", "job", urls=urls)
            self.check(r, 78, "acquire with one server listed twice")
            self.assertIn("configured twice", r.stderr)
            self.assertEqual(self.cluster.values("locks:job"), [None] * 3)

    def test_the_patterns_are_globs_where_braces_are_plain_characters(self):
        self.set_rule(RULE)
        allowed = [["GET", "locks:job"], ["GET", "{locks:job}:redlock:fence"],
                   ["SET", "{locks:a:b}:redlock:owner", "x"], ["PUBLISH", "{locks:job}:redlock:wake", "m"],
                   ["SUBSCRIBE", "{locks:job}:redlock:wake"], ["PUBSUB", "NUMSUB", "anything"]]
        denied = [["GET", "job"], ["GET", "{job}:redlock:fence"], ["GET", "{other:job}:redlock:fence"],
                  ["GET", "xlocks:job"], ["PUBLISH", "locks:job:redlock:wake", "m"],
                  ["PUBLISH", "{job}:redlock:wake", "m"], ["SUBSCRIBE", "{other}:redlock:wake"],
                  ["PSUBSCRIBE", "{locks:*}:redlock:wake"], ["PUBSUB", "CHANNELS"], ["KEYS", "*"], ["FLUSHALL"],
                  ["SELECT", "1"], ["CONFIG", "GET", "*"]]
        with self.servers[0].client() as c:
            for command in allowed:
                self.assertEqual(c.call("ACL", "DRYRUN", "locker", *command), "OK", command)
            for command in denied:
                self.assertNotEqual(c.call("ACL", "DRYRUN", "locker", *command), "OK", command)
        # A lock outside the prefix is refused by every server.
        r = redlock(["acquire", "job"], servers=",".join(self.urls))
        self.assertEqual(r.code, 69, r)
        self.assertIn("NOPERM", r.stderr)
        self.assertEqual(self.cluster.values("job"), [None] * 3)

    def test_what_the_shared_mode_needs_beyond_the_rule(self):
        self.set_rule(RULE)
        self.assertEqual(self.rl("acquire", "--shared", "-n", "job").code, 69)
        self.cluster.flushall()
        self.set_rule(RULE + FOR_SHARED)
        reader = self.rl("acquire", "--shared", "-n", "job")
        self.assertEqual(reader.code, 0, reader)
        token = reader.stdout.strip()
        self.assertEqual(self.rl("acquire", "-n", "job").code, 75)  # a writer, queued, then withdrawn
        self.assertEqual(self.rl("extend", "--shared", "--token", token, "job").code, 0)
        self.assertEqual(self.rl("status", "job").code, 0)
        self.assertEqual(self.rl("release", "--shared", "--token", token, "job").code, 0)
        self.assertEqual(self.rl("acquire", "-n", "job").code, 0)
        for part in FOR_SHARED:
            self.cluster.flushall()
            self.set_rule(RULE + [p for p in FOR_SHARED if p != part])
            steps = [self.rl("acquire", "--shared", "-n", "job"), self.rl("acquire", "-n", "job"),
                     self.rl("status", "job")]
            steps.append(self.rl("release", "--shared", "--token", steps[0].stdout.strip() or "none", "job"))
            self.assertNotEqual([r.code for r in steps], [0, 75, 0, 0], part)

    def test_what_databases_and_tagged_names_need_beyond_the_rule(self):
        db_urls = [u + "/3" for u in self.urls]
        self.set_rule(RULE)
        r = self.rl("acquire", "-n", "job", urls=db_urls)
        self.assertEqual(r.code, 69, r)
        self.assertIn("NOPERM", r.stderr)
        tagged = self.rl("acquire", "-n", "{t}job")
        self.assertEqual(tagged.code, 69, tagged)
        self.assertIn("can't publish to the channel", tagged.stderr)
        # (The script's SET before the refused PUBLISH stays: start afresh.)
        self.cluster.flushall()
        self.set_rule(RULE + FOR_DATABASES + FOR_TAGGED_NAMES)
        r = self.rl("acquire", "-n", "job", urls=db_urls)
        self.assertEqual(r.code, 0, r)
        with self.servers[0].client() as c:
            c.call("SELECT", "3")
            self.assertEqual(c.call("GET", "locks:job"), r.out.strip())
        self.assertEqual(self.rl("release", "job", "--token", r.stdout.strip(), urls=db_urls).code, 0)
        r = self.rl("acquire", "-n", "{t}job")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.servers[0].get("locks:{t}job"), r.out.strip())
        self.assertIsNotNone(self.servers[0].get("locks:{t}job:redlock:owner"))
        self.assertEqual(self.rl("release", "{t}job", "--token", r.stdout.strip()).code, 0)


class Secrets(Servers):
    """Two servers take the URL's password, the third REDLOCK_PASSWORD's: both secrets are in play."""

    ADMIN = (None, None)

    @classmethod
    def prepare(cls):
        for s, pw in zip(cls.servers, (PASSWORD, PASSWORD, ENV_PASSWORD)):
            with s.client() as c:
                c.call("CONFIG", "SET", "requirepass", pw)
        cls.admin_passwords = {s.port: pw for s, pw in zip(cls.servers, (PASSWORD, PASSWORD, ENV_PASSWORD))}
        cls.spec = ",".join([url(s, PASSWORD) for s in cls.servers[:2]] + [url(cls.servers[2])])

    @classmethod
    def admin(cls, server):
        return server.client(password=cls.admin_passwords[server.port])

    def secrets(self):
        return [PASSWORD.encode(), ENV_PASSWORD.encode(), WRONG.encode()]

    def assertClean(self, blob, what):
        for secret in self.secrets():
            self.assertNotIn(secret, blob, what)

    def run_all(self, env_extra=None):
        env = dict({"REDLOCK_PASSWORD": ENV_PASSWORD}, **(env_extra or {}))
        results = []

        def rl(*args, servers=None):
            r = redlock(list(args), servers=servers or self.spec, env=env)
            results.append((args, r))
            return r

        for out in ([], ["--json"], ["-vv"]):
            r = rl(*out, "acquire", "job", "--ttl", "20s")
            self.assertEqual(r.code, 0, r)
            token = r.json()["token"] if out == ["--json"] else r.stdout.strip()
            rl(*out, "acquire", "-n", "job")
            rl(*out, "acquire", "-w", "200ms", "job")
            rl(*out, "status", "job")
            rl(*out, "extend", "job", "--token", token)
            rl(*out, "extend", "job", "--token", "not-ours")
            rl(*out, "release", "job", "--token", "not-ours")
            self.assertEqual(rl(*out, "release", "job", "--token", token).code, 0)
            report = self.path("report-%d.json" % len(results))
            r = rl(*out, "run", "job", "--report", report, "--", "sh", "-c", "echo child-ran")
            self.assertEqual(r.code, 0, r)
            with open(report, "rb") as f:
                results.append((("report",), f.read()))
            rl(*out, "doctor")
            # Failures whose messages name servers or URLs.
            dead = free_port()
            rl(*out, "status", "job", servers=self.spec + ",redis://:%s@127.0.0.1:%d" % (PASSWORD, dead))
            rl(*out, "acquire", "job", servers="redis://:%s@127.0.0.1:%d" % (WRONG, self.servers[0].port))
            rl(*out, "status", "job", servers="redis://:%s@127.0.0.1:%d" % (WRONG, self.servers[0].port))
            rl(*out, "status", "job", servers="rediss://:%s@127.0.0.1:%d" % (PASSWORD, self.servers[0].port))
            rl(*out, "--timeout", "300ms", "acquire", "-w", "1s", "job",
               servers="rediss://:%s@127.0.0.1:%d" % (PASSWORD, self.servers[0].port))
            rl(*out, "status", "job", servers=self.spec + "," + url(self.servers[0], PASSWORD, host="localhost"))
            for bad in ("redis://:%s@127.0.0.1:notaport", "redis://:%s@127.0.0.1:99999", "redis://:%s@[::1",
                        "redis://:%s@", "redis://:%s@127.0.0.1/x", "redis+tls://:%s@127.0.0.1",
                        "redis://:%s@127.0.0.1:1,redis://:%s@127.0.0.1:1"):
                r = rl(*out, "status", "job", servers=bad.replace("%s", PASSWORD))
                self.assertEqual(r.code, 78, r)
            rl(*out, "acquire", "job", "--ttl", "0")  # usage error
            rl(*out, "run", "job", "--report", self.path("err.json"), "--", "/nonexistent/command")
            with open(self.path("err.json"), "rb") as f:
                results.append((("report", "error"), f.read()))
            rl(*out, "run", "job", "--report", self.path("noq.json"), "--", "true",
               servers="redis://:%s@127.0.0.1:%d" % (WRONG, self.servers[0].port))
            with open(self.path("noq.json"), "rb") as f:
                results.append((("report", "no quorum"), f.read()))
        return results

    def test_no_output_of_any_command_holds_a_secret(self):
        results = self.run_all()
        self.assertGreater(len(results), 60)
        for args, r in results:
            if isinstance(r, bytes):
                self.assertClean(r, args)
            else:
                self.assertClean(r.out + r.err, (args, r))
        # The URLs were shown, redacted.
        shown = b"".join(r.out + r.err for _, r in results if not isinstance(r, bytes))
        self.assertIn(b"redis://***@127.0.0.1:%d" % self.servers[0].port, shown)
        self.assertIn(b"redis://127.0.0.1:%d" % self.servers[2].port, shown)

    def child_environment(self, args, env):
        out = self.path("child-env-%d" % time.monotonic_ns())
        r = redlock(args + ["run", "job", "--", "sh", "-c", "env > %s; cat /proc/$$/cmdline >> %s" % (out, out)],
                    env=env)
        self.assertEqual(r.code, 0, r)
        with open(out, "rb") as f:
            return f.read()

    def test_the_child_environment_holds_no_password(self):
        env = {"REDLOCK_PASSWORD": ENV_PASSWORD}
        # Servers given with -S: REDLOCK_SERVERS is not set at all.
        blob = self.child_environment(["-S", self.spec], env)
        self.assertIn(b"REDLOCK_TOKEN=", blob)
        self.assertNotIn(b"REDLOCK_PASSWORD=", blob)  # REDLOCK_PASSWORD_FD names a descriptor
        self.assertClean(blob, "the child's environment")
        # With a password file, its path goes on (a nested redlock reads it) but never its content.
        pw = self.password_file(ENV_PASSWORD + "\n", 0o600)
        blob = self.child_environment(["-S", self.spec, "--password-file", pw], {"REDLOCK_PASSWORD": ENV_PASSWORD})
        self.assertClean(blob, "the child's environment")

    def test_the_child_environment_holds_no_password_from_redlock_servers(self):
        blob = self.child_environment([], {"REDLOCK_PASSWORD": ENV_PASSWORD, "REDLOCK_SERVERS": self.spec})
        self.assertClean(blob, "the child's environment")

    def test_the_childs_command_line_and_environment_in_proc(self):
        proc = spawn(["-S", self.spec, "run", "job", "--", "sleep", "30"], env={"REDLOCK_PASSWORD": ENV_PASSWORD},
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            def child():
                for entry in os.listdir("/proc"):
                    if not entry.isdigit():
                        continue
                    try:
                        with open("/proc/%s/stat" % entry) as f:
                            fields = f.read().rsplit(")", 1)[1].split()
                    except OSError:
                        continue
                    if int(fields[1]) == proc.pid:
                        try:
                            with open("/proc/%s/cmdline" % entry, "rb") as f:
                                if f.read().startswith(b"sleep\0"):
                                    return int(entry)
                        except OSError:
                            pass
                return None
            pid = wait_for(child, timeout=10, what="the child")
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmdline = f.read()
            with open("/proc/%d/environ" % pid, "rb") as f:
                environ = f.read()
            self.assertEqual(cmdline, b"sleep\x0030\x00")
            self.assertIn(b"REDLOCK_TOKEN=", environ)
            self.assertNotIn(b"REDLOCK_PASSWORD=", environ)
            self.assertClean(cmdline + environ, "/proc of the child")
            proc.send_signal(signal.SIGTERM)  # forwarded to the child
            out, err = proc.communicate(timeout=15)
            self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
            self.assertClean(out + err, "run's output")
            wait_for(lambda: not pid_alive(pid), timeout=5, what="the child to end")
        finally:
            stop(proc)

    def test_token_and_report_files_are_private_even_with_umask_000(self):
        token_file = self.path("token")
        with open(token_file, "w") as f:  # an old one, readable by all: replaced, not reused
            f.write("old\n")
        os.chmod(token_file, 0o644)
        report = self.path("umask-report.json")
        for args in (["acquire", "job", "--token-file", token_file],
                     ["run", "other", "--report", report, "--", "true"]):
            p = spawn(args, servers=self.spec, env={"REDLOCK_PASSWORD": ENV_PASSWORD}, stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, preexec_fn=lambda: os.umask(0))
            out, err = p.communicate(timeout=30)
            self.assertEqual(p.returncode, 0, err)
        self.assertEqual(os.stat(token_file).st_mode & 0o777, 0o600)
        with open(token_file) as f:
            self.assertRegex(f.read(), r"^[0-9a-f]{32}\n$")
        self.assertEqual(os.stat(report).st_mode & 0o777, 0o600)
        # Nothing else was left beside them (no temporary files).
        self.assertEqual(sorted(n for n in os.listdir(self.workdir) if n.startswith(("token", "umask-report"))),
                         ["token", "umask-report.json"])


if __name__ == "__main__":
    main()
