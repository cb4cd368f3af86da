"""Secrets in every form a server URL can carry them, and passwords handed on to nested calls.

URL user information is read as redis-cli reads it (`redis://PASSWORD@host` is a password), and a
secret planted in any form (`S@`, `user:S@`, `:S@`, rediss://, unix://, a bare HOST:PORT, from -S
or from REDLOCK_SERVERS) never appears in stdout, stderr, the JSON or a --report of any command,
with servers up or down. A `run` passes its passwords on to nested calls through a sealed memfd
named in REDLOCK_PASSWORD_FD, never through the environment or a command line."""

import concurrent.futures
import uuid
import json
import os
import subprocess
import unittest

from harness import Cluster, clean_env, free_port, main, redlock, redlock_binary

SECRET = "Sx-planted-4f1e9b27"
USER = "deployer"


class SecretServers(unittest.TestCase):
    """Three servers that take SECRET as the default user's password and as USER's, on TCP and on a
    unix socket each."""

    N = 3

    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(cls.N, ("--requirepass", SECRET), unix=True, warm=False)
        cls.servers, cls.workdir = cls.cluster.servers, cls.cluster.workdir
        try:
            for s in cls.servers:
                with s.client(password=SECRET) as c:
                    c.call("ACL", "SETUSER", USER, "on", ">" + SECRET, "~*", "&*", "+@all")
        except Exception:
            cls.cluster.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def setUp(self):
        for s in self.servers:
            with s.client(password=SECRET) as c:
                c.call("FLUSHALL")

    def path(self, name):
        return os.path.join(self.workdir, name)

    def urls(self, form):
        return [form.format(port=s.port, sock=s.unix_path, dead=free_port(), dead_sock=self.path("none-%d.sock" % i))
                for i, s in enumerate(self.servers)]

    def every_command(self, urls, how, results, timeout="300ms"):
        """Runs every command with URLS given as HOW ("-S" or "env"), plain, --json and -vv."""
        spec = ",".join(urls)

        def rl(*args):
            if how == "-S":
                r = redlock(["-S", spec] + list(args), timeout=60)
            else:
                r = redlock(list(args), servers=spec, timeout=60)
            results.append((how, args, r))
            return r

        for out in ([], ["--json"], ["-vv"]):
            r = rl(*out, "--timeout", timeout, "acquire", "-n", "job", "--ttl", "20s")
            token = "not-ours"
            if r.code == 0:
                token = r.json()["token"] if out == ["--json"] else r.stdout.strip()
            rl(*out, "--timeout", timeout, "acquire", "-n", "job")
            rl(*out, "--timeout", timeout, "extend", "job", "--token", token)
            rl(*out, "--timeout", timeout, "status", "job")
            rl(*out, "--timeout", timeout, "release", "job", "--token", token)
            report = self.path("report-%s.json" % uuid.uuid4().hex)
            rl(*out, "--timeout", timeout, "run", "-n", "--report", report, "job", "--", "true")
            with open(report, "rb") as f:
                results.append((how, ("report",) + tuple(out), f.read()))
            rl(*out, "--timeout", timeout, "doctor", "--ttl", "1s")

    def assert_clean(self, results):
        for how, args, r in results:
            blob = r if isinstance(r, bytes) else r.out + r.err
            self.assertNotIn(SECRET.encode(), blob, (how, args, r))


# Each form: how a server's URL is written with the secret, and how it is shown.
FORMS = {
    "password": ("redis://%s@127.0.0.1:{port}" % SECRET, "redis://***@127.0.0.1:{port}"),
    "user and password": ("redis://%s:%s@127.0.0.1:{port}" % (USER, SECRET), "redis://%s:***@127.0.0.1:{port}" % USER),
    "colon and password": ("redis://:%s@127.0.0.1:{port}" % SECRET, "redis://***@127.0.0.1:{port}"),
    "bare": ("%s@127.0.0.1:{port}" % SECRET, "redis://***@127.0.0.1:{port}"),
    "bare with user": ("%s:%s@127.0.0.1:{port}" % (USER, SECRET), "redis://%s:***@127.0.0.1:{port}" % USER),
    "unix": ("unix://%s@{sock}" % SECRET, "unix://***@{sock}"),
    "unix with user": ("unix://%s:%s@{sock}" % (USER, SECRET), "unix://%s:***@{sock}" % USER),
}
# Forms that cannot reach these servers: their errors name the servers.
DOWN_FORMS = {
    "tls to a plain server": "rediss://%s@127.0.0.1:{port}" % SECRET,
    "tls with user": "rediss://%s:%s@127.0.0.1:{port}" % (USER, SECRET),
    "nothing listening": "redis://%s@127.0.0.1:{dead}" % SECRET,
    "no socket": "unix://%s@{dead_sock}" % SECRET,
}


class EveryForm(SecretServers):
    def test_every_form_works_and_is_never_shown(self):
        for name, (form, shown) in FORMS.items():
            with self.subTest(form=name):
                self.setUp()
                urls = self.urls(form)
                results = []
                for how in ("-S", "env"):
                    self.every_command(urls, how, results)
                self.assert_clean(results)
                # The secret is read as a password (with the user when one is named): every command worked.
                acquire = [r for _, args, r in results if args[-4:] == ("-n", "job", "--ttl", "20s")]
                self.assertEqual([r.code for r in acquire], [0] * 6, acquire)
                status = [r for _, args, r in results if args[-2:] == ("status", "job") and "--json" in args][0]
                first = shown.format(port=self.servers[0].port, sock=self.servers[0].unix_path)
                self.assertEqual(status.json()["servers"][0]["server"], first, status)
                doctor = [r for _, args, r in results if "doctor" in args and args[0] == "--timeout"][0]
                self.assertIn(first, doctor.stdout)

    def test_errors_of_servers_that_cannot_be_reached_never_show_it(self):
        # Every command waits out its --timeout here (a TLS handshake with a plain server): the forms
        # and the ways of giving them run side by side, each in a thread.
        def run_form(form_and_how):
            results = []
            self.every_command(self.urls(form_and_how[0]), form_and_how[1], results, timeout="100ms")
            return results

        cases = [(name, how) for name in DOWN_FORMS for how in ("-S", "env")]
        with concurrent.futures.ThreadPoolExecutor(len(cases)) as pool:
            done = list(pool.map(run_form, [(DOWN_FORMS[name], how) for name, how in cases]))
        outcomes = {}
        for (name, _), results in zip(cases, done):
            outcomes.setdefault(name, []).extend(results)
        for name, results in outcomes.items():
            with self.subTest(form=name):
                self.assert_clean(results)
                # Errors were there to leak it: a quorum never answered.
                self.assertTrue(all(r.code == 69 for _, args, r in results
                                    if not isinstance(r, bytes) and "status" in args), results)
                errors = b"".join(r.err for _, _, r in results if not isinstance(r, bytes))
                self.assertIn(b"***@", errors)

    def test_a_wrong_secret_in_a_url_is_refused_by_the_server_not_shown(self):
        wrong = "Sx-wrong-0c7d2e55"
        results = []
        self.every_command(["redis://%s@127.0.0.1:%d" % (wrong, s.port) for s in self.servers], "env", results)
        for how, args, r in results:
            blob = r if isinstance(r, bytes) else r.out + r.err
            self.assertNotIn(wrong.encode(), blob, (how, args, r))
        self.assertIn(b"WRONGPASS", b"".join(r.err for _, _, r in results if not isinstance(r, bytes)))

    def test_malformed_urls_with_a_secret_are_78_without_it(self):
        for bad in ("redis://%s@127.0.0.1:notaport", "%s@127.0.0.1/3", "unix://%s@relative", "%s@[::1",
                    "rediss://%s@127.0.0.1:1,rediss://%s@127.0.0.1:1"):
            bad = bad.replace("%s", SECRET)
            for args in (["status", "job"], ["--json", "status", "job"], ["-vv", "doctor"]):
                r = redlock(args, servers=bad)
                self.assertEqual(r.code, 78, (bad, r))
                self.assertNotIn(SECRET, r.stdout + r.stderr)


class EchoedBack(SecretServers):
    """Servers that echo AUTH's arguments in their refusal ("unknown command 'AUTH', with args
    beginning with: 'SECRET'"): AUTH renamed away, so every password sent is refused that way."""

    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(cls.N, ("--rename-command", "AUTH", ""), unix=True, warm=False)
        cls.servers, cls.workdir = cls.cluster.servers, cls.cluster.workdir

    def setUp(self):
        pass

    def test_a_refusal_that_quotes_the_password_never_shows_it(self):
        # The server quotes the first 128 bytes of AUTH's arguments: a long password is cut there,
        # and no copy of it is whole.
        long_secret = SECRET + "-" + "L" * 140
        results = []
        for form in (FORMS["password"][0], FORMS["user and password"][0], FORMS["password"][0].replace(SECRET, long_secret)):
            self.every_command(self.urls(form), "-S", results)
        self.assert_clean(results)
        errors = b"".join(r.err for _, _, r in results if not isinstance(r, bytes))
        self.assertNotIn(b"L" * 20, errors)
        self.assertIn(b"AUTH', with args beginning with: ***", errors)


class Nested(SecretServers):
    """A run's password reaches nested calls through REDLOCK_PASSWORD_FD, not the environment."""

    def check(self, args, env, servers=None):
        """Runs nested calls inside `run outer`; returns what its command saw."""
        out = self.path("seen")
        b = redlock_binary()
        script = ("env > {out}.env; cat /proc/$$/cmdline > {out}.cmdline; "
                  "{b} run outer -- sh -c 'cat /proc/$$/environ /proc/$$/cmdline > {out}.inner'; echo nested:$?; "
                  "{b} run outer -- {b} run outer -- true; echo twice:$?; "
                  "{b} acquire -n other >/dev/null; echo other:$?; "
                  "{b} --json status outer").format(b=b, out=out)
        r = redlock(args + ["run", "outer", "--", "sh", "-c", script], servers=servers, env=env)
        self.assertEqual(r.code, 0, r)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[:3], ["nested:0", "twice:0", "other:0"], r)
        self.assertEqual(json.loads(lines[3])["state"], "held", r)
        self.assertNotIn(SECRET.encode(), r.out + r.err)
        seen = {}
        for suffix in (".env", ".cmdline", ".inner"):
            with open(out + suffix, "rb") as f:
                seen[suffix] = f.read()
            self.assertNotIn(SECRET.encode(), seen[suffix], suffix)
        self.assertIn(b"REDLOCK_PASSWORD_FD=", seen[".env"])
        self.assertNotIn(b"REDLOCK_PASSWORD=", seen[".env"])
        self.assertIn(b"REDLOCK_PASSWORD_FD=", seen[".inner"])
        return seen

    def plain(self):
        return ",".join("127.0.0.1:%d" % s.port for s in self.servers)

    def test_a_password_from_redlock_password_reaches_nested_calls(self):
        self.check([], {"REDLOCK_PASSWORD": SECRET}, servers=self.plain())

    def test_passwords_from_the_urls_reach_nested_calls(self):
        urls = ",".join("redis://%s@127.0.0.1:%d" % (SECRET, s.port) for s in self.servers)
        self.check(["-S", urls], {})
        self.setUp()
        self.check([], {}, servers=urls)
        self.setUp()
        users = ",".join("unix://%s:%s@%s" % (USER, SECRET, s.unix_path) for s in self.servers)
        seen = self.check([], {}, servers=users)
        # The user goes on in REDLOCK_SERVERS, in a form that does not read as a password.
        self.assertIn(("REDLOCK_SERVERS=unix://%s:@%s" % (USER, self.servers[0].unix_path)).encode(), seen[".env"])

    def test_the_readme_ci_step_and_nested_lock_work_together(self):
        # The CI step's secret REDLOCK_SERVERS (passwords in the URLs), running the nested-lock
        # deploy script: migrate.sh takes the same lock itself, and so does a later step.
        bindir = self.path("bin")
        os.makedirs(bindir, exist_ok=True)
        os.symlink(redlock_binary(), os.path.join(bindir, "redlock"))
        migrate = self.path("migrate.sh")
        with open(migrate, "w") as f:
            f.write("#!/bin/sh\nredlock run deploy -- sh -c 'echo migrated'\n")
        os.chmod(migrate, 0o700)
        urls = ",".join("redis://:%s@127.0.0.1:%d" % (SECRET, s.port) for s in self.servers)
        env = {"PATH": bindir + ":" + os.environ["PATH"], "REDLOCK_SERVERS": urls}
        script = ("%s\nredlock run deploy -- sh -c 'echo restarted'\n" % migrate)
        r = redlock(["run", "-w", "20m", "--ttl", "2m", "deploy-production", "--", "redlock", "run", "-w", "10m",
                     "deploy", "--", "sh", "-c", script], env=env)
        self.assertEqual((r.code, r.stdout), (0, "migrated\nrestarted\n"), r)
        self.assertNotIn(SECRET, r.stdout + r.stderr)

    def test_a_closed_descriptor_is_named_as_the_cause(self):
        # The command closes the descriptor before a nested call, which then cannot know the
        # password: its error says why.
        script = 'eval "exec $REDLOCK_PASSWORD_FD<&-"; %s run outer -- true' % redlock_binary()
        r = redlock(["run", "outer", "--", "sh", "-c", script], servers=self.plain(), env={"REDLOCK_PASSWORD": SECRET})
        self.assertEqual(r.code, 69, r)
        self.assertIn("that descriptor is closed", r.stderr)
        self.assertIn("use --password-file", r.stderr)
        self.assertNotIn(SECRET, r.stdout + r.stderr)

    def test_another_descriptor_of_that_number_is_never_read_as_a_password(self):
        # A plain file at the number, holding what redlock writes there: not redlock's sealed memfd,
        # so its content never goes to a server (status would otherwise find the lock free, 1).
        planted = self.path("not-a-password")
        with open(planted, "w") as f:
            f.write("redlock-passwords 1\n* %s\n" % SECRET)
        r = subprocess.run(["sh", "-c", 'exec 7<"$1"; exec "$2" status job', "sh", planted, redlock_binary()],
                           env=clean_env({"REDLOCK_SERVERS": self.plain(), "REDLOCK_PASSWORD_FD": "7"}),
                           capture_output=True, timeout=30)
        self.assertEqual(r.returncode, 69, r)
        self.assertIn(b"REDLOCK_PASSWORD_FD=7: not the descriptor that redlock run passes on", r.stderr)
        self.assertIn(b"NOAUTH", r.stdout)
        self.assertNotIn(SECRET.encode(), r.stdout + r.stderr)


if __name__ == "__main__":
    main()
