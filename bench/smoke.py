"""CTest's bench.smoke: scripts/bench --quick on the rows start-up and cycle, against the servers the
bench starts itself, with the binary CTest names in REDLOCK_BIN. Checks only that the table has its
rows and that the JSON parses: timing targets live in the benchmark's output, not in tests.
Exit 77 (skipped) when the bench's references cannot be installed (no network, say).
"""

import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP = 77


def main():
    if not os.environ.get("REDLOCK_BIN"):
        print("bench.smoke: REDLOCK_BIN is not set", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="redlock-bench-smoke-") as tmp:
        out = os.path.join(tmp, "bench.json")
        try:
            r = subprocess.run([os.path.join(ROOT, "scripts", "bench"), "--quick", "--rows", "startup,cycle", "--json", out],
                               cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, timeout=100,
                               env=dict(os.environ, REDLOCK_BENCH_NPM_TIMEOUT="60"))
        except subprocess.TimeoutExpired:
            print("bench.smoke: scripts/bench did not end within 100 s", file=sys.stderr)
            return 1
        stdout, stderr = r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")
        sys.stdout.write(stdout)
        sys.stderr.write(stderr)
        if r.returncode == SKIP:
            print("bench.smoke: skipped (the bench's references cannot be installed)")
            return SKIP
        problems = []
        if r.returncode != 0:
            problems.append("scripts/bench exited %d" % r.returncode)
        table = [line for line in stdout.splitlines() if line.startswith("| ")]
        if not table or table[0] != "| measure | redlock | reference | ratio | target | met? |":
            problems.append("no table header on stdout")
        for wanted in ("`acquire -n` + `release`", "start-up: `redlock --version`"):
            if not any(line.startswith("| " + wanted) for line in table):
                problems.append("no table row for %s" % wanted)
        for line in table[2:]:
            if line.count(" | ") != 5:
                problems.append("not 6 columns: %s" % line)
        try:
            with open(out) as f:
                doc = json.load(f)
            rows = {line["row"] for line in doc["lines"]}
            if rows != {"cycle", "startup"}:
                problems.append("JSON rows %s, not cycle and startup" % sorted(rows))
            if doc["errors"]:
                problems.append("JSON errors: %s" % doc["errors"])
            for line in doc["lines"]:
                for side in ("redlock", "reference"):
                    if not isinstance(line[side].get("value"), (int, float)):
                        problems.append("%s has no %s value" % (line["measure"], side))
        except (OSError, ValueError, KeyError, TypeError) as e:
            problems.append("bad JSON in %s: %s" % (out, e))
    for p in problems:
        print("bench.smoke: " + p, file=sys.stderr)
    print("bench.smoke: %s" % ("failed" if problems else "ok"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
