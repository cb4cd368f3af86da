"""The fault-injection harness: N lock servers and a separate guarded resource (redis-server
processes from tests/integration/harness.py), workers that loop `redlock run` (or acquire, extend,
release) around a read-modify-write of the resource (guarded.py), nemeses that break things, and
the JSONL history they all leave for the checkers (checkers.py).

Everything started here is ended here, by process id; every loop is bounded in count and time.
"""

import collections
import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

import harness  # noqa: E402
from harness import Cluster, Server, clean_env, pid_alive  # noqa: E402,F401 (pid_alive: for the scenarios)
import guarded  # noqa: E402
import checkers  # noqa: E402

ROOT = harness.ROOT
GUARDED = os.path.join(HERE, "guarded.py")
PYTHON = sys.executable or "/usr/bin/python3"
NAME = "fault-job"
MS = 1_000_000
SEC = 1_000_000_000


def now():
    return time.monotonic_ns()


def redlock_bin():
    path = os.environ.get("REDLOCK_BIN") or os.path.join(ROOT, "build", "cli", "redlock")
    if not os.path.exists(path):
        raise RuntimeError("redlock binary not found at %s (set REDLOCK_BIN)" % path)
    return path


def faulty_bin():
    path = os.environ.get("REDLOCK_FAULTY_BIN") or os.path.join(ROOT, "build", "cli", "redlock-faulty")
    if not os.path.exists(path):
        raise RuntimeError("redlock-faulty binary not found at %s (set REDLOCK_FAULTY_BIN)" % path)
    return path


def libfaketime():
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1")) + sorted(glob.glob("/usr/lib/faketime/libfaketime.so.1"))
    return found[0] if found else None


def parse_duration_ns(text):
    for suffix, mult in (("ms", MS), ("s", SEC), ("m", 60 * SEC), ("h", 3600 * SEC)):
        if text.endswith(suffix) and text[:-len(suffix)].replace(".", "", 1).isdigit():
            return int(float(text[:-len(suffix)]) * mult)
    return int(float(text) * SEC)


def read_jsonl(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass  # a line being written right now
    except OSError:
        pass
    return out


class Resource:
    """The guarded resource: a redis-server of its own, never faulted."""

    def __init__(self, workdir):
        self.server = Server(workdir, 99).start()
        with self.server.client() as c:
            c.call("FLUSHALL")
            c.call("MSET", "plain", "0", "fenced", "0")

    @property
    def address(self):
        return self.server.address

    def final(self):
        def log(c, key):
            return [int(x.split(b" ")[0]) for x in c.call("LRANGE", key, 0, -1)]
        with self.server.client() as c:
            return {"plain": int(c.call("GET", "plain") or 0), "fenced": int(c.call("GET", "fenced") or 0),
                    "plain_log": log(c, "plain:log"), "fenced_log": log(c, "fenced:log"),
                    "rejected": log(c, "fenced:rejected")}

    def stop(self):
        self.server.kill()


class Worker(threading.Thread):
    """One client: loops cycles until the environment stops (bounded by MAX_CYCLES).

    mode "run": `redlock run NAME -- guarded.py`; mode "acquire": `redlock --json acquire`, the
    critical section in this thread (skipping the write when its validity is nearly over), an
    `extend` when HOLD is long, then `release`."""

    def __init__(self, env, index, mode="run", ttl="2s", hold_ms=(10, 60), wait="10s", timeout="250ms", servers=None,
                 wrapper=(), env_extra=None, run_args=(), ignore_signals=False, binary=None, max_cycles=100000):
        super().__init__(name="worker-%d" % index, daemon=True)
        self.env, self.index, self.mode = env, index, mode
        self.ttl, self.ttl_ns, self.hold_ms, self.wait, self.timeout = ttl, parse_duration_ns(ttl), hold_ms, wait, timeout
        self.servers = servers
        self.wrapper = list(wrapper)
        self.env_extra = dict(env_extra or {})
        self.run_args = list(run_args)
        self.ignore_signals = ignore_signals
        self.binary = binary or env.binary
        self.max_cycles = max_cycles
        self.history = os.path.join(env.hist_dir, "w%d.jsonl" % index)
        self.marker = os.path.join(env.marker_dir, "w%d" % index)
        self.stderr_path = os.path.join(env.hist_dir, "w%d.stderr" % index)
        self.report_path = os.path.join(env.workdir, "w%d.report.json" % index)
        self.rng = random.Random(env.rng.random())
        self.proc = None
        self.cycle = 0
        self.cycle_started = 0  # monotonic ns of the current cycle's attempt
        self.error = None

    def record(self, **rec):
        if rec.get("ev") == "attempt":
            self.cycle_started = now()
        rec.setdefault("w", self.index)
        rec.setdefault("t", now())
        guarded.append(self.history, rec)

    def process_env(self, n, hold_ms):
        e = clean_env({"REDLOCK_SERVERS": self.servers or self.env.spec})
        if self.env.fault:
            e["REDLOCK_FAULT"] = self.env.fault
        e.update({"FAULT_HISTORY": self.history, "FAULT_WHO": "%d:%d" % (self.index, n),
                  "FAULT_RESOURCE": self.env.resource.address, "FAULT_HOLD_MS": str(hold_ms),
                  "FAULT_MARKER": self.marker, "FAULT_IGNORE": "1" if self.ignore_signals else "0"})
        e.update(self.env_extra)
        return e

    def pick_hold(self):
        low, high = self.hold_ms
        return self.rng.randint(low, high)

    def run(self):
        try:
            while not self.env.stopping.is_set() and self.cycle < self.max_cycles:
                self.cycle += 1
                if self.mode == "run":
                    code = self.cycle_run(self.cycle)
                else:
                    code = self.cycle_acquire(self.cycle)
                if code == 69 or code not in (0, 75, 79):
                    self.env.stopping.wait(0.05 + self.rng.random() * 0.1)
                elif code == 75 and not self.wait:
                    self.env.stopping.wait(0.02 + self.rng.random() * 0.04)
                else:
                    self.env.stopping.wait(self.rng.random() * 0.01)
        except Exception:  # reported by the scenario: a worker that died is a failed run
            import traceback
            self.error = traceback.format_exc()

    def _spawn(self, argv, e):
        with open(self.stderr_path, "ab") as err:
            self.proc = subprocess.Popen(argv, env=e, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err)
        return self.proc

    def _wait(self, proc, budget_s):
        try:
            out, _ = proc.communicate(timeout=budget_s)
            return proc.returncode, out
        except subprocess.TimeoutExpired:
            # Bounded: a redlock that outlives its wait, TTL and hold by far is a finding, not a hang.
            # What it was doing goes into the history before it is killed.
            seen = process_tree(proc.pid)
            proc.kill()
            out, _ = proc.communicate(timeout=10)
            self.record(ev="hung", n=self.cycle, budget_s=budget_s, processes=seen)
            return "hung", out

    def wait_args(self):
        return ["-w", self.wait] if self.wait else []

    def wait_s(self):
        return parse_duration_ns(self.wait) / SEC if self.wait else 0

    def budget_s(self, hold_ms):
        return self.wait_s() + hold_ms / 1000.0 + 3 * self.ttl_ns / SEC + 15

    def child_argv(self):
        prefix = ["/usr/bin/env", "-u", "LD_PRELOAD", "-u", "FAKETIME"] if self.wrapper or "LD_PRELOAD" in self.env_extra else []
        return prefix + [PYTHON, "-S", GUARDED]

    def cycle_run(self, n):
        hold = self.pick_hold()
        # Last cycle's report, and its marker when its holder was killed inside.
        for stale in (self.report_path, self.marker):
            try:
                os.unlink(stale)
            except OSError:
                pass
        argv = self.wrapper + [self.binary, "--timeout", self.timeout, "run", NAME, "--ttl", self.ttl] + self.wait_args() + \
            ["--report", self.report_path] + self.run_args + ["--"] + self.child_argv()
        self.record(ev="attempt", n=n, hold_ms=hold)
        t0 = now()
        proc = self._spawn(argv, self.process_env(n, hold))
        code, _ = self._wait(proc, self.budget_s(hold))
        t1 = now()
        self.proc = None
        try:
            with open(self.report_path) as f:
                report = json.load(f)
        except (OSError, ValueError):
            report = {}
        keep = {k: report.get(k) for k in ("outcome", "fence", "token", "wait_ms", "held_ms", "renewals", "child_exit",
                                           "signal", "attempts", "released", "message", "exit_status", "fairness")}
        self.record(ev="done", n=n, t=t1, t0=t0, code=code, outcome=report.get("outcome"), report=keep,
                    stopping=self.env.stopping.is_set())
        if report.get("token") and report.get("outcome") in ("child_exited", "child_signaled", "lost"):
            self.env.finished_tokens.append(report["token"])
        return code

    def redlock_json(self, args, n):
        e = self.process_env(n, 0)
        argv = self.wrapper + [self.binary, "--json", "--timeout", self.timeout] + args
        proc = self._spawn(argv, e)
        code, out = self._wait(proc, self.wait_s() + 15)
        self.proc = None
        try:
            return code, json.loads(out.decode())
        except ValueError:
            return code, {}

    def cycle_acquire(self, n):
        hold = self.pick_hold()
        self.record(ev="attempt", n=n, hold_ms=hold)
        t0 = now()
        code, j = self.redlock_json(["acquire", NAME, "--ttl", self.ttl] + self.wait_args() + self.run_args, n)
        t1 = now()
        report = {"fence": j.get("fence"), "token": j.get("token"), "validity_ms": j.get("validity_ms"),
                  "wait_ms": j.get("elapsed_ms"), "attempts": j.get("attempts")}
        if code != 0 or not j.get("acquired"):
            self.record(ev="done", n=n, t=t1, t0=t0, code=code, outcome=j.get("reason") or "error", report=report,
                        stopping=self.env.stopping.is_set())
            return code
        # A re-entered lock may have no fence of its own to show (null): it writes as the oldest
        # holder would, and a fenced resource refuses it.
        token, fence = j["token"], j["fence"] if j["fence"] is not None else 0
        # Measured from before the process started: shorter than the real validity, never longer.
        deadline = t0 + int(j["validity_ms"] * MS)
        if hold > 0.4 * self.ttl_ns / MS:
            t_ext = now()
            ec, ej = self.redlock_json(["extend", NAME, "--token", token, "--ttl", self.ttl], n)
            report["extended"] = ec == 0
            if ec == 0:
                deadline = max(deadline, t_ext + int(ej["validity_ms"] * MS))
        guarded.critical_section(self.history, "%d:%d" % (self.index, n), fence, token, self.env.resource.address,
                                 hold / 1000.0, marker=self.marker, deadline_ns=deadline,
                                 extra={"validity_ms": j["validity_ms"], "mode": "acquire"})
        rc, rj = self.redlock_json(["release", NAME, "--token", token], n)
        report["released"] = rj.get("released")
        self.record(ev="done", n=n, t=now(), t0=t0, code=0, release_code=rc, outcome="released" if rc == 0 else
                    "release_failed", report=report, stopping=self.env.stopping.is_set())
        self.env.finished_tokens.append(token)
        return 0


class Env:
    """One scenario's world: N lock servers, the resource, the workers and the nemesis log."""

    def __init__(self, name, servers=5, server_extra=(), binary=None, fault=None, seed=None):
        self.name = name
        self.binary = binary or redlock_bin()
        self.fault = fault
        self.rng = random.Random(seed)
        self.workdir = tempfile.mkdtemp(prefix="redlock-fault-")
        self.hist_dir = os.path.join(self.workdir, "history")
        self.marker_dir = os.path.join(self.workdir, "inside")
        os.makedirs(self.hist_dir)
        os.makedirs(self.marker_dir)
        self.stopping = threading.Event()
        self.finished_tokens = collections.deque(maxlen=500)
        self.workers = []
        self.proxies = []
        self.cluster = None
        self.resource = None
        self.nemesis_log = os.path.join(self.hist_dir, "nemesis.jsonl")
        self.t_start = self.t_stop = None
        self.nemesis_error = None
        try:
            self.cluster = Cluster(servers, server_extra)
            self.resource = Resource(self.workdir)
        except Exception:
            self.close()
            raise

    @property
    def servers(self):
        return self.cluster.servers

    @property
    def spec(self):
        return self.cluster.spec

    def add_worker(self, **kw):
        w = Worker(self, len(self.workers), **kw)
        self.workers.append(w)
        return w

    def note(self, ev, **rec):
        rec.update(ev=ev, t=rec.get("t", now()))
        guarded.append(self.nemesis_log, rec)

    def inside(self):
        """The holders inside their critical section now: {worker index: (child pid, pgid, cycle)}."""
        out = {}
        for path in glob.glob(os.path.join(self.marker_dir, "w*")):
            try:
                with open(path) as f:
                    pid, pgid, n = f.read().split()
                out[int(os.path.basename(path)[1:])] = (int(pid), int(pgid), int(n))
            except (OSError, ValueError):
                pass
        return out

    def wait_inside(self, timeout, among=None, since=None):
        """The first holder seen inside within TIMEOUT seconds: (worker, pid, pgid, cycle), or None.
        SINCE (monotonic ns): only a holder whose attempt started at or after it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.stopping.is_set():
            for w, (pid, pgid, n) in sorted(self.inside().items()):
                if among is not None and w not in among:
                    continue
                worker = self.workers[w]
                # A marker left by a holder that was killed is not someone inside.
                if worker.cycle != n or not pid_alive(pid):
                    continue
                if since is not None and worker.cycle_started < since:
                    continue
                return w, pid, pgid, n
            time.sleep(0.01)
        return None

    def sleep(self, seconds):
        """Sleeps, unless the scenario is stopping; True when it slept in full."""
        return not self.stopping.wait(seconds)

    def run(self, seconds, nemesis=None):
        """Starts the workers and the nemesis, lets them go for SECONDS (or until the nemesis is
        done, when it returns before), then stops everything and heals."""
        self.t_start = now()
        self.note("start")
        for w in self.workers:
            w.start()
        result = {}

        def go():
            try:
                result["value"] = nemesis(self)
            except Exception as e:
                import traceback
                self.nemesis_error = traceback.format_exc()
                result["error"] = e
        thread = None
        if nemesis is not None:
            thread = threading.Thread(target=go, name="nemesis", daemon=True)
            thread.start()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if thread is not None and not thread.is_alive():
                break
            if all(not w.is_alive() for w in self.workers) and self.workers:
                break
            time.sleep(0.05)
        self.stop_workers(thread)
        return result.get("value")

    def stop_workers(self, nemesis_thread=None):
        self.stopping.set()
        self.t_stop = now()
        self.note("stop")
        if nemesis_thread is not None:
            nemesis_thread.join(timeout=60)
        self.heal_all()
        # Waiters would wait out their -w: TERM stops a wait at once (and is forwarded to a holder's
        # command, which then ends and releases).
        deadline = time.monotonic() + 60
        for w in self.workers:
            while w.is_alive() and time.monotonic() < deadline:
                p = w.proc
                if p is not None and p.poll() is None:
                    try:
                        p.send_signal(signal.SIGTERM)
                    except OSError:
                        pass
                w.join(timeout=0.5)
        for w in self.workers:
            if w.is_alive() and w.proc is not None:
                w.proc.kill()
                w.join(timeout=10)

    def heal_all(self):
        for s in self.servers:
            if s.stopped:
                s.thaw()
            if s.proc is None or s.proc.poll() is not None:
                try:
                    s.start()
                except Exception:
                    pass
        for p in self.proxies:
            p.heal()
            p.set_delay(0)

    def history(self):
        events = []
        for path in glob.glob(os.path.join(self.hist_dir, "*.jsonl")):
            events.extend(read_jsonl(path))
        events.sort(key=lambda e: e.get("t", 0))
        return events

    def lock_keys(self, servers=None):
        """What the lock servers hold under NAME and its owner record, per server (None: down)."""
        out = []
        for s in servers or self.servers:
            if s.stopped or s.proc is None or s.proc.poll() is not None:
                out.append(None)
                continue
            with s.client() as c:
                out.append({"lock": c.call("GET", NAME), "owner": c.call("EXISTS", "{%s}:redlock:owner" % NAME)})
        return out

    def close(self):
        self.stopping.set()
        for w in self.workers:
            if w.proc is not None and w.proc.poll() is None:
                w.proc.kill()
        for p in self.proxies:
            p.close()
        if self.resource is not None:
            self.resource.stop()
        if self.cluster is not None:
            self.cluster.stop()
        if os.environ.get("FAULT_KEEP"):
            sys.stderr.write("fault: history kept in %s\n" % self.workdir)
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)


def process_tree(pid):
    """PID and its descendants as seen in /proc: state, kernel wait channel, command line."""
    def read(path):
        try:
            with open(path, "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""
    out, todo = [], [pid]
    while todo and len(out) < 32:
        p = todo.pop()
        stat = read("/proc/%d/stat" % p)
        state = stat[stat.rfind(")") + 2:].split(" ", 1)[0] if stat else "gone"
        out.append({"pid": p, "state": state, "wchan": read("/proc/%d/wchan" % p),
                    "cmdline": read("/proc/%d/cmdline" % p).replace("\0", " ").strip()})
        for children in glob.glob("/proc/%d/task/*/children" % p):  # gone by now: none
            todo.extend(int(c) for c in read(children).split())
    return out


def ms(ns):
    return None if ns is None else round(ns / MS, 1)


def describe(h):
    return {"w": h.w, "n": h.n, "start_ms": ms(h.start), "end_ms": ms(h.end) if h.end != checkers.INF else None,
            "fence": h.fence, "code": h.code, "exit": h.exit_how, "sig": h.exit_sig}


class Summary(dict):
    """The outcome of one scenario run: metrics, the violations each checker found, and `failures`
    (the pass criteria the scenario did not meet)."""

    def fail(self, text):
        self["failures"].append(text)

    def check(self, ok, text):
        if not ok:
            self.fail(text)
        return ok


def wait_limits_ms(env):
    """How long each worker's wait may last, in ms (None: it does not wait). The last attempt
    starts at the -w deadline at the latest; it, its clean-up and a fence write each take at most
    --timeout; a second is the slack of a loaded machine."""
    return [w.wait_s() * 1000 + 3 * parse_duration_ns(w.timeout) / MS + 1000 if w.wait else None
            for w in env.workers]


def summarize(env, name, exclude=(), acceptable_codes=(0, 75, 79, 69), expect_cycles=1, heal_bound_s=None,
              quiet_end=True, unfenced_may_lose=False, limit=None, shared=False, after_full_wait=()):
    """The common checkers over ENV's history. EXCLUDE: cycles left out of the overlap check (a
    holder the scenario paused on purpose). Returns a Summary with `failures` for the criteria every
    scenario shares: no overlap, no lost update, fences increasing, no stale write accepted, no
    unexpected exit status, no hung redlock, no crashed worker, and (HEAL_BOUND_S) the lock taken
    again within that many seconds of every heal. UNFENCED_MAY_LOSE: the scenario lets a stale
    holder write on purpose (only the fenced counter must stay exact). LIMIT: a semaphore's (--limit):
    no more than LIMIT holds at once (instead of no overlap), fences increasing per slot, and the
    counters, which LIMIT holders share, not judged. SHARED: the shared mode's (--shared readers
    beside writers): only overlaps with a writer count, and a reader's fence is checked against the
    writers before it (readers write nothing, so the counters are the writers' alone).
    AFTER_FULL_WAIT: exit codes acceptable only from a wait that ran to its -w (a wait given up
    before its end with one of them is a failure)."""
    events = env.history()
    hs = checkers.holds(events)
    t0 = env.t_start or (events[0]["t"] if events else 0)
    final = env.resource.final()
    if shared:
        ov, fences = checkers.shared_overlaps(hs), checkers.shared_fence_violations(hs)
    else:
        ov = checkers.overlaps(hs, exclude) if limit is None else checkers.over_limit(hs, limit)
        fences = checkers.fence_violations(hs) if limit is None else checkers.slot_fence_violations(hs)
    stale = checkers.stale_accepted(final["fenced_log"])
    stale_plain = checkers.stale_accepted(final["plain_log"])
    lost_fenced = checkers.lost_updates(final["fenced"], len(final["fenced_log"]))
    lost_plain = checkers.lost_updates(final["plain"], len(final["plain_log"]))
    # Heals too close to the end to be followed by an acquire are not counted.
    t_stop = env.t_stop or now()
    margin = (heal_bound_s or 3) * SEC
    heals = [e["t"] for e in events if e.get("ev") == "heal" and e["t"] < t_stop]
    after = checkers.after_heals(heals, [h.start for h in hs if h.start < t_stop])
    kept = [(t, a) for t, a in zip(heals, after) if a is not None or t < t_stop - margin]
    heals, after = [t for t, a in kept], [a for t, a in kept]
    dones = [e for e in events if e.get("ev") == "done"]
    waits = [e["report"].get("wait_ms") for e in dones if e.get("code") == 0 and e.get("report")]
    early = checkers.gave_up_early(dones, [w.wait_s() * 1000 if w.wait else None for w in env.workers],
                                   after_full_wait)
    unexpected = [e for e in dones if e.get("code") not in acceptable_codes + tuple(after_full_wait)
                  and not e.get("stopping")]
    hung = [e for e in events if e.get("ev") == "hung"]
    overdue = checkers.overdue_waits(dones, wait_limits_ms(env))
    codes = collections.Counter(str(e.get("code")) for e in dones)
    s = Summary(
        scenario=name, binary=os.path.basename(env.binary), fault=env.fault,
        seconds=round(((env.t_stop or now()) - t0) / SEC, 1), workers=len(env.workers),
        cycles=len(hs), attempts=len(dones), exit_codes=dict(codes),
        overlaps=len(ov), overlap_examples=[{"a": describe(a), "b": describe(b), "overlap_ms": ms(d)} for a, b, d in ov[:5]],
        fence_violations=len(fences), fence_examples=[{"a": describe(a) if a else None, "b": describe(b) if b else None,
                                                       "why": why} for a, b, why in fences[:5]],
        lost_updates=lost_fenced, lost_updates_unfenced=lost_plain,
        stale_accepted=len(stale), stale_accepted_unfenced=len(stale_plain), stale_rejected=len(final["rejected"]),
        writes=len(final["fenced_log"]), foreign_releases=0,
        p99_acquire_ms=checkers.percentile(waits, 99),
        heals=len(heals), p99_reacquire_ms=ms(checkers.percentile([a for a in after if a is not None], 99)),
        heals_without_reacquire=sum(1 for a in after if a is None),
        unexpected=[{k: e.get(k) for k in ("w", "n", "code", "outcome", "report")} for e in unexpected[:5]],
        hung=len(hung), overdue_waits=len(overdue), waits_given_up_early=len(early), failures=[])
    s.holds = hs
    s.events = events
    if limit is None:
        s.check(not ov, "%d overlapping holders, e.g. %s" % (len(ov), s["overlap_examples"][:2]))
    else:
        s["most_at_once"] = checkers.most_at_once(hs)
        s.check(not ov, "more than %d holders at once (%d), e.g. %s" % (limit, s["most_at_once"], s["overlap_examples"][:2]))
    s.check(not fences, "fences not strictly increasing: %s" % s["fence_examples"][:2])
    s.check(not stale or limit, "the fenced resource accepted %d stale writes" % len(stale))
    s.check(lost_fenced == 0 or limit, "fenced counter lost %d updates" % lost_fenced)
    s.check(lost_plain == 0 or unfenced_may_lose or limit, "unfenced counter lost %d updates" % lost_plain)
    s.check(not unexpected, "unexpected exit statuses: %s" % s["unexpected"])
    s.check(not early, "%d waits gave up before their -w ended, e.g. %s" % (len(early), early[:3]))
    s.check(not hung, "%d redlock processes outlived their time budget" % len(hung))
    s.check(not overdue, "%d waits went on past their -w, e.g. %s" % (len(overdue), overdue[:3]))
    s.check(len(hs) >= expect_cycles, "only %d lock cycles (expected at least %d)" % (len(hs), expect_cycles))
    errors = [w.error for w in env.workers if w.error] + ([env.nemesis_error] if env.nemesis_error else [])
    s.check(not errors, "harness errors: %s" % errors)
    if heal_bound_s is not None:
        slow = [a for a in after if a is not None and a > heal_bound_s * SEC]
        s.check(not slow and s["heals_without_reacquire"] == 0,
                "lock not taken again within %.1fs of a heal: %d slow, %d never (of %d heals)" %
                (heal_bound_s, len(slow), s["heals_without_reacquire"], len(heals)))
    if quiet_end:
        # Every holder ended or was stopped: within a TTL the lock is free everywhere.
        ttl_s = max((w.ttl_ns for w in env.workers), default=0) / SEC
        deadline = time.monotonic() + ttl_s + 1.5
        keys = env.lock_keys()
        while any(k and k["lock"] is not None for k in keys) and time.monotonic() < deadline:
            time.sleep(0.1)
            keys = env.lock_keys()
        s.check(not any(k and k["lock"] is not None for k in keys), "lock key left on servers after the end: %s" % keys)
    return s


# Counts some scenarios add (loaded-host: its exits 69), summed over a soak's rounds, and what they came from.
EXTRA_COUNTS = ("exit_69_workers", "extra_cycles", "extra_exit_69", "extra_other_failures", "order_inversions",
                "fair_handoffs", "degraded_handoffs")
EXTRA_FIGURES = ("burners", "extra_clients") + EXTRA_COUNTS


def print_summary(s, out=sys.stderr):
    keys = ("scenario", "binary", "fault", "seconds", "cycles", "overlaps", "lost_updates", "lost_updates_unfenced",
            "stale_accepted", "stale_accepted_unfenced", "stale_rejected", "fence_violations", "foreign_releases",
            "p99_acquire_ms", "heals", "p99_reacquire_ms", "exit_codes")
    keys += tuple(k for k in EXTRA_FIGURES if k in s)
    out.write("  " + " ".join("%s=%s" % (k, s.get(k)) for k in keys) + "\n")
    for f in s["failures"]:
        out.write("  FAIL: %s\n" % f)
    out.flush()
