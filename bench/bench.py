"""The driver of scripts/bench: measures redlock side by side with what users would pick instead, in
one run, and prints ratios (a busy machine changes absolute times, not ratios measured in the same
run) as a Markdown table on stdout and a JSON file.

    bench.py [--quick] [--json PATH] [--rows ROW,ROW...] [-v]

Rows: cycle, semaphore, shared, run, frozen, scale, handoff, handoff-modes, handoff-node, waiter, wake-one, fair,
contention, load, rss, startup
(default: all, in that order). Every server is a redis-server started here on a loopback port and killed by its process id
at the end; every loop is bounded in count and time. Timing targets are reported, never asserted:
the exit status is 0 when every row was measured (met or not), 1 when a row could not be measured,
77 when a reference is missing.

Environment: REDLOCK_BIN (the binary, default build/cli/redlock), REDLOCK_BENCH_NODE_MODULES (where
node-redlock and ioredis are installed; scripts/bench sets it), REDLOCK_BENCH_PYTHON (a python3
with redis-py, default /usr/bin/python3).
"""

import argparse
import datetime
import json
import os
import queue
import random
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from cluster import Cluster, die_with_parent  # noqa: E402

ROWS = ["cycle", "semaphore", "shared", "run", "frozen", "scale", "handoff", "handoff-modes", "handoff-node", "waiter",
        "wake-one", "fair", "contention", "load", "rss", "startup"]
# What rows need besides redis-server and the binary, when it is not every reference: run alone,
# they check for nothing else ("node": node with node-redlock and ioredis installed).
NEEDS = {"load": (), "handoff-modes": (), "handoff-node": ("node",), "waiter": ("node",), "wake-one": (), "fair": ()}
SKIP = 77

# What a shell script using redis-cli would send to release: compare-and-delete.
RELEASE_LUA = 'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end'
# Commands that redlock's and node-redlock's Lua scripts call inside the server: INFO commandstats
# counts them too, but they are not requests a client sent.
SCRIPT_INNER = {"get", "set", "exists", "del", "pexpire", "pttl", "type", "publish", "pubsub|numsub"}


class Missing(Exception):
    pass


def log(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)


def median(xs):
    return statistics.median(xs) if xs else None


def fmt_ms(v):
    if v is None:
        return "—"
    if v < 1:
        return "%.3f ms" % v
    if v < 10:
        return "%.2f ms" % v
    if v < 100:
        return "%.1f ms" % v
    return "%.0f ms" % v


def fmt_ratio(r):
    return "—" if r is None else "%.2f×" % r


def wait_for(pred, timeout, what, interval=0.005):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(interval)
    raise RuntimeError("timed out after %.0f s waiting for %s" % (timeout, what))


def cpu_times():
    """The machine's (busy, idle) CPU seconds so far, every CPU summed (/proc/stat; iowait counts as
    idle)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    idle = ticks[3] + ticks[4]
    return (sum(ticks) - idle) / hz, idle / hz


def channel(name):
    return "{%s}:redlock:wake" % name


class Bench:
    def __init__(self, args):
        self.quick = args.quick
        self.verbose = args.verbose
        self.bin = os.path.abspath(os.environ.get("REDLOCK_BIN") or os.path.join(ROOT, "build", "cli", "redlock"))
        self.python = os.environ.get("REDLOCK_BENCH_PYTHON") or "/usr/bin/python3"
        self.node = "node"
        self.node_modules = os.environ.get("REDLOCK_BENCH_NODE_MODULES") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "redlock-bench", "node", "node_modules")
        self.lock_js = os.path.join(HERE, "node", "lock.js")
        self.holder_js = os.path.join(HERE, "node", "holder.js")
        self.lock_py = os.path.join(HERE, "py", "lock.py")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("REDLOCK_")}
        self.env["NODE_PATH"] = self.node_modules
        self.env["LC_ALL"] = "C"
        self.tmp = tempfile.mkdtemp(prefix="redlock-bench-")
        self.clusters = []
        self.procs = []
        self.lines = []  # the table's rows (dicts), in order
        self.errors = []
        # Repetitions: hyperfine runs per round, warm-up runs, rounds. Many short rounds, the commands'
        # order reversed every other round and the times pooled: a drifting load hits all alike.
        self.runs, self.warmup, self.rounds = (5, 1, 1) if self.quick else (6, 1, 8)
        # Commands of a few milliseconds: more and shorter rounds.
        self.fast = {"runs": 5, "rounds": 1} if self.quick else {"runs": 5, "rounds": 40}

    # ---- plumbing -------------------------------------------------------------------------------

    def check_references(self, rows):
        if not os.path.exists(self.bin):
            raise Missing("redlock binary not found at %s (set REDLOCK_BIN)" % self.bin)
        tools = {"hyperfine": "hyperfine", "redis-server": "redis-server", "redis-cli": "redis-tools",
                 "flock": "util-linux", "/usr/bin/time": "time", "node": "nodejs", "cc": "gcc"}
        every = any(r not in NEEDS for r in rows)
        if not every:
            wanted = {"redis-server"}.union(*(NEEDS[r] for r in rows))
            tools = {t: p for t, p in tools.items() if t in wanted}
        for tool, package in tools.items():
            if subprocess.run(["sh", "-c", "command -v %s" % shlex.quote(tool)], stdout=subprocess.DEVNULL).returncode:
                raise Missing("%s not found (Debian package %s)" % (tool, package))
        if every and subprocess.run([self.python, "-c", "import redis"], stderr=subprocess.DEVNULL).returncode:
            raise Missing("%s cannot import redis (Debian package python3-redis)" % self.python)
        if "node" not in tools:
            return
        for pkg in ("redlock", "ioredis"):
            if not os.path.exists(os.path.join(self.node_modules, pkg, "package.json")):
                raise Missing("node package %s not installed in %s (scripts/bench installs it)" % (pkg, self.node_modules))

    def cluster(self, n):
        c = Cluster(n)
        self.clusters.append(c)
        return c

    def drop(self, c):
        c.stop()
        self.clusters.remove(c)

    def spawn(self, argv, **kw):
        kw.setdefault("env", self.env)
        kw.setdefault("stdin", subprocess.DEVNULL)
        kw.setdefault("stdout", subprocess.DEVNULL)
        kw.setdefault("stderr", subprocess.DEVNULL)
        p = subprocess.Popen(argv, preexec_fn=die_with_parent, **kw)
        self.procs.append(p)
        return p

    def finish(self, p, timeout):
        """Waits for P and returns its (stdout, stderr); kills it (its own group when it has one) at TIMEOUT."""
        try:
            out = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill(p)
            raise RuntimeError("%s did not end within %.0f s" % (shlex.join(p.args), timeout))
        finally:
            if p in self.procs and p.poll() is not None:
                self.procs.remove(p)
        return out

    def kill(self, p):
        if p.poll() is None:
            try:
                if os.getpgid(p.pid) == p.pid:
                    os.killpg(p.pid, signal.SIGKILL)
                else:
                    p.kill()
            except ProcessLookupError:
                pass
            p.wait(timeout=10)

    def cleanup(self):
        for p in list(self.procs):
            self.kill(p)
        self.procs.clear()
        for c in list(self.clusters):
            self.drop(c)
        subprocess.run(["rm", "-rf", self.tmp])

    def path(self, name):
        return os.path.join(self.tmp, name)

    def redlock(self, *args, timeout=30, check=True):
        r = subprocess.run([self.bin] + list(args), env=self.env, capture_output=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError("redlock %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.decode()[-500:]))
        return r

    def hyperfine(self, commands, shell, runs=None, warmup=None, rounds=None):
        """COMMANDS: [(label, command, prepare or None)]. Returns {label: stats in ms} from the pooled runs."""
        runs = runs or self.runs
        warmup = self.warmup if warmup is None else warmup
        rounds = rounds or self.rounds
        times = {label: [] for label, _, _ in commands}
        per_round = {label: [] for label, _, _ in commands}
        cpu = {label: [] for label, _, _ in commands}
        for r in range(rounds):
            order = commands if r % 2 == 0 else list(reversed(commands))
            out = self.path("hyperfine.json")
            argv = ["hyperfine", "--style", "basic", "--runs", str(runs), "--warmup", str(warmup), "--export-json", out]
            if not shell:
                argv.append("-N")
            for _, _, prep in order:
                if prep:
                    argv += ["--prepare", prep]
            for label, cmd, _ in order:
                argv += ["--command-name", label, cmd]
            res = subprocess.run(argv, env=self.env, stdin=subprocess.DEVNULL, capture_output=True, timeout=900)
            if self.verbose:
                sys.stderr.write(res.stdout.decode(errors="replace"))
            if res.returncode != 0:
                raise RuntimeError("hyperfine failed (exit %d): %s %s" % (
                    res.returncode, res.stderr.decode(errors="replace")[-1500:], res.stdout.decode(errors="replace")[-800:]))
            with open(out) as f:
                for result in json.load(f)["results"]:
                    ts = [t * 1000.0 for t in result["times"]]
                    times[result["command"]] += ts
                    per_round[result["command"]].append(median(ts))
                    cpu[result["command"]].append((result["user"] + result["system"]) * 1000.0)  # a mean per round
        stats = {}
        for label, ts in times.items():
            stats[label] = {"median_ms": median(ts), "mean_ms": statistics.fmean(ts), "min_ms": min(ts),
                            "stdev_ms": statistics.stdev(ts) if len(ts) > 1 else 0.0, "n": len(ts),
                            "round_medians_ms": per_round[label],
                            # user + system time (hyperfine's mean of each round, their median), less
                            # sensitive than wall time to waiting for a CPU
                            "cpu_ms": median(cpu[label])}
        return stats

    def cpu_split(self, cluster, commands, runs):
        """COMMANDS: [(label, command, prepare)], run RUNS times each in blocks that alternate their
        order. Returns {label: {"client_us", "servers_us"}}, the means per run of the command's own
        CPU time (user + system, wait4's rusage) and of every thread of CLUSTER's servers
        (/proc/PID/task/*/schedstat, nanoseconds on the CPU), counted from just before the command
        starts to 2 ms after it ends, so that the servers' handling of its closed connections is in
        it and the prepare's is not."""
        def servers_ns():
            total = 0
            for server in cluster.servers:
                task_dir = "/proc/%d/task" % server.proc.pid
                for tid in os.listdir(task_dir):
                    try:
                        with open(os.path.join(task_dir, tid, "schedstat")) as f:
                            total += int(f.read().split()[0])
                    except OSError:  # a thread that just ended
                        pass
            return total

        quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]

        def run(argv):
            pid = os.posix_spawnp(argv[0], argv, self.env, file_actions=quiet)
            _, status, usage = os.wait4(pid, 0)
            if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
                raise RuntimeError("%s failed (wait status %d)" % (shlex.join(argv), status))
            return (usage.ru_utime + usage.ru_stime) * 1e6

        sums = {label: [0.0, 0.0, 0] for label, _, _ in commands}
        blocks = 10
        for b in range(blocks):
            for label, cmd, prep in (commands if b % 2 == 0 else list(reversed(commands))):
                for _ in range(max(1, runs // blocks)):
                    run(shlex.split(prep))
                    time.sleep(0.002)
                    before = servers_ns()
                    client = run(shlex.split(cmd))
                    time.sleep(0.002)
                    sums[label][0] += client
                    sums[label][1] += (servers_ns() - before) / 1000.0
                    sums[label][2] += 1
        return {label: {"client_us": c / n, "servers_us": sv / n} for label, (c, sv, n) in sums.items()}

    def line(self, row, measure, redlock, reference, ratio=None, target="report", met=None, **extra):
        entry = {"row": row, "measure": measure, "redlock": redlock, "reference": reference, "ratio": ratio,
                 "target": target, "met": met}
        entry.update(extra)
        self.lines.append(entry)
        return entry

    def timed_line(self, row, measure, ours, ref, ref_text, target="report", limit=None, **extra):
        ratio = ours["median_ms"] / ref["median_ms"] if ref and ref["median_ms"] else None
        met = None if limit is None or ratio is None else ratio <= limit
        a, b = ours.get("round_medians_ms", []), ref.get("round_medians_ms", [])
        if len(a) > 1 and len(a) == len(b):
            # The spread of the ratio from one round to the next: how much the load moved it.
            rr = sorted(x / y for x, y in zip(a, b))
            extra["round_ratios"] = rr
            extra["ratio_text"] = "%s (rounds %.2f–%.2f)" % (fmt_ratio(ratio), rr[0], rr[-1])
        return self.line(row, measure, {"value": ours["median_ms"], "unit": "ms", "text": fmt_ms(ours["median_ms"]),
                                        "stats": ours},
                         {"value": ref["median_ms"], "unit": "ms", "text": "%s (%s)" % (fmt_ms(ref["median_ms"]), ref_text),
                          "stats": ref},
                         ratio, target, met, **extra)

    # ---- rows -----------------------------------------------------------------------------------

    def row_cycle(self):
        c5, c1 = self.cluster(5), self.cluster(1)
        R, s5, port = shlex.quote(self.bin), c5.spec(), c1.servers[0].port
        cmds = [
            ("redlock", 't=$(%s -S %s acquire -n bench-cycle) && %s -S %s release bench-cycle --token "$t"' % (R, s5, R, s5), None),
            ("redis-cli", 'r=$(redis-cli -p %d SET bench-cycle tok NX PX 30000) && [ "$r" = OK ] && '
                          'redis-cli -p %d EVAL %s 1 bench-cycle tok >/dev/null' % (port, port, shlex.quote(RELEASE_LUA)), None),
            ("node-redlock", "%s %s cycle %s bench-cycle" % (self.node, shlex.quote(self.lock_js), s5), None),
            ("redis-py", "%s %s cycle 127.0.0.1:%d bench-cycle-py" % (shlex.quote(self.python), shlex.quote(self.lock_py), port), None),
        ]
        st = self.hyperfine(cmds, shell=True)
        m = "`acquire -n` + `release` (2 processes), 5 servers"
        self.timed_line("cycle", m, st["redlock"], st["redis-cli"], "redis-cli `SET NX PX` + `EVAL`, 1 server",
                        target="≤ 0.6× redis-cli", limit=0.6)
        self.timed_line("cycle", m, st["redlock"], st["node-redlock"], "node-redlock lock+unlock, 5 servers, 1 process")
        self.timed_line("cycle", m, st["redlock"], st["redis-py"], "redis-py `Lock` acquire+release, 1 server, 1 process")

    def cycle_beside_mutex(self, row, flags, name, measure):
        """`acquire -n FLAGS` + `release FLAGS` (2 processes) on 5 servers, beside the mutex's cycle."""
        c5 = self.cluster(5)
        R, s5 = shlex.quote(self.bin), c5.spec()
        cycle = 't=$(%s -S %s acquire -n %s%s) && %s -S %s release %s%s --token "$t"'
        cmds = [("mutex", cycle % (R, s5, "", "bench-mutex", R, s5, "", "bench-mutex"), None),
                (row, cycle % (R, s5, flags, name, R, s5, flags, name), None)]
        st = self.hyperfine(cmds, shell=True)
        self.timed_line(row, measure, st[row], st["mutex"], "the mutex: `acquire -n` + `release`, 5 servers")

    def row_semaphore(self):
        """A semaphore's cycle beside the mutex's: its attempt is one read-only probe of every slot, then
        the slot's own acquire; its release finds the slot from the token (one more probe)."""
        self.cycle_beside_mutex("semaphore", "--limit 3 ", "bench-sem",
                                "`acquire -n --limit 3` + `release --limit 3` (2 processes), 5 servers")

    def row_shared(self):
        """A reader's cycle beside the mutex's: join (the readers' set and the marker) and leave, each
        one script per server, as the mutex's acquire and release are."""
        self.cycle_beside_mutex("shared", "--shared ", "bench-shared",
                                "reader: `acquire -n --shared` + `release --shared` (2 processes), 5 servers")

    def row_run(self):
        c5 = self.cluster(5)
        lockfile = self.path("run.lock")
        open(lockfile, "w").close()
        st = self.hyperfine([("redlock", "%s -S %s run -n bench-run -- true" % (self.bin, c5.spec()), None),
                             ("flock", "flock %s true" % lockfile, None)], shell=False,
                            **self.fast)
        self.timed_line("run", "`run -n NAME -- true`, 5 servers", st["redlock"], st["flock"], "`flock FILE true`",
                        target="≤ 1.5× flock", limit=1.5)

    def row_frozen(self):
        healthy, frozen = self.cluster(5), self.cluster(5)
        frozen.servers[0].freeze()
        frozen.servers[1].freeze()
        cmds = []
        for label, c in (("healthy", healthy), ("frozen", frozen)):
            # Each timed acquire takes the lock anew: the untimed --prepare frees it first, on the
            # servers that can hold it. A frozen server never runs the acquire waiting unread in its
            # socket; freeing it there too would wait out its --timeout before every timed run, and a
            # run after 100 ms of idle CPUs is slower than one after 2 ms (about 0.45 ms here): that
            # idle gap, not the frozen servers, is what the ratio would measure.
            self.redlock("-S", c.spec(), "acquire", "-n", "bench-frozen")
            live = ",".join(s.address for s in c.servers if not s.frozen)
            cmds.append((label, "%s -S %s acquire -n bench-frozen" % (self.bin, c.spec()),
                         "%s -S %s release --force bench-frozen" % (self.bin, live)))
        st = self.hyperfine(cmds, shell=False, **self.fast)
        self.timed_line("frozen", "`acquire -n` with 2 of 5 servers frozen (SIGSTOP)", st["frozen"], st["healthy"],
                        "the same, 5 healthy", target="≤ 1.5× healthy", limit=1.5,
                        note="servers 1 and 2 of the list are the frozen ones")
        # node-redlock sets no deadline on a server's answer: bounded here.
        bound = 5.0 if self.quick else 10.0
        t0 = time.monotonic()
        p = self.spawn([self.node, self.lock_js, "cycle", frozen.spec(), "bench-frozen-node"], start_new_session=True)
        try:
            p.wait(timeout=bound)
            node = {"returned": True, "exit": p.returncode, "elapsed_ms": (time.monotonic() - t0) * 1000}
            text = "returned in %s (exit %d)" % (fmt_ms(node["elapsed_ms"]), p.returncode)
        except subprocess.TimeoutExpired:
            self.kill(p)
            node = {"returned": False, "bound_s": bound}
            text = "did not return within %.0f s" % bound
        self.procs.remove(p)
        self.line("frozen", "`acquire -n` with 2 of 5 servers frozen",
                  {"value": st["frozen"]["median_ms"], "unit": "ms", "text": fmt_ms(st["frozen"]["median_ms"])},
                  dict(node, text="node-redlock lock+unlock: " + text), None, "report", None)

    def floor(self):
        """The floor on this machine, built once: the least any one-shot client of N servers does
        (bench/floor.c)."""
        floor = self.path("floor")
        if not os.path.exists(floor):
            built = subprocess.run(["cc", "-O2", "-o", floor, os.path.join(HERE, "floor.c")], capture_output=True)
            if built.returncode != 0:
                raise RuntimeError("cc bench/floor.c: %s" % built.stderr.decode(errors="replace")[-500:])
        return floor

    def row_scale(self):
        c9 = self.cluster(9)
        cmds = []
        for n in (3, 5, 7, 9):
            name = "bench-scale-%d" % n
            self.redlock("-S", c9.spec(n), "acquire", "-n", name)
            cmds.append((str(n), "%s -S %s acquire -n %s" % (self.bin, c9.spec(n), name),
                         "%s -S %s release --force %s" % (self.bin, c9.spec(n), name)))
        floor = self.floor()
        for n in (3, 9):
            ports = " ".join(str(s.port) for s in c9.servers[:n])
            cmds.append(("floor-%d" % n, "%s bench-floor-%d %s" % (floor, n, ports),
                         "%s -bench-floor-%d %s" % (floor, n, ports)))
        st = self.hyperfine(cmds, shell=False, **self.fast)
        for n in (5, 7, 9):
            self.timed_line("scale", "`acquire -n` at %d servers" % n, st[str(n)], st["3"], "at 3 servers",
                            target="9 ≤ 1.3× 3" if n == 9 else "report", limit=1.3 if n == 9 else None)
        self.timed_line("scale", "the same for `bench/floor.c` (connect, `SET NX PX`, close: the least a client "
                        "can do) at 9 servers", st["floor-9"], st["floor-3"], "at 3 servers")
        # Where the time of an extra server goes: CPU, the client's own and the servers', per run.
        # With every process on the same few CPUs, the extra servers' CPU adds to the wall time
        # instead of overlapping as it would with each server on its own machine.
        picked = [c for c in cmds if c[0] in ("3", "9", "floor-3", "floor-9")]
        cpu = self.cpu_split(c9, picked, 40 if self.quick else 300)

        def per_server(label):
            a, b = cpu[label + "3"], cpu[label + "9"]
            client, servers = (b["client_us"] - a["client_us"]) / 6, (b["servers_us"] - a["servers_us"]) / 6
            return {"client_us": client, "servers_us": servers, "value": client + servers, "unit": "µs",
                    "text": "%.0f µs (client %.0f + servers %.0f)" % (client + servers, client, servers), "runs": cpu}

        ours, floor_cost = per_server(""), per_server("floor-")
        ratio = ours["value"] / floor_cost["value"] if floor_cost["value"] > 0 else None
        self.line("scale", "CPU time one extra server costs an `acquire -n` (its client and the servers, "
                  "from 3 to 9 servers; rusage and schedstat)", ours,
                  dict(floor_cost, text=floor_cost["text"] + " `bench/floor.c`"),
                  ratio, "≤ 1.2× floor", ratio is not None and ratio <= 1.2, cpus=os.cpu_count())

    @staticmethod
    def _blocked_in_flock(pid, inode):
        """Whether PID waits for a lock on INODE: /proc/locks lists a blocked request as
        `N: -> FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF`."""
        with open("/proc/locks") as f:
            for line in f:
                parts = line.split()
                if "->" in parts:
                    i = parts.index("->")
                    if parts[i + 4:i + 6] and parts[i + 4] == str(pid) and parts[i + 5].endswith(":%d" % inode):
                        return True
        return False

    def _handoff_once(self, tool, c5, go, started, lockfile):
        if tool == "redlock":
            base = [self.bin, "-S", c5.spec(), "run", "bench-handoff", "--"]
            ready = lambda waiter: c5.numsub(channel("bench-handoff")) == len(c5.servers)  # noqa: E731
        else:
            base = ["flock", lockfile]
            inode = os.stat(lockfile).st_ino
            ready = lambda waiter: self._blocked_in_flock(waiter.pid, inode)  # noqa: E731
        return self._handoff_between(base, base, ready, go, started)

    def _handoff_between(self, holder_base, waiter_base, ready, go, started):
        """The holder's command (HOLDER_BASE + sh -c …) ends once the waiter (WAITER_BASE + date) is
        READY(waiter): the ms from the holder's `date +%s%N` at its end to the waiter's at its start."""
        for f in (go, started):
            if os.path.exists(f):
                os.unlink(f)
        hold = ("touch %s; i=0; while [ ! -e %s ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; date +%%s%%N"
                % (started, go))
        holder = self.spawn(holder_base + ["sh", "-c", hold], stdout=subprocess.PIPE)
        try:
            wait_for(lambda: os.path.exists(started), 20, "the holder's command to start")
            waiter = self.spawn(waiter_base + ["date", "+%s%N"], stdout=subprocess.PIPE)
            try:
                wait_for(lambda: ready(waiter), 20, "the waiter to wait")
                time.sleep(0.1)  # the same for both: the waiter is asleep by now
                open(go, "w").close()
                end = int(self.finish(holder, 30)[0])
                start = int(self.finish(waiter, 30)[0])
            finally:
                self.kill(waiter)
        finally:
            self.kill(holder)
        return (start - end) / 1e6

    def row_handoff(self):
        c5 = self.cluster(5)
        go, started, lockfile = self.path("go"), self.path("started"), self.path("handoff.lock")
        open(lockfile, "w").close()
        reps = 5 if self.quick else 40
        samples = {"redlock": [], "flock": []}
        for i in range(reps):
            for tool in (("redlock", "flock") if i % 2 == 0 else ("flock", "redlock")):
                samples[tool].append(self._handoff_once(tool, c5, go, started, lockfile))
        # Blocks of 5 hand-offs stand for hyperfine's rounds in the ratio's spread.
        st = {k: {"median_ms": median(v), "min_ms": min(v), "max_ms": max(v), "n": len(v), "samples_ms": v,
                  "round_medians_ms": [median(v[i:i + 5]) for i in range(0, len(v) - 4, 5)]}
              for k, v in samples.items()}
        self.timed_line("handoff", "hand-off: holder's command ends → waiting `run`'s command starts, 5 servers",
                        st["redlock"], st["flock"], "flock, same shape", target="≤ 2× flock", limit=2.0,
                        clock="date +%s%N on both sides")

    def row_handoff_modes(self):
        """The hand-off of `handoff` in each mode, interleaved in one run on 5 servers: the mutex; a
        semaphore of one slot (`--limit 1`) held, one waiter; a writer (`run NAME`) behind one reader
        (`run --shared NAME`). Each waiter is known to wait (listening on every server) first."""
        if self.quick:
            self.line("handoff-modes", "hand-off per mode", {"value": None, "text": "skipped"},
                      {"value": None, "text": "not with --quick (about 9 s)"}, skipped=True)
            return
        c5 = self.cluster(5)
        go, started = self.path("go"), self.path("started")
        R = [self.bin, "-S", c5.spec(), "run"]
        kinds = {"mutex": ([], [], "bench-hm-mutex"), "semaphore": (["--limit", "1"], ["--limit", "1"], "bench-hm-sem"),
                 "writer": (["--shared"], [], "bench-hm-shared")}
        samples = {k: [] for k in kinds}
        reps = 20
        for i in range(reps):
            for kind in (list(kinds) if i % 2 == 0 else list(reversed(kinds))):
                holder_flags, waiter_flags, name = kinds[kind]
                ready = lambda waiter, name=name: c5.numsub(channel(name)) == len(c5.servers)  # noqa: E731
                samples[kind].append(self._handoff_between(R + holder_flags + [name, "--"], R + waiter_flags + [name, "--"],
                                                           ready, go, started))
        st = {k: {"median_ms": median(v), "min_ms": min(v), "max_ms": max(v), "n": len(v), "samples_ms": v,
                  "round_medians_ms": [median(v[i:i + 5]) for i in range(0, len(v) - 4, 5)]}
              for k, v in samples.items()}
        ref = "the mutex's hand-off, same run"
        self.timed_line("handoff-modes", "hand-off, semaphore `--limit 1` full, one waiting `run --limit 1`, 5 servers",
                        st["semaphore"], st["mutex"], ref, clock="date +%s%N on both sides")
        self.timed_line("handoff-modes", "hand-off, reader's `run --shared` ends → waiting writer's `run` starts, 5 servers",
                        st["writer"], st["mutex"], ref, clock="date +%s%N on both sides")

    def row_waiter(self):
        a, b = self.cluster(5), self.cluster(5)
        name = "bench-waiter"
        for c in (a, b):
            self.redlock("-S", c.spec(), "acquire", "--ttl", "600s", name)
        window = 6.0 if self.quick else 20.0
        ours = self.spawn([self.bin, "-S", a.spec(), "run", name, "--", "true"])
        theirs = self.spawn([self.node, self.lock_js, "wait", b.spec(), name])
        try:
            wait_for(lambda: a.numsub(channel(name)) == len(a.servers), 20, "redlock's subscriptions")
            time.sleep(1.5)  # node has connected and is in its retry loop; redlock past its first attempts
            before = (a.commandstats(), b.commandstats())
            t0 = time.monotonic()
            time.sleep(window)
            after = (a.commandstats(), b.commandstats())
            elapsed = time.monotonic() - t0
            for p, what in ((ours, "redlock"), (theirs, "node-redlock")):
                if p.poll() is not None:
                    raise RuntimeError("the %s waiter ended (exit %s) while the lock was held" % (what, p.returncode))
        finally:
            for p in (ours, theirs):
                self.kill(p)
                self.procs.remove(p)
        rates = []
        for (s0, s1), c in zip(zip(before, after), (a, b)):
            delta = {k: s1.get(k, 0) - s0.get(k, 0) for k in s1 if s1.get(k, 0) != s0.get(k, 0)}
            # Our own INFO commandstats: the first snapshot's call on each server lies in the window.
            delta["info"] = delta.get("info", 0) - len(c.servers)
            top = {k: v for k, v in delta.items() if k not in SCRIPT_INNER and v}
            rates.append({"per_s": sum(top.values()) / elapsed, "top_level": top,
                          "inside_scripts": {k: v for k, v in delta.items() if k in SCRIPT_INNER}, "window_s": elapsed})
        r, n = rates
        ratio = r["per_s"] / n["per_s"] if n["per_s"] else None
        self.line("waiter", "commands/s one waiting `run` costs the 5 servers (top-level, INFO commandstats)",
                  dict(r, value=r["per_s"], unit="cmd/s", text="%.2f cmd/s" % r["per_s"]),
                  dict(n, value=n["per_s"], unit="cmd/s", text="%.2f cmd/s (node-redlock retry loop, retryCount -1)" % n["per_s"]),
                  ratio, "≤ 2 cmd/s", r["per_s"] <= 2.0)

    # Hold times, TTLs and modes of the node-redlock holder in "hand-off from node-redlock": the same
    # sequence on every run. `using` TTLs are short, so that node-redlock 5 extends the lock (it does
    # once less than 500 ms is left) in most of those rounds, and holds past the TTL in about half
    # of them; `lock` TTLs outlast the hold.
    HOLDER_TTLS_MS = {"lock": (2000, 10000, 30000), "using": (700, 1000)}

    def _node_reader(self, holder):
        """A queue of the node holder's stdout lines, filled by a thread of its own."""
        lines = queue.Queue()

        def pump():
            for raw in holder.stdout:
                lines.put(raw.decode(errors="replace").split())
            lines.put(None)
        threading.Thread(target=pump, daemon=True).start()
        return lines

    @staticmethod
    def _holder_says(lines, word, timeout):
        try:
            got = lines.get(timeout=timeout)
        except queue.Empty:
            raise RuntimeError("the node-redlock holder said nothing for %.0f s (expected %r)" % (timeout, word))
        if not got or got[0] != word:
            raise RuntimeError("the node-redlock holder: expected %r, got %r" % (word, " ".join(got or ["(end)"])))
        return [int(x) for x in got[1:]]

    def _node_handoff_once(self, c, holder, lines, mode, hold_ms, ttl_ms):
        """One round: node-redlock takes NAME; a waiting `acquire -w 10s` is started behind it; the
        time from the holder's release (the instant before it was sent) to the waiter's exit with
        the lock, in ms (an upper bound: the waiter's exit comes after its acquisition)."""
        name = "bench-handoff-node"
        holder.stdin.write(b"%s %d %d\n" % (mode.encode(), hold_ms, ttl_ms))
        holder.stdin.flush()
        self._holder_says(lines, "held", 15)
        waiter = self.spawn([self.bin, "-S", c.spec(), "--json", "acquire", "-w", "10s", name], stdout=subprocess.PIPE)
        released, _ = self._holder_says(lines, "released", 15)
        out = self.finish(waiter, 15)[0]
        got = time.monotonic_ns()
        j = json.loads(out.decode() or "{}")
        if waiter.returncode != 0 or not j.get("acquired"):
            raise RuntimeError("the waiter behind node-redlock exited %d: %s" % (waiter.returncode, out[-300:]))
        self.redlock("-S", c.spec(), "release", name, "--token", j["token"])
        ms = (got - released) / 1e6
        if ms < 0:
            raise RuntimeError("the waiter got the lock %.0f ms before node-redlock released it (%s)" % (-ms, mode))
        return {"ms": ms, "mode": mode, "hold_ms": hold_ms, "ttl_ms": ttl_ms, "attempts": j.get("attempts"),
                "past_ttl": hold_ms > ttl_ms}  # held past its TTL: only auto-extension makes that possible

    def _node_handoff_rounds(self, c, rounds, rng):
        holder = self.spawn([self.node, self.holder_js, c.spec(), "bench-handoff-node"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
        try:
            lines = self._node_reader(holder)
            out = []
            for i in range(rounds):
                mode = ("lock", "using")[i % 2]
                out.append(self._node_handoff_once(c, holder, lines, mode, rng.randint(300, 1500),
                                                   rng.choice(self.HOLDER_TTLS_MS[mode])))
            holder.stdin.close()  # the end of its input: it disconnects and exits
            holder.wait(timeout=15)
            return out
        finally:
            self.kill(holder)
            if holder in self.procs:
                self.procs.remove(holder)

    def row_handoff_node(self):
        """A waiter behind a holder that never announces its release (node-redlock): the time from
        its release to the waiter's acquisition, on 1 and on 5 servers."""
        if not os.path.exists(os.path.join(self.node_modules, "redlock5", "package.json")):
            self.line("handoff-node", "hand-off from node-redlock", {"value": None, "text": "skipped"},
                      {"text": "node-redlock 5 (`redlock5` of bench/node/package.json) not installed in %s"
                       % self.node_modules}, None, "< 1 s", None, skipped=True)
            return
        rng = random.Random(24)
        rounds = 4 if self.quick else 20
        for n in (1, 5):
            samples = self._node_handoff_rounds(self.cluster(n), rounds, rng)
            ms = [s["ms"] for s in samples]
            worst, med = max(ms), median(ms)
            self.line("handoff-node", "hand-off from node-redlock: its release → `acquire -w 10s` has the lock, "
                      "%d server%s, %d rounds" % (n, "s" if n > 1 else "", len(ms)),
                      {"value": med, "worst_ms": worst, "unit": "ms", "samples": samples,
                       "text": "median %s, worst %s" % (fmt_ms(med), fmt_ms(worst))},
                      {"text": "node-redlock holding 0.3–1.5 s: `lock()`/`unlock()` (4.2.0) and `using()` with "
                               "auto-extension (5.0.0-beta.2), alternately; %d held past their TTL"
                               % sum(s["past_ttl"] for s in samples)},
                      None, "worst < 1 s", worst < 1000.0)

    def _wake_one_window(self, c5, waiters, warm, window, name="bench-wake", flags=""):
        """WAITERS processes looping `run -w 60s --ttl 5s NAME-WAITERS -- true` (FLAGS added) on 5 servers,
        a name of its own for each count (the processes of the count before are killed, and a holder
        killed holds its lock until its TTL lapses: 5 s of the next window would go to waiting it out):
        after WARM seconds, what WINDOW seconds cost each server (INFO after CONFIG RESETSTAT) and how
        many hand-offs they made: the runs that held the lock (exit 0), each of which appends a byte
        to a file. Not the fencing counter's rise: an attempt that takes a minority of servers and
        gives them back raises it there too."""
        name = "%s-%d" % (name, waiters)
        one = "%s -S %s run -w 60s --ttl 5s %s %s -- true" % (shlex.quote(self.bin), c5.spec(), flags, name)
        held = self.path("held-" + name)
        open(held, "wb").close()
        loop = "while :; do %s && printf x >> %s; done" % (one, shlex.quote(held))
        ps = [self.spawn(["sh", "-c", loop], start_new_session=True) for _ in range(waiters)]
        try:
            time.sleep(warm)
            clients = [s.client() for s in c5.servers]
            for c in clients:
                c.config_resetstat()
            before = os.path.getsize(held)
            t0, cpu0 = time.monotonic(), cpu_times()
            time.sleep(window)
            stats = [(c.info("commandstats"), c.info("stats")) for c in clients]
            handoffs = os.path.getsize(held) - before
            elapsed, cpu1 = time.monotonic() - t0, cpu_times()
            for c in clients:
                c.close()
        finally:
            for p in ps:
                self.kill(p)
                if p in self.procs:
                    self.procs.remove(p)
        scripts = [sum(cs.get("cmdstat_" + k, {}).get("calls", 0) for k in ("evalsha", "eval", "fcall"))
                   for cs, _ in stats]
        # Every command the server ran, the scripts' own inside them included, less our two INFOs.
        commands = [st["total_commands_processed"] - 2 for _, st in stats]
        return {"waiters": waiters, "window_s": elapsed, "handoffs": handoffs,
                "cycles_per_s": handoffs / elapsed,
                "script_calls_per_handoff": max(scripts) / handoffs if handoffs else None,
                "script_calls_per_handoff_by_server": [x / handoffs if handoffs else None for x in scripts],
                "commands_per_handoff": max(commands) / handoffs if handoffs else None,
                "cpu_ms_per_handoff": (cpu1[0] - cpu0[0]) * 1000 / handoffs if handoffs else None,
                "idle_share": (cpu1[1] - cpu0[1]) / ((cpu1[0] - cpu0[0]) + (cpu1[1] - cpu0[1]))}

    def row_wake_one(self):
        """A release wakes one waiter, not all: script calls per hand-off on each server and cycles
        per second as the waiters grow, with processes looping `run -w` on one name."""
        c5 = self.cluster(5)
        counts, warm, window = ((2, 10), 1.0, 2.0) if self.quick else ((2, 50, 100), 3.0, 10.0)
        runs = {n: self._wake_one_window(c5, n, warm, window) for n in counts}
        base, most = runs[counts[0]], counts[-1]
        mid = 50 if 50 in runs else most
        m = runs[mid]
        fmt = lambda v: "—" if v is None else "%.2f" % v  # noqa: E731
        self.line("wake-one", "script calls (EVALSHA/EVAL/FCALL) per hand-off on each server (the most of the 5), "
                  "%d processes looping `run -w 60s --ttl 5s NAME -- true`" % mid,
                  dict(m, value=m["script_calls_per_handoff"], unit="calls",
                       text="%s (%d hand-offs in %.0f s)" % (fmt(m["script_calls_per_handoff"]), m["handoffs"],
                                                           m["window_s"])),
                  dict(base, value=base["script_calls_per_handoff"], unit="calls",
                       text="%s at %d processes" % (fmt(base["script_calls_per_handoff"]), counts[0])),
                  None, "≤ 2.5 at 50",
                  None if mid != 50 or m["script_calls_per_handoff"] is None else m["script_calls_per_handoff"] <= 2.5)
        self.line("wake-one", "all commands a server runs per hand-off (the scripts' own inside them included), "
                  "%d processes" % mid,
                  dict(m, value=m["commands_per_handoff"], unit="commands", text=fmt(m["commands_per_handoff"])),
                  dict(base, value=base["commands_per_handoff"], unit="commands",
                       text="%s at %d processes" % (fmt(base["commands_per_handoff"]), counts[0])),
                  None, "report", None)
        cpu = lambda r: "%s ms (CPUs idle %.0f%%)" % (fmt(r["cpu_ms_per_handoff"]), r["idle_share"] * 100)  # noqa: E731
        self.line("wake-one", "CPU time per hand-off, every process on the machine (/proc/stat), %d processes" % mid,
                  dict(m, value=m["cpu_ms_per_handoff"], unit="ms", text=cpu(m)),
                  dict(base, value=base["cpu_ms_per_handoff"], unit="ms", text="%s at %d processes" % (cpu(base),
                                                                                                        counts[0])),
                  None, "report", None)
        for n in counts[1:]:
            r = runs[n]
            ratio = r["cycles_per_s"] / base["cycles_per_s"] if base["cycles_per_s"] else None
            self.line("wake-one", "hand-offs per second, %d processes looping `run -w` on one name" % n,
                      dict(r, value=r["cycles_per_s"], unit="/s", text="%.1f/s" % r["cycles_per_s"]),
                      dict(base, value=base["cycles_per_s"], unit="/s",
                           text="%.1f/s at %d processes" % (base["cycles_per_s"], counts[0])),
                      ratio, "≥ 0.8× at 2" if n in (50, 100) else "report",
                      None if n not in (50, 100) or ratio is None else ratio >= 0.8)

    def row_fair(self):
        """--fair: 20 processes looping `run --fair -w` on one name, served in arrival order: hand-offs
        per second against 2 such processes, and script calls per hand-off on each server."""
        c5 = self.cluster(5)
        counts, warm, window = ((2, 10), 1.0, 2.0) if self.quick else ((2, 20), 3.0, 10.0)
        runs = {n: self._wake_one_window(c5, n, warm, window, name="bench-fair", flags="--fair") for n in counts}
        base, r = runs[counts[0]], runs[counts[-1]]
        fmt = lambda v: "—" if v is None else "%.2f" % v  # noqa: E731
        self.line("fair", "script calls per hand-off on each server (the most of the 5), %d processes looping "
                  "`run --fair -w 60s --ttl 5s NAME -- true`" % counts[-1],
                  dict(r, value=r["script_calls_per_handoff"], unit="calls",
                       text="%s (%d hand-offs in %.0f s)" % (fmt(r["script_calls_per_handoff"]), r["handoffs"],
                                                           r["window_s"])),
                  dict(base, value=base["script_calls_per_handoff"], unit="calls",
                       text="%s at %d processes" % (fmt(base["script_calls_per_handoff"]), counts[0])),
                  None, "report", None)
        ratio = r["cycles_per_s"] / base["cycles_per_s"] if base["cycles_per_s"] else None
        self.line("fair", "hand-offs per second, %d processes looping `run --fair -w` on one name" % counts[-1],
                  dict(r, value=r["cycles_per_s"], unit="/s", text="%.1f/s" % r["cycles_per_s"]),
                  dict(base, value=base["cycles_per_s"], unit="/s",
                       text="%.1f/s at %d processes" % (base["cycles_per_s"], counts[0])),
                  ratio, "report", None)

    def row_contention(self):
        c5 = self.cluster(5)
        procs, runs = (5, 4) if self.quick else (20, 20)
        body = "n=$(cat %s); echo $((n + 1)) > %s"
        result = {}
        for tool in ("redlock", "flock"):
            counter, fails, lockfile = self.path("counter-" + tool), self.path("fails-" + tool), self.path("contention.lock")
            with open(counter, "w") as f:
                f.write("0\n")
            open(fails, "w").close()
            open(lockfile, "w").close()
            rmw = shlex.quote(body % (counter, counter))
            if tool == "redlock":
                one = "%s -S %s run -w 120s bench-contention -- sh -c %s" % (shlex.quote(self.bin), c5.spec(), rmw)
            else:
                one = "flock -w 120 %s sh -c %s" % (lockfile, rmw)
            loop = "i=0; while [ $i -lt %d ]; do %s || echo $? >> %s; i=$((i+1)); done" % (runs, one, fails)
            t0 = time.monotonic()
            ps = [self.spawn(["sh", "-c", loop], start_new_session=True) for _ in range(procs)]
            deadline = t0 + 600
            for p in ps:
                self.finish(p, max(1.0, deadline - time.monotonic()))
            wall = time.monotonic() - t0
            with open(counter) as f:
                final = int(f.read().strip() or 0)
            with open(fails) as f:
                failed = [int(x) for x in f.read().split()]
            result[tool] = {"wall_s": wall, "final_counter": final, "expected": procs * runs, "failed_runs": len(failed),
                            "failed_exit_codes": sorted(set(failed))}
        ours, ref = result["redlock"], result["flock"]
        lost = ours["expected"] - ours["final_counter"]
        ok = lost == 0 and ours["failed_runs"] == 0
        self.line("contention", "%d processes × %d `run -w` on one name (read-modify-write of a counter): wall time"
                  % (procs, runs),
                  dict(ours, value=ours["wall_s"], unit="s",
                       text="%.2f s, counter %d/%d" % (ours["wall_s"], ours["final_counter"], ours["expected"])),
                  dict(ref, value=ref["wall_s"], unit="s",
                       text="%.2f s, counter %d/%d (flock -w)" % (ref["wall_s"], ref["final_counter"], ref["expected"])),
                  ours["wall_s"] / ref["wall_s"], "report; no run lost", ok)

    def row_load(self):
        """False 69s on a loaded host: many concurrent clients, each doing `acquire -n` + `release` on
        names of its own against 5 healthy servers. Every exit 69 is a healthy server taken for a
        dead one because the client waited for a CPU, not for the server."""
        c5 = self.cluster(5)
        R, s5 = shlex.quote(self.bin), c5.spec()
        cycles = 200 if self.quick else 2000
        for clients in (50, 100):
            each = max(1, cycles // clients)
            codes = self.path("load-codes-%d" % clients)
            open(codes, "w").close()
            one = ('t=$(%s -S %s acquire -n --ttl 30s bench-load-$c-$i); r=$?; echo "a $r" >> %s; '
                   '[ $r -eq 0 ] && { %s -S %s release bench-load-$c-$i --token "$t"; echo "r $?" >> %s; }'
                   % (R, s5, codes, R, s5, codes))
            loop = "i=0; while [ $i -lt %d ]; do %s; i=$((i+1)); done" % (each, one)
            t0 = time.monotonic()
            ps = [self.spawn(["sh", "-c", loop], env=dict(self.env, c=str(k))) for k in range(clients)]
            for p in ps:
                self.finish(p, max(1.0, t0 + 900 - time.monotonic()))
            wall = time.monotonic() - t0
            with open(codes) as f:
                pairs = [line.split() for line in f if line.strip()]
            acquires = [int(c) for kind, c in pairs if kind == "a"]
            releases = [int(c) for kind, c in pairs if kind == "r"]
            false69 = acquires.count(69) + releases.count(69)
            # A cycle that left no trace (a loop that died) is a failure too.
            other = len([c for c in acquires + releases if c not in (0, 69)]) + clients * each - len(acquires)
            self.line("load", "false 69s under load: %d clients × %d (`acquire -n` + `release`), distinct names, "
                      "5 healthy servers" % (clients, each),
                      {"value": false69, "unit": "exits", "cycles": clients * each, "acquires_69": acquires.count(69),
                       "releases_69": releases.count(69), "other_failures": other, "wall_s": wall,
                       "text": "%d exit 69 in %d cycles (%d other failures, %.1f s)" % (false69, clients * each, other,
                                                                                       wall)},
                      "—", None, "0", false69 == 0 and other == 0)

    def row_rss(self):
        c5, c1 = self.cluster(5), self.cluster(1)
        reps = 1 if self.quick else 3
        own = "sleep 2; grep VmHWM /proc/$PPID/status"  # the parent's own peak, read by its child at the end
        big = "b = b'x' * (64 << 20)"  # a child with a 64 MiB peak
        runs = {}
        for i in range(reps):
            f1, f2 = self.path("rss-%d.lock" % i), self.path("rss-own-%d.lock" % i)
            cmds = {
                "redlock": [self.bin, "-S", c5.spec(), "run", "--ttl", "1s", "bench-rss-%d" % i, "--", "sleep", "2"],
                "redlock-own": [self.bin, "-S", c5.spec(), "run", "--ttl", "1s", "bench-rss-own-%d" % i, "--",
                                "sh", "-c", own],
                "redlock-big-child": [self.bin, "-S", c5.spec(), "run", "bench-rss-big-%d" % i, "--", self.python, "-c", big],
                "redis-cli": ["redis-cli", "-p", str(c1.servers[0].port), "BLPOP", "bench-rss-list-%d" % i, "2"],
                "flock": ["flock", f1, "sleep", "2"],
                "flock-own": ["flock", f2, "sh", "-c", own],
                "node-redlock": [self.node, self.lock_js, "hold", c5.spec(), "bench-rss-node-%d" % i, "2000"],
                "redis-py": [self.python, self.lock_py, "hold", c1.servers[0].address, "bench-rss-py-%d" % i, "2000"],
                "sleep": ["sleep", "2"],
            }
            ps = {}
            for label, argv in cmds.items():
                out = self.path("rss-%s-%d.txt" % (label, i))
                ps[label] = (self.spawn(["/usr/bin/time", "-f", "%M", "-o", out] + argv, stdout=subprocess.PIPE), out)
            for label, (p, out) in ps.items():
                stdout = self.finish(p, 60)[0].decode(errors="replace")
                with open(out) as f:
                    text = f.read()
                m = re.findall(r"^(\d+)\s*$", text, re.M)
                r = runs.setdefault(label, {"time_max_rss_kib": [], "exit": []})
                r["exit"].append(p.returncode)
                r["time_max_rss_kib"].append(int(m[-1]) if m else None)
                hwm = re.search(r"VmHWM:\s*(\d+) kB", stdout)
                if hwm:
                    r.setdefault("own_vmhwm_kib", []).append(int(hwm.group(1)))
        for label, r in runs.items():
            if any(code != 0 for code in r["exit"]):
                raise RuntimeError("%s exited %s in the RSS row" % (label, r["exit"]))
        mib = lambda kib: kib / 1024.0  # noqa: E731
        med = {label: median([k for k in r["time_max_rss_kib"] if k is not None]) for label, r in runs.items()}
        own_rl = median(runs["redlock-own"].get("own_vmhwm_kib", []))
        own_fl = median(runs["flock-own"].get("own_vmhwm_kib", []))
        # GNU time reports the ru_maxrss that wait4() returns for its child: the larger of the child's
        # own peak and the peaks of the children it waited for (RUSAGE_BOTH in the kernel), not their sum.
        # `run -- sleep 2`: sleep's own peak is smaller, so the figure is redlock's own; checked below.
        method = {
            "gnu_time": "GNU time's %M is the ru_maxrss of wait4(): max(the process's own peak, its waited-for "
                        "descendants' peaks), never a sum",
            "checked": {
                "redlock_run_big_child_kib": med["redlock-big-child"],
                "redlock_own_vmhwm_kib": own_rl, "sleep_kib": med["sleep"],
                "flock_own_vmhwm_kib": own_fl,
            },
        }
        ours = med["redlock"]
        if med["sleep"] >= ours:  # the child would dominate: use redlock's own high-water mark
            ours = own_rl
        limit_ok = mib(ours) <= 6.0 and ours <= med["redis-cli"]
        measure = "peak RSS of `run --ttl 1s -- sleep 2` (renewals), own"
        self.line("rss", measure, {"value": mib(ours), "unit": "MiB", "text": "%.2f MiB" % mib(ours), "runs": runs["redlock"]},
                  {"value": mib(med["redis-cli"]), "unit": "MiB",
                   "text": "%.2f MiB (`redis-cli BLPOP x 2`)" % mib(med["redis-cli"]), "runs": runs["redis-cli"]},
                  ours / med["redis-cli"], "≤ 6 MiB and ≤ redis-cli", limit_ok, method=method)
        for label, text in (("flock", "`flock FILE sleep 2`"), ("node-redlock", "node-redlock holding 2 s, 5 servers"),
                            ("redis-py", "redis-py `Lock` holding 2 s")):
            self.line("rss", measure, {"value": mib(ours), "unit": "MiB", "text": "%.2f MiB" % mib(ours)},
                      {"value": mib(med[label]), "unit": "MiB", "text": "%.2f MiB (%s)" % (mib(med[label]), text),
                       "runs": runs[label]},
                      ours / med[label], "report", None)

    def row_startup(self):
        st = self.hyperfine([("redlock", "%s --version" % self.bin, None), ("true", "/bin/true", None),
                             ("redis-cli", "redis-cli --version", None)], shell=False,
                            runs=self.fast["runs"] * 2, rounds=self.fast["rounds"])
        self.timed_line("startup", "start-up: `redlock --version`", st["redlock"], st["true"], "`/bin/true`")
        self.timed_line("startup", "start-up: `redlock --version`", st["redlock"], st["redis-cli"], "`redis-cli --version`")
        self.startup_acquire()
        self.startup_instructions()

    def startup_acquire(self):
        """The wall time of a whole `acquire -n` on 5 servers beside `/bin/true`: what a script pays
        for the lock, start-up and exit included (freed by an untimed `--prepare`)."""
        c5 = self.cluster(5)
        free = "%s -S %s release --force bench-startup" % (self.bin, c5.spec())
        ports = " ".join(str(s.port) for s in c5.servers)
        st = self.hyperfine([("acquire", "%s -S %s acquire -n bench-startup" % (self.bin, c5.spec()), free),
                             ("true", "/bin/true", free),
                             ("floor", "%s bench-startup-floor %s" % (self.floor(), ports),
                              "%s -bench-startup-floor %s" % (self.floor(), ports))], shell=False, **self.fast)
        self.timed_line("startup", "`acquire -n`, 5 servers", st["acquire"], st["true"], "`/bin/true`",
                        target="≤ 2× /bin/true", limit=2.0)
        # What the target leaves: a client that only connects, sends SET NX PX and exits, measured beside.
        self.timed_line("startup", "the same for `bench/floor.c` (connect, `SET NX PX`, close), 5 servers",
                        st["floor"], st["true"], "`/bin/true`")

    def startup_instructions(self):
        """Instructions of one `acquire -n` on 5 servers, by callgrind (a count a busy machine does not
        blur), beside those of `redis-cli SET NX PX` on one server, measured the same way."""
        if not shutil.which("valgrind"):
            print("bench: valgrind not installed: no instruction counts", file=sys.stderr)
            return
        c5 = self.cluster(5)
        env = {k: v for k, v in self.env.items() if not k.startswith("REDLOCK_")}
        ours, ref = [], []
        for i in range(1 if self.quick else 3):
            # Under valgrind a request is ~50 times slower: a longer deadline than the 100ms default.
            ours.append(self.callgrind([self.bin, "-S", c5.spec(), "--timeout", "5s", "acquire", "-n",
                                        "bench-instructions-%d" % i], env, "ours.%d" % i))
            ref.append(self.callgrind(["redis-cli", "-p", str(c5.servers[0].port), "SET", "bench-cli-%d" % i, "t",
                                       "NX", "PX", "30000"], env, "cli.%d" % i))
        a, b = min(ours), min(ref)
        self.line("startup", "instructions of `acquire -n`, 5 servers (callgrind)",
                  {"value": a, "unit": "instructions", "text": "{:,}".format(a), "runs": ours},
                  {"value": b, "unit": "instructions", "text": "{:,} (`redis-cli SET NX PX`, 1 server)".format(b),
                   "runs": ref},
                  a / b, "≤ 650,000", a <= 650000)

    def callgrind(self, argv, env, name):
        out = self.path("callgrind." + name)
        r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + argv,
                           capture_output=True, timeout=120, env=env)
        m = re.search(r"Collected : (\d+)", r.stderr.decode(errors="replace"))
        if r.returncode != 0 or not m:
            raise RuntimeError("callgrind %s: exit %d" % (os.path.basename(argv[0]), r.returncode))
        return int(m.group(1))

    # ---- output ---------------------------------------------------------------------------------

    def table(self):
        out = ["| measure | redlock | reference | ratio | target | met? |", "| --- | --- | --- | --- | --- | --- |"]
        for e in self.lines:
            met = "—" if e["met"] is None else ("yes" if e["met"] else "NO")
            ref = e["reference"]["text"] if isinstance(e["reference"], dict) else str(e["reference"])
            out.append("| %s | %s | %s | %s | %s | %s |" % (e["measure"], e["redlock"]["text"], ref,
                                                         e.get("ratio_text") or fmt_ratio(e["ratio"]),
                                                         e["target"], met))
        for row, err in self.errors:
            out.append("| %s | error: %s | — | — | — | NO |" % (row, err.replace("|", "/").replace("\n", " ")[:300]))
        return "\n".join(out)


def commit():
    """The commit of the checkout the bench runs from, or None outside a git checkout."""
    try:
        r = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def versions(bench):
    def first_line(argv):
        try:
            r = subprocess.run(argv, capture_output=True, timeout=20, env=bench.env)
            return (r.stdout or r.stderr).decode(errors="replace").strip().splitlines()[0]
        except (OSError, IndexError, subprocess.SubprocessError):
            return None

    def npm_version(pkg):
        try:
            with open(os.path.join(bench.node_modules, pkg, "package.json")) as f:
                return json.load(f)["version"]
        except (OSError, ValueError, KeyError):
            return None

    return {"redlock": first_line([bench.bin, "--version"]), "hyperfine": first_line(["hyperfine", "--version"]),
            "redis-server": first_line(["redis-server", "--version"]), "redis-cli": first_line(["redis-cli", "--version"]),
            "flock": first_line(["flock", "--version"]), "node": first_line(["node", "--version"]),
            "node-redlock": npm_version("redlock"), "ioredis": npm_version("ioredis"),
            "redis-py": first_line([bench.python, "-c", "import redis; print(redis.__version__)"]),
            "time": first_line(["/usr/bin/time", "--version"])}


def main():
    ap = argparse.ArgumentParser(prog="scripts/bench", description="redlock against its alternatives, in one run, as ratios")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    ap.add_argument("--json", default=os.path.join(ROOT, "bench", "results", "bench.json"), help="where the JSON goes")
    ap.add_argument("--rows", default=",".join(ROWS), help="comma-separated rows: " + ",".join(ROWS))
    ap.add_argument("-v", "--verbose", action="store_true", help="hyperfine's own output on stderr")
    args = ap.parse_args()
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [r for r in rows if r not in ROWS]
    if unknown or not rows:
        ap.error("unknown rows %s (rows: %s)" % (",".join(unknown), ",".join(ROWS)))
    rows = [r for r in ROWS if r in rows]

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)

    bench = Bench(args)
    try:
        bench.check_references(rows)
    except Missing as e:
        print("bench: skipped: %s" % e, file=sys.stderr)
        bench.cleanup()
        return SKIP
    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = os.getloadavg()
    timings = {}
    try:
        for row in rows:
            log("%s ..." % row)
            t0 = time.monotonic()
            try:
                getattr(bench, "row_" + row.replace("-", "_"))()
            except Exception as e:  # noqa: BLE001 -- one row's failure is reported, the others still run
                bench.errors.append((row, "%s: %s" % (type(e).__name__, e)))
                log("%s failed: %s" % (row, e))
            finally:
                for c in list(bench.clusters):
                    bench.drop(c)
            timings[row] = time.monotonic() - t0
            log("%s done in %.1f s" % (row, timings[row]))
    finally:
        bench.cleanup()
    command = "scripts/bench" + (" --quick" if args.quick else "") + (
        " --rows " + ",".join(rows) if rows != ROWS else "")
    doc = {"version": 1, "command": command, "quick": args.quick, "started": started.isoformat(),
           "commit": commit(), "binary": bench.bin,
           "machine": {"cpus": os.cpu_count(), "loadavg_before": load_before, "loadavg_after": os.getloadavg()},
           "versions": versions(bench), "rows_run": rows, "seconds": timings, "lines": bench.lines,
           "errors": [{"row": r, "error": e} for r, e in bench.errors],
           "not_met": [e["measure"] + " vs " + (e["reference"]["text"] if isinstance(e["reference"], dict) else "")
                       for e in bench.lines if e["met"] is False]}
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(bench.table())
    print()
    print("Produced by `%s` (%s, %d CPUs, load %.1f → %.1f); JSON: %s" % (
        command, doc["versions"]["redlock"], os.cpu_count(), load_before[0], doc["machine"]["loadavg_after"][0],
        os.path.abspath(args.json)))
    if doc["not_met"]:
        print()
        print("Targets not met:")
        for e in bench.lines:
            if e["met"] is False:
                print("- %s: %s against %s (%s), target %s" % (e["measure"], e["redlock"]["text"], e["reference"]["text"],
                                                               fmt_ratio(e["ratio"]), e["target"]))
    return 1 if bench.errors else 0


if __name__ == "__main__":
    sys.exit(main())
