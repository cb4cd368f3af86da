"""The holder's side, with the real binary: paused past its TTL (S10: the fence saves the resource),
renewing a long command (S12), losing the quorum (S13), signalled (S15), and ten workers on one name
(L3)."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import faultlib
from faultlib import Cluster, redlock_bin
from faulttest import ScenarioTest, main


class Holder(ScenarioTest):
    def test_s10_s9_holder_paused_past_its_ttl_has_its_late_write_refused(self):
        s = self.run_scenario("holder-pause", 8)
        self.assertPassed(s)
        self.assertGreater(s["stale_rejected"], 0)

    def test_s12_command_running_5_ttl(self):
        self.assertPassed(self.run_scenario("renewal", 12))

    def test_s13_quorum_lost_while_holding(self):
        s = self.run_scenario("quorum-loss", 10)
        self.assertPassed(s)
        self.assertGreater(s["holders_at_loss"], 0)

    def test_s15_int_term_hup_to_a_holder(self):
        self.assertPassed(self.run_scenario("signals", 8))

    def test_l3_ten_workers_each_get_the_lock_within_60s(self):
        self.assertPassed(self.run_scenario("starvation", 60))


class PausedSupervisor(ScenarioTest):
    """`redlock run` stopped (SIGSTOP) past its validity while its command runs on and ends: the
    command ran without a valid lock (another client took it meanwhile), so `run` must not report it
    as a success: exit 79, outcome "lost" (cli.md: the lock was lost while CMD ran)."""

    def test_exit_status_is_79_when_the_command_outlived_the_validity(self):
        cluster = Cluster(3)
        tmp = tempfile.mkdtemp(prefix="redlock-fault-")
        try:
            env = faultlib.clean_env({"REDLOCK_SERVERS": cluster.spec})
            report, started = os.path.join(tmp, "report.json"), os.path.join(tmp, "started")
            # The command says when it runs: paused any earlier, `run` would still be acquiring (and
            # rightly answer 69, the quorum's answers having come after the validity).
            p = subprocess.Popen([redlock_bin(), "run", "--ttl", "1s", "--report", report, "job", "--", "sh", "-c",
                                  ': > "$0"; exec sleep 1.5', started],
                                 env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
            deadline = time.monotonic() + 10
            while not os.path.exists(started) and p.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertTrue(os.path.exists(started), "the command did not start: exit %s" % p.poll())
            os.kill(p.pid, signal.SIGSTOP)
            try:
                time.sleep(2.0)  # the validity (under 1s) is over; the command ends at 1.5s
                other = subprocess.run([redlock_bin(), "--json", "acquire", "-n", "--ttl", "5s", "job"], env=env,
                                       capture_output=True, timeout=30)
            finally:
                os.kill(p.pid, signal.SIGCONT)
            p.wait(timeout=30)
            self.assertEqual(other.returncode, 0, "another client could not take the expired lock: %r" % other)
            with open(report) as f:
                r = json.load(f)
            self.assertEqual((p.returncode, r["outcome"]), (79, "lost"),
                             "run reported %s/%s for a command that ran past its lock's validity while another "
                             "client held the lock; stderr: %s" % (p.returncode, r["outcome"], p.stderr.read().decode()))
        finally:
            cluster.stop()
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
