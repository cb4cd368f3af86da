#include <doctest/doctest.h>

#include "core/lock/wait_plan.hpp"

using namespace redlock;
using namespace std::chrono_literals;

namespace {
const TimePoint t0 = TimePoint(1h);
}

TEST_CASE("polling without subscriptions: every retry delay, jittered 0.5-1.5x") {
  WaitPlan plan(200ms, 1);
  for (int i = 0; i < 200; ++i) {
    TimePoint next = plan.after_attempt(t0, false, std::nullopt, false);
    CHECK(next >= t0 + 100ms);
    CHECK(next <= t0 + 300ms);
  }
}

TEST_CASE("subscribed: no poll before the holder could be free, slow fallback otherwise") {
  WaitPlan plan(200ms, 2);
  for (int i = 0; i < 200; ++i) {
    // The holder's lock expires in 2s: wake then (plus a small spread), not every 200ms.
    TimePoint next = plan.after_attempt(t0, false, 2s, true);
    CHECK(next >= t0 + 2s);
    CHECK(next <= t0 + 2s + 10ms);
    // Unknown expiry: the fallback poll, 20x the retry delay, jittered 0.75-1.25x.
    TimePoint slow = plan.after_attempt(t0, false, std::nullopt, true);
    CHECK(slow >= t0 + 3s);
    CHECK(slow <= t0 + 5s);
  }
}

TEST_CASE("a waiter costs at most 2 commands per second while subscribed (5 servers per attempt)") {
  WaitPlan plan(200ms, 3);
  Duration total{};
  for (int i = 0; i < 1000; ++i) total += plan.after_attempt(t0, false, std::nullopt, true) - t0;
  double attempts_per_second = 1000.0 / std::chrono::duration<double>(total).count();
  CHECK(attempts_per_second * 5 <= 2.0);
}

TEST_CASE("behind a holder that never announces: from the retry delay, backing off to at most 1s") {
  WaitPlan plan(200ms, 5);
  Duration total{};
  for (int i = 0; i < 100; ++i) {
    Duration gap = plan.after_attempt(t0, false, std::nullopt, true, false) - t0;
    CHECK(gap <= WaitPlan::kQuietPollCeiling);
    if (i == 0) CHECK(gap <= 200ms);
    if (i == 0) CHECK(gap >= 100ms);
    if (i >= 10) total += gap;
  }
  // Once backed off, about one attempt a second, never slower.
  double attempts_per_second = 90.0 / std::chrono::duration<double>(total).count();
  CHECK(attempts_per_second >= 1.0);
  CHECK(attempts_per_second <= 1.5);
  // A retry delay longer than the ceiling is kept as it is.
  WaitPlan slow(3s, 6);
  for (int i = 0; i < 20; ++i) CHECK(slow.after_attempt(t0, false, std::nullopt, true, false) - t0 <= 3s);
}

TEST_CASE("split vote backs off by a jittered retry delay") {
  WaitPlan plan(100ms, 4);
  TimePoint next = plan.after_attempt(t0, true, 5s, true);
  CHECK(next >= t0 + 50ms);
  CHECK(next <= t0 + 150ms);
}

TEST_CASE("an announced release: one waiter goes at once, many spread over a round trip each") {
  WaitPlan plan(200ms, 5);
  plan.observe_round_trip(1ms);  // slot = 2ms
  CHECK(plan.on_released(t0, t0 + 4s, 1, 0s) == t0);
  for (int i = 0; i < 100; ++i) {
    TimePoint next = plan.on_released(t0, t0 + 4s, 11, 0s);
    CHECK(next >= t0);
    CHECK(next <= t0 + 20ms);
  }
  // A second announcement of the same release (another server) keeps the plan.
  TimePoint planned = t0 + 3ms;
  CHECK(plan.on_released(t0, planned, 11, 0s) == planned);
}

TEST_CASE("waiters that have waited longer draw earlier in the window, but never all at once") {
  WaitPlan plan(200ms, 7);
  plan.observe_round_trip(1ms);  // slot = 2ms, 11 waiters: a 20ms window
  Duration fresh{}, old{};
  TimePoint first = kNever, last{};
  for (int i = 0; i < 1000; ++i) {
    fresh += plan.on_released(t0, t0 + 4s, 11, 0s) - t0;
    TimePoint next = plan.on_released(t0, t0 + 4s, 11, 19s);
    CHECK(next <= t0 + 10ms);  // the first half of the window
    old += next - t0;
    first = std::min(first, next);
    last = std::max(last, next);
  }
  CHECK(old * 3 < fresh * 2);  // the old draw earlier on average (1/4 of the window against 1/2)
  CHECK(last - first >= 9ms);  // waiters who all waited long still spread over half the window
}

TEST_CASE("a retraction (a split vote given back): retry after a jittered retry delay, not at once") {
  WaitPlan plan(100ms, 8);
  TimePoint first = kNever, last{};
  for (int i = 0; i < 200; ++i) {
    TimePoint next = plan.on_retracted(t0, t0 + 4s);
    CHECK(next >= t0 + 50ms);
    CHECK(next <= t0 + 150ms);
    first = std::min(first, next);
    last = std::max(last, next);
  }
  CHECK(last - first >= 80ms);
  CHECK(plan.on_retracted(t0, t0 + 10ms) == t0 + 10ms);  // an earlier plan stands
}

TEST_CASE("someone else took it: sleep until its lock could expire, or the slow schedule") {
  WaitPlan plan(200ms, 6);
  for (int i = 0; i < 100; ++i) {
    TimePoint next = plan.on_acquired(t0, 30s, true);
    CHECK(next >= t0 + 3s);
    CHECK(next <= t0 + 5s);
    // A short TTL: a holder that crashes is noticed at its expiry, not at the slow poll.
    TimePoint soon = plan.on_acquired(t0, 1s, true);
    CHECK(soon >= t0 + 1s);
    CHECK(soon <= t0 + 1s + 10ms);
  }
}

TEST_CASE("the spread unit is the shortest round trip of the wait: one slow answer does not widen it") {
  WaitPlan plan(200ms, 11);
  CHECK(plan.slot() == 500us);  // nothing measured yet
  plan.observe_round_trip(1ms);
  CHECK(plan.slot() == 2ms);
  // A busy moment: a waiter that took it as its unit would draw late at every release, be beaten
  // to the lock each time, never try again to measure anew, and wait on.
  plan.observe_round_trip(8ms);
  CHECK(plan.slot() == 2ms);
  for (int i = 0; i < 100; ++i) CHECK(plan.on_released(t0, t0 + 4s, 5, 0s) <= t0 + 8ms);
  plan.observe_round_trip(400us);
  CHECK(plan.slot() == 800us);
  plan.observe_round_trip(10us);
  CHECK(plan.slot() == 300us);  // never below what a process needs to wake up and send
}

TEST_CASE("a release that names queued waiters: the first at once, the second later, the rest sleep on") {
  WaitPlan p(200ms, 7);
  const TimePoint now = TimePoint(1h);
  const TimePoint slow = now + 4s;
  CHECK(p.on_named(now, slow, 0, 3s, 9, 1s) == now);
  for (int i = 0; i < 100; ++i) {
    const TimePoint second = p.on_named(now, slow, 1, 3s, 9, 1s);
    CHECK(second >= now + 200ms);
    CHECK(second <= now + 300ms);
    // Not named: no attempt before the heartbeat could have expired, in case every one named is dead.
    const TimePoint other = p.on_named(now, slow, std::nullopt, 3s, 9, 1s);
    CHECK(other >= now + 3s);
    CHECK(other <= slow);
    // An attempt already planned sooner is kept.
    CHECK(p.on_named(now, now + 50ms, std::nullopt, 3s, 9, 1s) == now + 50ms);
  }
}
