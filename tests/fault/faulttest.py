"""What the fault tests share: run a scenario with the real binary (REDLOCK_BIN) or with the test
binary and a negative control (REDLOCK_FAULTY_BIN, REDLOCK_FAULT), print its summary, and assert
that it passed or that a checker caught the control."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import faultlib  # noqa: E402
import scenarios  # noqa: E402


class ScenarioTest(unittest.TestCase):
    maxDiff = None

    def run_scenario(self, name, seconds=None, fault=None, real=False):
        """FAULT: the negative control, run with redlock-faulty (REAL: a control made by the scenario
        itself, with the real binary)."""
        binary = faultlib.faulty_bin() if fault and not real else faultlib.redlock_bin()
        try:
            s = scenarios.run_scenario(name, seconds, binary, fault)
        except scenarios.NetnsUnavailable as e:
            self.skipTest(str(e))
        sys.stderr.write("\n%s%s:\n" % (name, " [%s]" % fault if fault else ""))
        faultlib.print_summary(s)
        return s

    def assertPassed(self, s):
        self.assertEqual(s["failures"], [], "%s failed its criteria (seed %s)" % (s["scenario"], s.get("seed")))

    def assertCaught(self, s, *counters):
        """The control was caught: at least one of COUNTERS is positive, and the scenario failed."""
        found = {c: s.get(c) for c in counters}
        self.assertTrue(any((v or 0) > 0 for v in found.values()),
                        "negative control %s NOT caught: %s (seed %s)" % (s["scenario"], found, s.get("seed")))
        self.assertNotEqual(s["failures"], [])


def main():
    unittest.main(verbosity=2)
