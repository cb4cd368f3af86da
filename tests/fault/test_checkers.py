"""The checkers on hand-made histories: each must pass a good history and catch a bad one (a checker
that cannot fail is a defect). No servers, no binary."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checkers  # noqa: E402
from checkers import INF  # noqa: E402


def cycle(w, n, start, end, fence, token=None, code=0, exit=True):
    """The events of one cycle: attempt, enter at START, exit at END (unless EXIT is False), done."""
    token = token or "t%d-%d" % (w, n)
    ev = [{"ev": "attempt", "w": w, "n": n, "t": start - 5},
          {"ev": "enter", "w": w, "n": n, "t": start, "fence": fence, "token": token}]
    if exit:
        ev.append({"ev": "exit", "w": w, "n": n, "t": end, "how": "end"})
    ev.append({"ev": "done", "w": w, "n": n, "t": end + 3, "code": code, "report": {"fence": fence}})
    return ev


def history(*cycles):
    return sorted((e for c in cycles for e in c), key=lambda e: e["t"])


class Holds(unittest.TestCase):
    def test_intervals_from_enter_to_exit_in_order_of_entry(self):
        hs = checkers.holds(history(cycle(1, 1, 200, 300, 2), cycle(0, 1, 100, 150, 1)))
        self.assertEqual([(h.w, h.start, h.end, h.fence) for h in hs], [(0, 100, 150, 1), (1, 200, 300, 2)])

    def test_without_an_exit_record_the_hold_lasts_until_the_worker_saw_the_end(self):
        hs = checkers.holds(history(cycle(0, 1, 100, 500, 1, exit=False)))
        self.assertEqual(hs[0].end, 503)

    def test_without_any_end_it_lasts_for_ever(self):
        hs = checkers.holds([{"ev": "enter", "w": 0, "n": 1, "t": 10, "fence": 1}])
        self.assertEqual(hs[0].end, INF)

    def test_cycles_that_never_entered_are_not_holds(self):
        hs = checkers.holds([{"ev": "attempt", "w": 0, "n": 1, "t": 1}, {"ev": "done", "w": 0, "n": 1, "t": 2, "code": 75}])
        self.assertEqual(hs, [])


class Overlaps(unittest.TestCase):
    def test_back_to_back_holds_do_not_overlap(self):
        hs = checkers.holds(history(cycle(0, 1, 100, 200, 1), cycle(1, 1, 200, 300, 2), cycle(0, 2, 301, 400, 3)))
        self.assertEqual(checkers.overlaps(hs), [])

    def test_two_holders_at_once_are_found(self):
        hs = checkers.holds(history(cycle(0, 1, 100, 200, 1), cycle(1, 1, 150, 300, 2)))
        found = checkers.overlaps(hs)
        self.assertEqual(len(found), 1)
        a, b, d = found[0]
        self.assertEqual((a.w, b.w, d), (0, 1, 50))

    def test_a_long_hold_overlapping_a_later_one_is_found_past_short_ones(self):
        # The sweep keeps the hold that reaches furthest, not only the previous one.
        hs = checkers.holds(history(cycle(0, 1, 100, 1000, 1), cycle(1, 1, 1100, 1200, 2), cycle(2, 1, 500, 600, 3)))
        found = checkers.overlaps(hs)
        self.assertEqual([(a.w, b.w) for a, b, _ in found], [(0, 2)])

    def test_a_hold_that_never_ended_overlaps_everything_after_it(self):
        hs = checkers.holds(history([{"ev": "enter", "w": 0, "n": 1, "t": 10, "fence": 1}], cycle(1, 1, 100, 200, 2)))
        self.assertEqual(len(checkers.overlaps(hs)), 1)

    def test_excluded_cycles_are_left_out(self):
        hs = checkers.holds(history(cycle(0, 1, 100, 200, 1), cycle(1, 1, 150, 300, 2)))
        self.assertEqual(checkers.overlaps(hs, exclude=[(0, 1)]), [])


class Fences(unittest.TestCase):
    def test_strictly_increasing_passes(self):
        hs = checkers.holds(history(cycle(0, 1, 100, 200, 1), cycle(1, 1, 300, 400, 2), cycle(0, 2, 500, 600, 7)))
        self.assertEqual(checkers.fence_violations(hs), [])

    def test_a_fence_going_back_is_caught(self):
        hs = checkers.holds(history(cycle(0, 1, 100, 200, 5), cycle(1, 1, 300, 400, 4)))
        self.assertEqual(len(checkers.fence_violations(hs)), 1)

    def test_a_repeated_fence_is_caught_twice_over(self):
        hs = checkers.holds(history(cycle(0, 1, 100, 200, 5), cycle(1, 1, 300, 400, 5)))
        whys = [why for _, _, why in checkers.fence_violations(hs)]
        self.assertIn("two holders share fence 5", whys)
        self.assertIn("fence 5 after 5", whys)

    def test_a_hold_without_a_fence_is_caught(self):
        hs = checkers.holds(history(cycle(0, 1, 100, 200, None)))
        self.assertEqual(len(checkers.fence_violations(hs)), 1)


class Resource(unittest.TestCase):
    def test_stale_writes(self):
        self.assertEqual(checkers.stale_accepted([1, 1, 2, 5, 5, 9]), [])
        self.assertEqual(checkers.stale_accepted([1, 3, 2, 4, 3]), [(2, 2, 3), (4, 3, 4)])

    def test_lost_updates(self):
        self.assertEqual(checkers.lost_updates(10, 10), 0)
        self.assertEqual(checkers.lost_updates(9, 10), 1)
        self.assertEqual(checkers.lost_updates(11, 10), -1)


class Liveness(unittest.TestCase):
    def test_time_from_each_heal_to_the_next_entry(self):
        self.assertEqual(checkers.after_heals([100, 500, 900], [50, 130, 600, 610]), [30, 100, None])

    def test_starved_workers(self):
        hs = checkers.holds(history(cycle(0, 1, 100, 200, 1), cycle(2, 1, 5000, 5100, 2)))
        self.assertEqual(checkers.starved(hs, range(3), 0, 1000), [1, 2])
        self.assertEqual(checkers.starved(hs, range(3), 0, 10000), [1])

    def test_fair_waiters_served_out_of_arrival_order(self):
        def fair(w, n, attempt, start, fairness="fair"):
            ev = cycle(w, n, start, start + 10, n)
            ev[0]["t"] = attempt
            ev[-1]["report"]["fairness"] = fairness
            return ev
        # 0 arrives first but 1, arriving 500 later, is served first: one inversion.
        hs = checkers.holds(history(fair(0, 1, 0, 2000), fair(1, 1, 500, 1000)))
        self.assertEqual([(x.w, y.w) for x, y in checkers.order_inversions(hs, 100)], [(0, 1)])
        # Within the slack (the join may take that long): not judged.
        self.assertEqual(checkers.order_inversions(hs, 600), [])
        # In order, a degraded hand-off, and a plain waiter (no fairness reported): none.
        ok = history(fair(0, 1, 0, 1000), fair(1, 1, 500, 2000), fair(2, 1, 600, 1500, "degraded"),
                     cycle(3, 1, 1200, 1300, 9))
        self.assertEqual(checkers.order_inversions(checkers.holds(ok), 100), [])

    def test_waits_past_their_limit(self):
        dones = [{"ev": "done", "w": 0, "n": 1, "report": {"wait_ms": 11000}},
                 {"ev": "done", "w": 0, "n": 2, "report": {"wait_ms": 31905.6}},
                 {"ev": "done", "w": 1, "n": 1, "report": {"wait_ms": 99000}},
                 {"ev": "done", "w": 0, "n": 3, "report": {}}]
        self.assertEqual(checkers.overdue_waits(dones, [11750, None]), [(0, 2, 31906, 11750)])
        self.assertEqual(checkers.overdue_waits(dones, [40000, None]), [])

    def test_a_code_before_the_wait_ended(self):
        dones = [{"ev": "done", "w": 0, "n": 1, "code": 69, "report": {"wait_ms": 10250.6}},
                 {"ev": "done", "w": 0, "n": 2, "code": 69, "report": {"wait_ms": 126.2}},
                 {"ev": "done", "w": 0, "n": 3, "code": 75, "report": {"wait_ms": 5}},
                 {"ev": "done", "w": 1, "n": 1, "code": 69, "report": {"wait_ms": 0}},
                 {"ev": "done", "w": 0, "n": 4, "code": 69, "report": {}}]
        self.assertEqual(checkers.gave_up_early(dones, [10000, None], (69,)),
                         [(0, 2, 69, 126, 10000), (1, 1, 69, 0, None), (0, 4, 69, None, 10000)])
        self.assertEqual(checkers.gave_up_early(dones[:1], [10000, None], (69,)), [])

    def test_percentile(self):
        self.assertIsNone(checkers.percentile([], 99))
        self.assertEqual(checkers.percentile([5], 99), 5)
        self.assertEqual(checkers.percentile(list(range(1, 101)), 99), 99)
        self.assertEqual(checkers.percentile([3, None, 1, 2], 50), 2)


class Validity(unittest.TestCase):
    TTL = 1000

    def test_a_hold_ending_before_loss_plus_validity_passes(self):
        hs = checkers.holds(history(cycle(0, 1, 100, 900, 1)))
        self.assertEqual(checkers.outlived_validity(hs, [200], self.TTL, drift=0.0, fixed_ns=0), [])

    def test_a_hold_running_on_past_it_is_caught(self):
        hs = checkers.holds(history(cycle(0, 1, 100, 1300, 1)))
        bad = checkers.outlived_validity(hs, [200], self.TTL, drift=0.0, fixed_ns=0)
        self.assertEqual([(h.w, t, late) for h, t, late in bad], [(0, 200, 100)])
        # The drift allowance shortens the validity: 1% of 1000 and 5 more make it 115 late.
        bad = checkers.outlived_validity(hs, [200], self.TTL, drift=0.01, fixed_ns=5)
        self.assertEqual([late for _, _, late in bad], [115])

    def test_holds_not_active_at_the_loss_are_not_judged(self):
        hs = checkers.holds(history(cycle(0, 1, 300, 5000, 1)))
        self.assertEqual(checkers.outlived_validity(hs, [200], self.TTL, drift=0.0, fixed_ns=0), [])


def slot_cycle(w, n, start, end, fence, slot):
    ev = cycle(w, n, start, end, fence)
    ev[1]["slot"] = slot
    return ev


class Semaphore(unittest.TestCase):
    def test_three_at_once_pass_a_limit_of_three_and_four_do_not(self):
        three = checkers.holds(history(slot_cycle(0, 1, 100, 400, 1, 0), slot_cycle(1, 1, 150, 300, 1, 1),
                                       slot_cycle(2, 1, 200, 500, 1, 2), slot_cycle(3, 1, 300, 600, 2, 1)))
        self.assertEqual(checkers.over_limit(three, 3), [])
        self.assertEqual(checkers.most_at_once(three), 3)
        four = checkers.holds(history(slot_cycle(0, 1, 100, 400, 1, 0), slot_cycle(1, 1, 150, 300, 1, 1),
                                      slot_cycle(2, 1, 200, 500, 1, 2), slot_cycle(3, 1, 250, 600, 1, 3)))
        bad = checkers.over_limit(four, 3)
        self.assertEqual([(a.w, b.w, d) for a, b, d in bad], [(0, 3, 50)])
        self.assertEqual(checkers.most_at_once(four), 4)

    def test_fences_increase_per_slot_not_across_slots(self):
        good = checkers.holds(history(slot_cycle(0, 1, 100, 200, 5, 0), slot_cycle(1, 1, 150, 250, 1, 1),
                                      slot_cycle(0, 2, 300, 400, 6, 0), slot_cycle(1, 2, 350, 450, 2, 1)))
        self.assertEqual(checkers.slot_fence_violations(good), [])
        self.assertNotEqual(checkers.fence_violations(good), [])  # across slots they do not increase
        bad = checkers.holds(history(slot_cycle(0, 1, 100, 200, 5, 0), slot_cycle(0, 2, 300, 400, 5, 0)))
        self.assertEqual(len(checkers.slot_fence_violations(bad)), 2)  # shared, and not increasing
        no_slot = checkers.holds(history(cycle(0, 1, 100, 200, 1)))
        self.assertEqual([why for _, _, why in checkers.slot_fence_violations(no_slot)], ["no slot"])


def reader_cycle(w, n, start, end, fence):
    ev = cycle(w, n, start, end, fence)
    ev[1]["reader"] = True
    return ev


class Shared(unittest.TestCase):
    def test_readers_may_overlap_one_another_never_a_writer(self):
        readers = checkers.holds(history(reader_cycle(0, 1, 100, 400, 0), reader_cycle(1, 1, 150, 300, 0),
                                         cycle(2, 1, 400, 500, 7)))
        self.assertEqual(checkers.shared_overlaps(readers), [])
        self.assertNotEqual(checkers.overlaps(readers), [])
        bad = checkers.holds(history(reader_cycle(0, 1, 100, 400, 0), cycle(2, 1, 350, 500, 7),
                                     cycle(3, 1, 450, 600, 8)))
        self.assertEqual([(a.w, b.w, d) for a, b, d in checkers.shared_overlaps(bad)], [(0, 2, 50), (2, 3, 50)])

    def test_a_readers_fence_is_at_least_every_earlier_writers(self):
        good = checkers.holds(history(cycle(2, 1, 100, 200, 7), reader_cycle(0, 1, 250, 300, 7),
                                      reader_cycle(1, 1, 260, 280, 7), cycle(2, 2, 300, 400, 8)))
        self.assertEqual(checkers.shared_fence_violations(good), [])
        stale = checkers.holds(history(cycle(2, 1, 100, 200, 7), reader_cycle(0, 1, 250, 300, 6)))
        self.assertEqual([why for _, _, why in checkers.shared_fence_violations(stale)],
                         ["a reader's fence below an earlier writer's"])
        back = checkers.holds(history(cycle(2, 1, 100, 200, 7), cycle(3, 1, 250, 300, 7)))
        self.assertNotEqual(checkers.shared_fence_violations(back), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
