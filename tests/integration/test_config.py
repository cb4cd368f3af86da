"""The configuration file: where it is looked for ($REDLOCK_CONFIG, $XDG_CONFIG_HOME/redlock/config
or ~/.config/redlock/config, /etc/redlock/config), its systemd EnvironmentFile= form, precedence
(flag, environment, file, default), its errors (78, naming the line), a password in it (owner-only,
never shown, never in a child's environment), the warning when no servers are configured, and
`doctor -v` saying where each setting came from. Every test writes its own file in a temporary
directory; the user's own configuration never counts."""

import os
import time

from harness import Cluster, ClusterTest, free_port, main, redlock, redlock_binary

SECRET = "Cf-planted-93a1c6d0"


class ConfigTest(ClusterTest):
    N = 3

    def setUp(self):
        super().setUp()
        self.home = self.scratch_dir("redlock-config-")

    def write(self, text, mode=0o600, path=None):
        path = path or os.path.join(self.home, "xdg", "redlock", "config")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    def run_with(self, args, env=None):
        """The binary with the file of this test: XDG_CONFIG_HOME is the test's, REDLOCK_SERVERS unset."""
        e = {"XDG_CONFIG_HOME": os.path.join(self.home, "xdg")}
        e.update(env or {})
        return redlock(args, env=e)

    def holders(self, key):
        return [v is not None for v in self.cluster.values(key)]


class Reading(ConfigTest):
    def test_settings_come_from_the_file(self):
        path = self.write("# shared by cron and the unit\n\n"
                          "REDLOCK_SERVERS=\"%s\"\n"
                          "  ; the key's prefix\n"
                          "REDLOCK_PREFIX='cfg:'\n"
                          "REDLOCK_TTL=7s\n" % self.cluster.spec)
        r = self.run_with(["--json", "acquire", "job"])
        self.assertEqual(r.code, 0, r)
        self.assertEqual((r.json()["key"], r.json()["ttl_ms"]), ("cfg:job", 7000), r)
        self.assertEqual(self.holders("cfg:job"), [True] * 3)
        self.assertEqual(r.stderr, "")
        # A subcommand's option too (run's --renew), and a flag of the global options (--json).
        self.write("REDLOCK_SERVERS=%s\nREDLOCK_JSON=1\nREDLOCK_RENEW=0.1\n" % self.cluster.spec, path=path)
        r = self.run_with(["run", "--report", os.path.join(self.home, "r.json"), "job2", "--", "sleep", "0.5"])
        self.assertEqual(r.code, 0, r)
        self.assertGreaterEqual(r.json()["renewals"], 3, r)

    def test_where_the_file_is_looked_for(self):
        home = os.path.join(self.home, "home")
        self.write("REDLOCK_SERVERS=%s\nREDLOCK_PREFIX=home:\n" % self.cluster.spec,
                   path=os.path.join(home, ".config", "redlock", "config"))
        named = self.write("REDLOCK_SERVERS=%s\nREDLOCK_PREFIX=named:\n" % self.cluster.spec,
                           path=os.path.join(self.home, "named.conf"))
        # Without XDG_CONFIG_HOME: ~/.config/redlock/config.
        r = self.run_with(["--json", "status", "job"], env={"XDG_CONFIG_HOME": "", "HOME": home})
        self.assertEqual(r.json()["key"], "home:job", r)
        # XDG_CONFIG_HOME set: there, and not ~/.config (here none: the default, with a warning).
        r = self.run_with(["--json", "--timeout", "50ms", "status", "job"], env={"HOME": home})
        self.assertEqual(r.json()["key"], "job", r)
        self.assertIn("no servers configured", r.stderr)
        # $REDLOCK_CONFIG before both.
        r = self.run_with(["--json", "status", "job"], env={"XDG_CONFIG_HOME": "", "HOME": home, "REDLOCK_CONFIG": named})
        self.assertEqual(r.json()["key"], "named:job", r)

    def test_flag_then_environment_then_file_then_default(self):
        dead = ",".join("127.0.0.1:%d" % free_port() for _ in range(3))
        self.write("REDLOCK_SERVERS=%s\nREDLOCK_PREFIX=file:\nREDLOCK_TTL=7s\nREDLOCK_TIMEOUT=50ms\n" % dead)
        r = self.run_with(["--json", "acquire", "job"], env={"REDLOCK_SERVERS": self.cluster.spec,
                                                             "REDLOCK_PREFIX": "env:", "REDLOCK_TTL": "8s"})
        self.assertEqual(r.code, 0, r)
        self.assertEqual((r.json()["key"], r.json()["ttl_ms"]), ("env:job", 8000), r)
        r = self.run_with(["--json", "-S", self.cluster.spec, "--prefix", "flag:", "acquire", "--ttl", "9s", "job"],
                          env={"REDLOCK_PREFIX": "env:", "REDLOCK_TTL": "8s"})
        self.assertEqual(r.code, 0, r)
        self.assertEqual((r.json()["key"], r.json()["ttl_ms"]), ("flag:job", 9000), r)
        # The file's servers (down) when nothing else names any.
        r = self.run_with(["--json", "acquire", "-n", "job"])
        self.assertEqual((r.code, r.json()["key"], r.json()["ttl_ms"]), (69, "file:job", 7000), r)
        # An environment variable set empty is set: REDLOCK_PREFIX= beats the file's.
        r = self.run_with(["--json", "-S", self.cluster.spec, "status", "job"], env={"REDLOCK_PREFIX": ""})
        self.assertEqual(r.json()["key"], "job", r)


    def test_of_two_options_that_exclude_each_other_the_environment_beats_the_file(self):
        token = self.rl("acquire", "job", "--ttl", "10s").stdout.strip()
        env = {"REDLOCK_SERVERS": self.cluster.spec}
        for in_file, in_env, waited in (("REDLOCK_WAIT=3s", {"REDLOCK_NONBLOCK": "1"}, False),
                                        ("REDLOCK_NONBLOCK=1", {"REDLOCK_WAIT": "500ms"}, True)):
            with self.subTest(in_file=in_file):
                self.write(in_file + "\n")
                started = time.monotonic()
                r = self.run_with(["--json", "acquire", "job"], env=dict(env, **in_env))
                self.assertEqual((r.code, r.json()["reason"]), (75, "timeout" if waited else "busy"), r)
                self.assertLess(time.monotonic() - started, 2.5)
        # Both in one place: neither beats the other, and a file's is a configuration error (78)
        # that names the variables and their lines.
        self.write("REDLOCK_WAIT=3s\nREDLOCK_NONBLOCK=1\n")
        r = self.run_with(["acquire", "job"], env=env)
        self.assertEqual(r.code, 78, r)
        self.assertRegex(r.stderr, r"REDLOCK_NONBLOCK \(.*config:2\) and REDLOCK_WAIT \(.*config:1\) exclude each other")
        self.assertEqual(self.rl("release", "job", "--token", token).code, 0)

    def test_a_mode_on_the_command_line_beats_another_from_the_environment(self):
        env = {"REDLOCK_SERVERS": self.cluster.spec}
        for flags, in_env, says in ((["--shared"], {"REDLOCK_LIMIT": "2"}, {"mode": "shared"}),
                                    (["--limit", "2"], {"REDLOCK_SHARED": "1"}, {"limit": 2}),
                                    (["--limit", "2"], {"REDLOCK_FAIR": "1"}, {"limit": 2}),
                                    (["--fair"], {"REDLOCK_LIMIT": "3"}, {"fairness": "fair"}),
                                    (["--max-queue", "4"], {"REDLOCK_SHARED": "1"}, {})):
            with self.subTest(flags=flags, env=in_env):
                name = "mode-%s" % "".join(c for c in flags[0] + "".join(in_env) if c.isalpha()).lower()
                r = self.run_with(["--json", "acquire", "-n", "--ttl", "5s", name] + flags, env=dict(env, **in_env))
                self.assertEqual(r.code, 0, r)
                j = r.json()
                self.assertEqual({k: j.get(k) for k in says}, says, j)
                self.assertEqual(j.get("mode") == "shared", "--shared" in flags, j)
                self.assertEqual("limit" in j, "--limit" in flags, j)
        # Both from one place: a usage error, as before.
        r = self.run_with(["acquire", "-n", "mode-both"], env=dict(env, REDLOCK_FAIR="1", REDLOCK_LIMIT="2"))
        self.assertEqual(r.code, 64, r)
        self.assertIn("REDLOCK_FAIR is for a mutex: not with REDLOCK_LIMIT", r.stderr)


class Errors(ConfigTest):
    def test_an_unknown_name_is_78_naming_the_line(self):
        path = self.write("REDLOCK_SERVERS=%s\n# fine\nREDLOCK_TTL=5s\nREDLOCK_SERVER=typo\n" % self.cluster.spec)
        for args in (["acquire", "job"], ["status", "job"], ["run", "job", "--", "true"], ["doctor"]):
            r = self.run_with(args)
            self.assertEqual(r.code, 78, r)
            self.assertIn("redlock: error: %s:4: unknown setting REDLOCK_SERVER" % path, r.stderr)
        r = self.run_with(["--json", "status", "job"])
        self.assertEqual((r.code, r.json()["error"]["code"]), (78, 78), r)
        for text, line in (("PATH=/bin\n", 1), ("\nREDLOCK_TOKEN=abc\n", 2), ("REDLOCK_PREFIX\n", 1),
                           ("REDLOCK_PREFIX=\"open\n", 1), ("REDLOCK_CONFIG=/x\n", 1)):
            self.write(text, path=path)
            r = self.run_with(["status", "job"])
            self.assertEqual(r.code, 78, (text, r))
            self.assertIn("%s:%d: " % (path, line), r.stderr)
        self.assertEqual(self.cluster.values("job"), [None] * 3)

    def test_a_bad_value_in_the_file_is_78_the_same_in_the_environment_64(self):
        for setting, shown in (("REDLOCK_TTL=abc", "REDLOCK_TTL ("), ("REDLOCK_JSON=junk", "REDLOCK_JSON (")):
            path = self.write("REDLOCK_SERVERS=%s\n%s\n" % (self.cluster.spec, setting))
            r = self.run_with(["acquire", "-n", "job"])
            self.assertEqual(r.code, 78, (setting, r))
            self.assertIn(shown + path + ":2)", r.stderr)
            self.assertEqual(len(r.stderr.splitlines()), 1, r)
            name, value = setting.split("=")
            r = self.run_with(["-S", self.cluster.spec, "acquire", "-n", "job"], env={name: value})
            self.assertEqual(r.code, 64, (setting, r))
        self.assertEqual(self.cluster.values("job"), [None] * 3)

    def test_a_missing_file_named_by_redlock_config_is_78(self):
        missing = os.path.join(self.home, "nowhere", "config")
        r = self.run_with(["-S", self.cluster.spec, "status", "job"], env={"REDLOCK_CONFIG": missing})
        self.assertEqual(r.code, 78, r)
        self.assertIn(missing, r.stderr)
        self.assertIn("No such file", r.stderr)
        # A directory is no file either.
        r = self.run_with(["-S", self.cluster.spec, "status", "job"], env={"REDLOCK_CONFIG": self.home})
        self.assertEqual(r.code, 78, r)


class NoServers(ConfigTest):
    def test_the_default_server_is_used_with_a_warning(self):
        for extra in ([], ["--json"], ["-v"]):
            r = self.run_with(extra + ["--timeout", "50ms", "status", "job"])
            self.assertIn(r.code, (0, 1, 69), r)
            line = [l for l in r.stderr.splitlines() if "warning" in l]
            self.assertEqual(line, ["redlock: warning: no servers configured (no --servers, no REDLOCK_SERVERS, "
                                    "no configuration file %s/xdg/redlock/config or /etc/redlock/config); "
                                    "using redis://127.0.0.1:6379" % self.home], r)
        # -q silences it.
        r = self.run_with(["-q", "--timeout", "50ms", "status", "job"])
        self.assertNotIn("warning", r.stderr)
        # A file without REDLOCK_SERVERS is named.
        path = self.write("REDLOCK_TIMEOUT=50ms\n")
        r = self.run_with(["acquire", "-n", "job"])
        self.assertIn("redlock: warning: no servers configured (no --servers, no REDLOCK_SERVERS, none in %s); "
                      "using redis://127.0.0.1:6379" % path, r.stderr)
        # Any of them names servers: no warning.
        for args, env in ((["-S", self.cluster.spec], {}), ([], {"REDLOCK_SERVERS": self.cluster.spec})):
            r = self.run_with(args + ["status", "job"], env=env)
            self.assertEqual((r.code, r.stderr), (1, ""), r)


class Password(ConfigTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.locked = Cluster(3, ("--requirepass", SECRET), warm=False)
        cls.spec = cls.locked.spec

    @classmethod
    def tearDownClass(cls):
        cls.locked.stop()
        super().tearDownClass()

    def test_a_password_in_a_file_others_can_read_or_write_is_78(self):
        for mode in (0o640, 0o604, 0o620, 0o602, 0o644):
            path = self.write("REDLOCK_SERVERS=%s\nREDLOCK_PASSWORD=%s\n" % (self.spec, SECRET), mode=mode)
            r = self.run_with(["status", "job"])
            self.assertEqual(r.code, 78, (oct(mode), r))
            self.assertIn("%s:2: REDLOCK_PASSWORD in a file that group or others can read or write (mode 0%o)"
                          % (path, mode), r.stderr)
            self.assertNotIn(SECRET, r.stdout + r.stderr)
        # Without a password in it, a file may be read by all.
        self.write("REDLOCK_SERVERS=%s\n" % self.cluster.spec, mode=0o644)
        self.assertEqual(self.run_with(["status", "job"]).code, 1)

    def test_a_password_from_the_file_works_and_is_never_shown_nor_inherited(self):
        path = self.write("REDLOCK_SERVERS=%s\nREDLOCK_PASSWORD=\"%s\"\n" % (self.spec, SECRET), mode=0o600)
        b = redlock_binary()
        seen = os.path.join(self.home, "seen")
        script = ("env > {s}; cat /proc/$$/cmdline >> {s}; {b} run job -- true; echo nested:$?; "
                  "{b} status job >/dev/null; echo status:$?").format(b=b, s=seen)
        outputs = []
        for extra in ([], ["--json"], ["-vv"]):
            report = os.path.join(self.home, "report.json")
            r = self.run_with(extra + ["run", "--report", report, "job", "--", "sh", "-c", script])
            self.assertEqual(r.code, 0, r)
            with open(seen, "rb") as f:
                child = f.read()
            self.assertNotIn(SECRET.encode(), child)
            self.assertNotIn(b"REDLOCK_PASSWORD=", child)
            self.assertIn(b"nested:0\nstatus:0", r.out)
            with open(report, "rb") as f:
                outputs.append(f.read())
            outputs.append(r.out + r.err)
            for args in (["acquire", "-n", "other"], ["status", "other"], ["doctor", "--ttl", "1s"]):
                outputs.append(self.run_with(extra + args).out)
        r = self.run_with(["-v", "doctor", "--ttl", "1s"])
        outputs.append(r.out + r.err)
        self.assertIn("redlock: password: from the configuration file %s:2" % path, r.stderr)
        for blob in outputs:
            self.assertNotIn(SECRET.encode(), blob)
        # The environment's password beats the file's.
        r = self.run_with(["status", "job"], env={"REDLOCK_PASSWORD": "Cf-wrong"})
        self.assertEqual(r.code, 69, r)
        self.assertIn("WRONGPASS", r.stdout)


class Origins(ConfigTest):
    def test_doctor_v_says_where_each_setting_came_from(self):
        path = self.write("REDLOCK_SERVERS=%s\n\nREDLOCK_TIMEOUT=2s\nREDLOCK_PREFIX=cfg:\n" % self.cluster.spec)
        r = self.run_with(["-v", "--prefix", "flag:", "doctor", "--ttl", "1s"], env={"REDLOCK_USER": "default",
                                                                                   "REDLOCK_PASSWORD": "unused"})
        self.assertIn("redlock: configuration file: %s\n" % path, r.stderr)
        urls = ",".join("redis://127.0.0.1:%d" % s.port for s in self.cluster.servers)
        self.assertIn("redlock: servers: %s, from the configuration file %s:1\n" % (urls, path), r.stderr)
        self.assertIn("redlock: password: from the environment (REDLOCK_PASSWORD)\n", r.stderr)
        self.assertIn("redlock: user: 'default', from the environment (REDLOCK_USER)\n", r.stderr)
        self.assertIn("redlock: timeout: 2s, from the configuration file %s:3\n" % path, r.stderr)
        self.assertIn("redlock: prefix: 'flag:', from the command line\n", r.stderr)
        r = self.run_with(["-v", "-S", self.cluster.spec, "doctor", "--ttl", "1s"], env={"XDG_CONFIG_HOME": self.home})
        self.assertIn("redlock: configuration file: none (looked for %s/redlock/config or /etc/redlock/config)"
                      % self.home, r.stderr)
        self.assertIn("redlock: servers: %s, from the command line\n" % urls, r.stderr)
        self.assertIn("redlock: password: none\n", r.stderr)
        self.assertIn("redlock: timeout: 100ms, from the default\n", r.stderr)


if __name__ == "__main__":
    main()
