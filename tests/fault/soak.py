#!/usr/bin/python3
"""Long fault-injection runs: every fault class (scenario) ROUNDS times for SECONDS each, then a table
and a JSON file. Run through scripts/soak, which installs what is missing and builds the binaries.

  soak.py [--rounds N] [--seconds S] [--jobs J] [--scenarios a,b] [--no-controls] [--out FILE] [--seed N]

Defaults come from SOAK_ROUNDS (10), SOAK_SECONDS (120), SOAK_JOBS (1), SOAK_SCENARIOS (all), SOAK_OUT
(bench/results/soak.json). Each round runs in a process of its own; --jobs runs that many side by
side (every round has its own servers, ports, workers and network namespace), which divides the
wall time and adds CPU contention: scheduling delays are one more fault the lock must survive.
The negative controls (redlock-faulty, and the crash-restart without persistence) run too unless
--no-controls: their rows must show violations ("caught").
"""

import argparse
import concurrent.futures
import datetime
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import faultlib  # noqa: E402
import scenarios  # noqa: E402

# What must pass, in the order of RELIABILITY.md; the deterministic checks (no-quorum,
# duplicate-server) take no duration and run once per round.
MUST_PASS = ["contention", "pause-minority", "kill-minority", "partition", "proxy", "split-brain", "no-quorum",
             "crash-restart-delayed", "crash-restart-aof", "early-expiry", "clock-rate", "clock-step", "stale-token",
             "holder-pause", "renewal", "quorum-loss", "holder-crash", "signals", "duplicate-server", "script-flush",
             "starvation", "siblings", "rolling-restart", "blip", "loaded-host", "semaphore", "semaphore-cuts",
             "semaphore-rolling", "shared", "sentinel-failover", "sentinel-forgets", "fair", "fair-kill",
             "handover"]
# (row name, scenario, REDLOCK_FAULT or None for the real binary): must be caught.
CONTROLS = [("control:release-any", "stale-token", "release-any"),
            ("control:no-validity", "quorum-loss", "no-validity"),
            ("control:half-quorum", "split-brain", "half-quorum"),
            ("control:crash-restart-empty", "crash-restart-empty", None),
            ("control:shared-token", "siblings", "inherit-any-token"),
            ("control:semaphore-extra-slot", "semaphore", "semaphore-extra-slot"),
            ("control:semaphore-majority", "semaphore-cuts", "semaphore-majority"),
            ("control:shared-ignores-writer", "shared", "shared-ignores-writer"),
            ("control:sentinel-unconfirmed", "sentinel-forgets-unconfirmed", None),
            ("control:fair-ignores-queue", "fair", "fair-ignores-queue"),
            ("control:grant-keeps-short-expiry", "handover", "grant-keeps-short-expiry"),
            ("control:no-quorum-at-once", "blip", "no-quorum-at-once")]

COLUMNS = [("scenario", "scenario", "%-28s"), ("rounds", "rounds", "%6s"), ("seconds", "seconds", "%8s"),
           ("cycles", "lock cycles", "%11s"), ("overlaps", "overlaps", "%8s"), ("lost_updates", "lost updates", "%12s"),
           ("stale_accepted", "stale accepted", "%14s"), ("foreign_releases", "foreign releases", "%16s"),
           ("p99_acquire_ms", "p99 acquire ms", "%14s"), ("p99_reacquire_ms", "p99 re-acquire ms", "%17s"),
           ("failed_rounds", "failed rounds", "%13s"), ("verdict", "verdict", "%-8s")]


def aggregate(row, expect, runs):
    def total(key):
        return sum((r.get(key) or 0) for r in runs)

    def worst(key):
        vals = [r.get(key) for r in runs if r.get(key) is not None]
        return round(max(vals), 1) if vals else None
    failed = sum(1 for r in runs if r.get("failures"))
    out = {"scenario": row, "expect": expect, "rounds": len(runs), "seconds": round(total("seconds"), 1),
           "cycles": total("cycles"), "overlaps": total("overlaps"),
           # Fenced and unfenced counters: an update lost by either is one the lock failed to protect.
           "lost_updates": total("lost_updates"), "lost_updates_unfenced": total("lost_updates_unfenced"),
           "stale_accepted": total("stale_accepted"), "foreign_releases": total("foreign_releases"),
           "fence_violations": total("fence_violations"),
           # The worst round's p99 (rounds differ in load; the worst is what a user meets).
           "p99_acquire_ms": worst("p99_acquire_ms"), "p99_reacquire_ms": worst("p99_reacquire_ms"),
           "failed_rounds": failed}
    for key in faultlib.EXTRA_COUNTS:
        if any(key in r for r in runs):
            out[key] = total(key)
    if expect == "pass":
        out["verdict"] = "ok" if failed == 0 else "FAIL"
    else:
        out["verdict"] = "caught" if failed == len(runs) else "MISSED"
    return out


def table(rows):
    lines = [" | ".join(fmt % title for _, title, fmt in COLUMNS)]
    lines.append("-+-".join("-" * len(fmt % title) for _, title, fmt in COLUMNS))
    for r in rows:
        cells = []
        for key, title, fmt in COLUMNS:
            v = r.get(key)
            if key == "lost_updates":
                v = "%s/%s" % (r["lost_updates"], r["lost_updates_unfenced"])
            cells.append(fmt % ("-" if v is None else v))
        lines.append(" | ".join(cells))
    return "\n".join(lines)


def run_round(name, seconds, binary, fault, seed):
    """One round in a process of its own (scenarios.py NAME --json OUT), so that rounds can run side
    by side. Bounded: a round that outlives four times its duration plus ten minutes is killed (its
    own process group) and counts as failed."""
    fd, out = tempfile.mkstemp(prefix="redlock-soak-", suffix=".json")
    os.close(fd)
    argv = [sys.executable, os.path.join(HERE, "scenarios.py"), name, "--binary", binary, "--json", out, "--quiet"]
    argv += ["--seconds", str(seconds)] if seconds is not None else []
    argv += ["--fault", fault] if fault else []
    argv += ["--seed", str(seed)] if seed is not None else []
    budget = 4 * (seconds or 60) + 600
    try:
        with tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                    start_new_session=True)
            try:
                proc.wait(timeout=budget)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return faultlib.Summary(scenario=name, failures=["harness error: round still running after %d s" % budget])
            try:
                with open(out) as f:
                    return faultlib.Summary(json.load(f))
            except (OSError, ValueError):
                err.seek(0)
                tail = err.read().decode(errors="replace").strip().splitlines()[-3:]
                return faultlib.Summary(scenario=name, failures=["harness error: exit %s, no summary: %s"
                                                                 % (proc.returncode, " / ".join(tail))])
    finally:
        os.unlink(out)


def summarize(plan, runs, rounds):
    rows = []
    for p, (row, _, _, expect) in enumerate(plan):
        done = [runs[p, i] for i in range(rounds) if (p, i) in runs]
        agg = aggregate(row, expect, [r for r in done if not r.get("skipped")])
        if not done:
            agg["verdict"] = "pending"  # a partial file: no round of this class has ended yet
        elif all(r.get("skipped") for r in done):
            agg["verdict"] = "skipped"
        rows.append(agg)
    return rows


def commit():
    """The commit of the tree the soak runs from (its harness), or None outside a git checkout."""
    try:
        r = subprocess.run(["git", "-C", faultlib.ROOT, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def write(a, rows, runs, plan, real, faulty, started, done):
    """The JSON file, rewritten as rounds end ("complete": false until the last one)."""
    doc = {"version": 1, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "host": platform.node(), "cpus": os.cpu_count(), "command": " ".join(sys.argv), "commit": a.commit,
           "rounds": a.rounds, "seconds": a.seconds, "jobs": a.jobs, "complete": done, "binary": real,
           "faulty_binary": faulty, "wall_seconds": round(time.monotonic() - started, 1), "rows": rows,
           "runs": {row: [dict(runs[p, i]) for i in range(a.rounds) if (p, i) in runs]
                    for p, (row, _, _, _) in enumerate(plan)}}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, default=str)
    os.replace(tmp, a.out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("SOAK_ROUNDS", "10")))
    ap.add_argument("--seconds", type=float, default=float(os.environ.get("SOAK_SECONDS", "120")))
    ap.add_argument("--scenarios", default=os.environ.get("SOAK_SCENARIOS", ""),
                    help="comma-separated scenario names (default: all); control:NAME rows too")
    ap.add_argument("--no-controls", action="store_true")
    ap.add_argument("--out", default=os.environ.get("SOAK_OUT", os.path.join(faultlib.ROOT, "bench", "results", "soak.json")))
    ap.add_argument("--seed", type=int, help="seed of the first run (the others follow from it)")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("SOAK_JOBS", "1")),
                    help="rounds run side by side, each with its own servers and workers (default 1)")
    a = ap.parse_args()
    if a.rounds < 1 or a.seconds <= 0 or a.jobs < 1:
        ap.error("--rounds, --seconds and --jobs must be positive")

    plan = [(name, name, None, "pass") for name in MUST_PASS]
    if not a.no_controls:
        plan += [(row, name, fault, "caught") for row, name, fault in CONTROLS]
    if a.scenarios:
        wanted = set(a.scenarios.split(","))
        unknown = wanted - {row for row, _, _, _ in plan}
        if unknown:
            ap.error("unknown scenarios: %s (known: %s)" % (", ".join(sorted(unknown)),
                                                             ", ".join(row for row, _, _, _ in plan)))
        plan = [p for p in plan if p[0] in wanted]

    a.commit = commit()
    real = faultlib.redlock_bin()
    faulty = faultlib.faulty_bin() if any(fault for _, _, fault, _ in plan) else None
    # Round-major: a partial file (written as rounds end) covers every class evenly.
    jobs = [(i, p) for i in range(a.rounds) for p in range(len(plan))]
    runs = {}  # (plan index, round) -> summary
    started = time.monotonic()

    def one(job):
        i, p = job
        row, name, fault, _ = plan[p]
        seconds = a.seconds if scenarios.SCENARIOS[name].seconds else None
        if name == "starvation":
            seconds = 60  # L3's criterion is 60s; the run ends as soon as every worker got the lock
        seed = None if a.seed is None else a.seed + p * a.rounds + i
        try:
            s = run_round(name, seconds, faulty if fault else real, fault, seed)
        except Exception as e:  # a broken round is a failed round, the soak goes on
            s = faultlib.Summary(scenario=name, failures=["harness error: %r" % e])
        with lock:
            runs[p, i] = s
            sys.stderr.write("soak: %s round %d/%d done (%d of %d, %.0f s)\n"
                             % (row, i + 1, a.rounds, len(runs), len(jobs), time.monotonic() - started))
            faultlib.print_summary(s)
            rows = summarize(plan, runs, a.rounds)
            write(a, rows, runs, plan, real, faulty, started, done=len(runs) == len(jobs))
        return s

    lock = threading.Lock()
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        list(pool.map(one, jobs))
    rows = summarize(plan, runs, a.rounds)
    print(table(rows))
    print("written: %s" % a.out)
    bad = [r["scenario"] for r in rows if r["verdict"] in ("FAIL", "MISSED")]
    if bad:
        print("not as expected: %s" % ", ".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
