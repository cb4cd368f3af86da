"""Servers that crash or are missing, with the real binary (RELIABILITY.md S3, S4, S16) and a holder
that crashes (S14, L1). The crash-restart without persistence is a negative control: test_controls.py."""

from faulttest import ScenarioTest, main


class Crash(ScenarioTest):
    def test_s4_holders_server_restarted_after_the_longest_ttl(self):
        self.assertPassed(self.run_scenario("crash-restart-delayed", 10))

    def test_s4_holders_server_restarted_at_once_with_appendfsync_always(self):
        self.assertPassed(self.run_scenario("crash-restart-aof", 8))

    def test_s12_s4_a_rolling_restart_keeps_the_lock_of_long_commands(self):
        self.assertPassed(self.run_scenario("rolling-restart"))

    def test_s12_s4_a_semaphore_through_a_rolling_restart_admits_at_most_its_limit(self):
        s = self.run_scenario("semaphore-rolling", 12)
        self.assertPassed(s)
        self.assertEqual(s["most_at_once"], 3)

    def test_s3_a_majority_frozen_for_a_while_is_waited_out(self):
        self.assertPassed(self.run_scenario("blip"))

    def test_s3_three_of_five_down_is_69_and_leaves_no_key(self):
        self.assertPassed(self.run_scenario("no-quorum"))

    def test_s16_one_server_listed_twice_is_refused(self):
        self.assertPassed(self.run_scenario("duplicate-server"))

    def test_s14_l1_holder_killed_9(self):
        self.assertPassed(self.run_scenario("holder-crash", 9))


if __name__ == "__main__":
    main()
