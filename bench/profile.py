"""Where redlock's time goes, in figures that a busy machine does not blur: callgrind instruction counts
of `redlock --version` and of `redlock acquire -n` against 5 servers, `strace -c` of an acquire,
`LD_DEBUG=statistics` of start-up, and the resident set of a `run` by mapping.

    REDLOCK_BIN=build/cli/redlock /usr/bin/python3 bench/profile.py [--out DIR] [--top N]

Needs valgrind, strace, redis-server and python3-redis (Debian packages); the servers are started
here on loopback ports and killed at the end. Raw outputs go to DIR (default bench/results/profile).
"""

import argparse
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from cluster import Cluster  # noqa: E402


def run(argv, env=None, **kw):
    return subprocess.run(argv, env=env, capture_output=True, timeout=300, **kw)


def section(title):
    print("\n## " + title + "\n")


def callgrind(bin_, args, out, top, env):
    r = run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, bin_] + args, env=env)
    if r.returncode != 0:
        raise RuntimeError("callgrind %s: exit %d: %s" % (args, r.returncode, r.stderr.decode()[-800:]))
    total = re.search(r"Collected : (\d+)", r.stderr.decode())
    print("total instructions: %s" % (total.group(1) if total else "?"))
    for inclusive in ("no", "yes"):
        ann = run(["callgrind_annotate", "--inclusive=" + inclusive, "--threshold=100", out]).stdout.decode(errors="replace")
        rows = [line for line in ann.splitlines() if re.match(r"^\s*[\d,]+ \(", line)]
        print("\n%s (top %d):\n" % ("inclusive" if inclusive == "yes" else "self", top))
        print("```")
        for line in rows[:top]:
            print(line.strip()[:160])
        print("```")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "profile"))
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    bin_ = os.path.abspath(os.environ.get("REDLOCK_BIN") or os.path.join(ROOT, "build", "cli", "redlock"))
    os.makedirs(args.out, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REDLOCK_")}
    env["LC_ALL"] = "C"
    c = Cluster(5)
    try:
        spec = c.spec()
        # Under valgrind a request is ~50 times slower: a longer per-request deadline than the 100ms default.
        acquire = ["-S", spec, "--timeout", "5s", "acquire", "-n", "profile"]
        release = ["-S", spec, "release", "--force", "profile"]

        section("callgrind: redlock --version")
        callgrind(bin_, ["--version"], os.path.join(args.out, "callgrind.version"), args.top, env)

        section("callgrind: redlock acquire -n, 5 servers")
        callgrind(bin_, acquire, os.path.join(args.out, "callgrind.acquire"), args.top, env)
        run([bin_] + release, env=env)

        section("strace -c -f: redlock acquire -n, 5 servers")
        out = os.path.join(args.out, "strace.acquire")
        r = run(["strace", "-c", "-f", "-o", out, bin_] + acquire, env=env)
        run([bin_] + release, env=env)
        with open(out) as f:
            print("```\n" + f.read().rstrip() + "\n```")
        out = os.path.join(args.out, "strace.acquire.trace")
        run(["strace", "-f", "-r", "-o", out, bin_] + acquire, env=env)
        run([bin_] + release, env=env)
        with open(out) as f:
            calls = [line.split(None, 2)[2].split("(")[0] for line in f if len(line.split(None, 2)) > 2]
        counted = {}
        for name in calls:
            counted[name] = counted.get(name, 0) + 1
        print("\nsystem calls in order of count: " + ", ".join("%s %d" % kv for kv in sorted(counted.items(), key=lambda kv: -kv[1])))

        section("LD_DEBUG=statistics: redlock --version")
        r = run([bin_, "--version"], env=dict(env, LD_DEBUG="statistics"))
        text = re.sub(r"^\s*\d+:\s*", "", r.stderr.decode(errors="replace"), flags=re.M)
        print("```\n" + text.strip() + "\n```")
        r = run(["sh", "-c", "LD_DEBUG=statistics /bin/true"], env=env)
        text = re.sub(r"^\s*\d+:\s*", "", r.stderr.decode(errors="replace"), flags=re.M)
        print("\n/bin/true, for comparison:\n```\n" + text.strip() + "\n```")

        section("resident set by mapping: redlock run --ttl 1s -- sleep 1.5, after 1 s")
        p = subprocess.Popen([bin_, "-S", spec, "run", "--ttl", "1s", "profile-rss", "--", "sleep", "1.5"], env=env)
        try:
            time.sleep(1.0)
            rss, cur = {}, None
            with open("/proc/%d/smaps" % p.pid) as f:
                for line in f:
                    parts = line.split()
                    if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                        cur = parts[5] if len(parts) > 5 else "[anon]"
                    elif parts[0] == "Rss:":
                        rss[cur] = rss.get(cur, 0) + int(parts[1])
            with open("/proc/%d/status" % p.pid) as f:
                hwm = re.search(r"VmHWM:\s*(\d+)", f.read()).group(1)
        finally:
            p.wait(timeout=30)
        print("VmHWM %s kB; RSS by mapping (kB):\n```" % hwm)
        for name, kb in sorted(rss.items(), key=lambda kv: -kv[1]):
            if kb:
                print("%6d %s" % (kb, name))
        print("```")
    finally:
        c.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
