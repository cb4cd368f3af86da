"""The soak's verdicts on hand-made round summaries: a class passes only when every round passed, a
negative control counts as caught only when every round failed, and a class with no round ended
(a partial file) or only skipped rounds says so. No servers, no binary."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import soak  # noqa: E402


def round_(cycles=10, overlaps=0, failures=(), skipped=None, p99=None):
    r = {"scenario": "x", "seconds": 120.0, "cycles": cycles, "overlaps": overlaps, "failures": list(failures),
         "p99_acquire_ms": p99}
    if skipped:
        r["skipped"] = skipped
    return r


PLAN = [("contention", "contention", None, "pass"), ("control:half-quorum", "split-brain", "half-quorum", "caught")]


def verdicts(runs, rounds=2):
    return {r["scenario"]: r["verdict"] for r in soak.summarize(PLAN, runs, rounds)}


class Verdicts(unittest.TestCase):
    def test_every_round_passing_and_every_control_round_failing(self):
        runs = {(0, 0): round_(), (0, 1): round_(), (1, 0): round_(overlaps=3, failures=["overlap"]),
                (1, 1): round_(overlaps=1, failures=["overlap"])}
        self.assertEqual(verdicts(runs), {"contention": "ok", "control:half-quorum": "caught"})

    def test_one_failed_round_fails_the_class(self):
        runs = {(0, 0): round_(), (0, 1): round_(overlaps=1, failures=["overlap"])}
        self.assertEqual(verdicts(runs)["contention"], "FAIL")

    def test_a_control_round_that_passed_is_a_missed_control(self):
        runs = {(1, 0): round_(overlaps=2, failures=["overlap"]), (1, 1): round_()}
        self.assertEqual(verdicts(runs)["control:half-quorum"], "MISSED")

    def test_a_class_with_no_round_ended_is_pending_not_passed(self):
        runs = {(0, 0): round_()}
        self.assertEqual(verdicts(runs), {"contention": "ok", "control:half-quorum": "pending"})

    def test_only_skipped_rounds(self):
        runs = {(0, 0): round_(skipped="no namespace"), (0, 1): round_(skipped="no namespace")}
        self.assertEqual(verdicts(runs)["contention"], "skipped")

    def test_totals_and_the_worst_rounds_p99(self):
        runs = {(0, 0): round_(cycles=7, p99=120.0), (0, 1): round_(cycles=5, p99=480.5)}
        row = soak.summarize(PLAN, runs, 2)[0]
        self.assertEqual((row["rounds"], row["cycles"], row["seconds"], row["p99_acquire_ms"]), (2, 12, 240.0, 480.5))


if __name__ == "__main__":
    unittest.main()
