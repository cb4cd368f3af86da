"""Random command lines, some sensible and most not, against three real servers: whatever comes in,
redlock answers within its bounds, with an exit status of the contract, at most one error line,
one JSON object when asked for one, and no key left behind by a command it refused.

The command lines come from a fixed seed (REDLOCK_FUZZ_SEED to try others, REDLOCK_FUZZ_CASES for
more of them), so a failure names the command line and happens again."""

import json
import os
import random
import shlex
import subprocess

from harness import ClusterTest, main, redlock, wait_for

SEED = int(os.environ.get("REDLOCK_FUZZ_SEED", "20261123"))
CASES = int(os.environ.get("REDLOCK_FUZZ_CASES", "300"))

DURATIONS = ["1s", "0", "-1", "0.5", "1.5s", "250ms", "2m", "1h", "99999999999999h", "1x", "", "0.0001ms",
             "ms", "+1", "1.", "1..2", "0x10", " 1s", "nan", "inf", "1e3", "18446744073709551616"]
NAMES = ["job", "", "x" * 600, "{tag}", "a b", "é", "\x01", "-n", "a\nb", "*"]
TOKENS = ["tok", "", "a" * 5000, "$(id)", "-x", "é\x7f"]
CODES = ["0", "1", "3", "255", "256", "-1", "abc", "99999999999"]
SERVER_LISTS = ["{all}", "{all}", "{one}", "{one},{one}", "redis://127.0.0.1:1", "bogus://x", "", ",",
                "{one}/99999", "unix:///nonexistent/redis.sock", "rediss://{one}", "redis://:@{one}",
                "redis://u:p@{one}?db=1", "[::1", "{one}:2"]
ACQUIRE = [("--ttl", DURATIONS), ("-n", None), ("-w", DURATIONS), ("-E", CODES), ("--token", TOKENS),
           ("--token-file", ["{dir}/token", "/nonexistent/token", "{dir}", ""]), ("--retry-delay", DURATIONS),
           ("--drift", ["0", "0.5", "1", "-1", "2", "nan", "x"]), ("--owner", ["me", "", "o" * 3000])]
OPTIONS = {
    "acquire": ACQUIRE,
    "run": ACQUIRE + [("--renew", DURATIONS), ("--signal", ["TERM", "KILL", "0", "SIGINT", "99", "foo"]),
                      ("-k", DURATIONS), ("--lost-exit-code", CODES), ("--report", ["{dir}/report", "/nonexistent/r"]),
                      ("--min-hold", ["0", "10ms", "1x", "-1"]), ("--max-hold", DURATIONS),
                      ("-c", ["true", "exit 3", ""])],
    "extend": [("--token", TOKENS), ("--ttl", DURATIONS)],
    "release": [("--token", TOKENS), ("--force", None)],
    "status": [], "doctor": [], "completion": [], "acquier": [], "": [], "list": [],
    "watch": [("--until", ["free", "released", "never", ""])],
}
GLOBAL = [("--timeout", ["50ms", "0", "-1", "1x", "0.2"]), ("--json", None), ("-v", None), ("-q", None),
          ("--prefix", ["p:", "", "x" * 300]), ("-S", SERVER_LISTS), ("--password-file", ["{dir}/nothing"]),
          ("--tls-insecure", None)]
# The lock commands most often; the others, a misspelt one and none now and then.
COMMANDS = ["acquire"] * 4 + ["run"] * 4 + ["extend", "release", "status"] * 2 + ["doctor", "completion", "acquier", "", "list", "watch"]
CHILDREN = [["true"], ["false"], ["sh", "-c", "exit 5"], ["/nonexistent/cmd"], ["/"], ["sleep", "0.05"]]
# Exit statuses of the contract, and those the command lines below can ask for (-E, --lost-exit-code,
# the children's own, 128+N for a child that kills itself).
CONTRACT = {0, 1, 64, 69, 75, 78, 79, 126, 127}
CHOSEN = {3, 5, 255} | {int(c) for c in CODES if c.isdigit() and int(c) < 256}
CRASH_TEXT = ("terminate called", "Assertion", "runtime error:", "AddressSanitizer", "LeakSanitizer", "Segmentation")


def command_line(rnd, cluster, scratch):
    """One random argv (without the binary) for CLUSTER, files under SCRATCH, and its command."""
    fill = {"all": cluster.spec, "one": cluster.servers[0].address, "dir": scratch}

    def pick(values):
        return rnd.choice(values).format(**fill) if values else None

    argv = []
    for option, values in rnd.sample(GLOBAL, rnd.randint(0, 3)):
        argv.append(option)
        if values is not None:
            argv.append(pick(values))
    command = rnd.choice(COMMANDS)
    if command:
        argv.append(command)
    if command in ("acquire", "extend", "release", "status", "run") and rnd.random() < 0.95:
        argv.append(rnd.choice(NAMES))
    if command == "list" and rnd.random() < 0.5:
        argv.append(rnd.choice(["*", "job*", "[", "", "\\"]))
    if command == "watch":  # on a free lock, --until ends it at once; servers that never answer would not
        argv += [rnd.choice(NAMES), "--until", "free"]
        if "-S" in argv:
            del argv[argv.index("-S"):argv.index("-S") + 2]
    if command == "completion" and rnd.random() < 0.8:
        argv.append(rnd.choice(["bash", "zsh", "fish", ""]))
    pool = OPTIONS[command]
    for option, values in rnd.sample(pool, rnd.randint(0, min(4, len(pool)))):
        argv.append(option)
        if values is not None:
            argv.append(pick(values))
    # Never wait for ever on a lock an earlier case left held: one attempt, or a short wait.
    if command in ("acquire", "run") and "-n" not in argv and "-w" not in argv:
        argv += ["-w", "0.3s"]
    if command == "run" and "-c" not in argv and rnd.random() < 0.9:
        argv += ["--"] + rnd.choice(CHILDREN)
    return argv, command


class RandomCommandLines(ClusterTest):
    N = 3

    def keys(self):
        out = set()
        for s in self.cluster.servers:
            with s.client() as c:
                out.update(c.call("KEYS", "*") or [])
        return out

    def test_every_command_line_gets_an_answer_of_the_contract(self):
        rnd = random.Random(SEED)
        scratch = self.scratch_dir()
        for case in range(CASES):
            argv, command = command_line(rnd, self.cluster, scratch)
            shown = "case %d (seed %d): redlock %s" % (case, SEED, shlex.join(argv))
            before = self.keys()
            try:
                r = redlock(argv, servers=self.cluster, timeout=20)
            except subprocess.TimeoutExpired:
                self.fail("%s: no answer within 20 s" % shown)
            err = r.stderr
            self.assertGreaterEqual(r.code, 0, "%s: killed by signal %d" % (shown, -r.code))
            for text in CRASH_TEXT:
                self.assertNotIn(text, err, shown)
            if command != "run":  # run's status is its child's
                self.assertIn(r.code, CONTRACT | CHOSEN, "%s: exit %d, %r" % (shown, r.code, err))
            errors = [line for line in err.splitlines() if line.startswith("redlock: error:")]
            self.assertLessEqual(len(errors), 1, "%s: %r" % (shown, err))
            if r.code in (64, 78):
                self.assertEqual(len(errors), 1, "%s: exit %d without an error line: %r" % (shown, r.code, err))
                # Refused, or given back (a token file that cannot be written): no lock and no
                # owner record left. A fencing counter stays, as it does after every acquisition.
                wait_for(lambda: not [k for k in self.keys() - before if not k.endswith(b":redlock:fence")],
                         timeout=2, what="%s: exit %d left no key" % (shown, r.code))
            if "--json" in argv and command in ("acquire", "extend", "release", "status", "doctor", "list"):
                lines = r.stdout.splitlines()
                self.assertEqual(len(lines), 1, "%s: %r" % (shown, r.stdout[:500]))
                self.assertEqual(json.loads(lines[0])["version"], 1, shown)
            # The next case starts from empty servers, whatever this one took.
            self.cluster.flushall()


if __name__ == "__main__":
    main()
