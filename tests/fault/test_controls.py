"""Negative controls: a lock broken on purpose must be caught by a checker. redlock-faulty with
REDLOCK_FAULT=release-any / no-validity / half-quorum /
inherit-any-token / semaphore-extra-slot / semaphore-majority / shared-ignores-writer /
grant-keeps-short-expiry / no-quorum-at-once (core/lock/faults.hpp), and the real binary with a
holder's server restarted at once without persistence. Each runs a scenario that the real binary
passes (test_safety.py, test_holder.py, test_crash.py) and asserts that the violation IS found."""

from faulttest import ScenarioTest, main


class Controls(ScenarioTest):
    def test_release_any_is_caught_by_foreign_releases_and_overlaps(self):
        s = self.run_scenario("stale-token", 5, fault="release-any")
        self.assertCaught(s, "foreign_releases")
        self.assertCaught(s, "overlaps", "lost_updates", "lost_updates_unfenced", "fence_violations")

    def test_no_validity_is_caught_by_the_validity_checker(self):
        s = self.run_scenario("quorum-loss", 8, fault="no-validity")
        self.assertCaught(s, "outlived_validity", "overlaps")

    def test_half_quorum_is_caught_by_overlaps(self):
        s = self.run_scenario("split-brain", 8, fault="half-quorum")
        self.assertCaught(s, "overlaps")

    def test_a_token_shared_by_sibling_workers_is_caught_by_overlaps(self):
        s = self.run_scenario("siblings", 6, fault="inherit-any-token")
        self.assertCaught(s, "overlaps")

    def test_a_semaphore_with_one_slot_too_many_is_caught_admitting_one_more_holder(self):
        s = self.run_scenario("semaphore", 4, fault="semaphore-extra-slot")
        self.assertCaught(s, "overlaps")
        self.assertEqual(s["most_at_once"], 4)

    def test_a_semaphore_with_a_plain_majority_over_per_server_limits_is_caught_admitting_k_plus_1(self):
        s = self.run_scenario("semaphore-cuts", 5, fault="semaphore-majority")
        self.assertCaught(s, "overlaps")
        self.assertEqual(s["most_at_once"], 3)

    def test_readers_that_ignore_the_writer_are_caught_overlapping_one(self):
        s = self.run_scenario("shared", 4, fault="shared-ignores-writer")
        self.assertCaught(s, "overlaps")

    def test_a_handed_over_lock_that_keeps_the_short_expiry_is_caught_by_overlaps(self):
        s = self.run_scenario("handover", 16, fault="grant-keeps-short-expiry")
        self.assertCaught(s, "overlaps")

    def test_a_wait_that_gives_up_at_the_first_attempt_without_a_quorum_is_caught(self):
        s = self.run_scenario("blip", 8, fault="no-quorum-at-once")
        self.assertCaught(s, "waits_given_up_early")

    def test_crash_restart_without_persistence_is_caught(self):
        s = self.run_scenario("crash-restart-empty", 10)
        self.assertCaught(s, "overlaps", "fence_violations", "lost_updates", "lost_updates_unfenced")


if __name__ == "__main__":
    main()
