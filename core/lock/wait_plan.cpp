#include "core/lock/wait_plan.hpp"

#include <algorithm>

namespace redlock {

namespace {

// No spread slot is shorter than this, however fast the servers answer: waking up and
// sending an attempt takes a process about this long.
constexpr Duration kMinSlot = std::chrono::microseconds(300);

}  // namespace

WaitPlan::WaitPlan(Duration retry_delay, std::uint64_t seed)
    : retry_delay_(retry_delay), quiet_gap_(retry_delay), rng_(seed) {}

Duration WaitPlan::jittered(Duration base, double low, double high) {
  std::uniform_real_distribution<double> dist(low, high);
  return std::chrono::duration_cast<Duration>(
      std::chrono::duration<double, Duration::period>(static_cast<double>(base.count()) * dist(rng_)));
}

Duration WaitPlan::quiet_poll() {
  // Jittered below the gap, never above it: the gap is the promise of how soon a release is seen.
  Duration gap = jittered(quiet_gap_, 0.5, 1.0);
  quiet_gap_ = std::max(retry_delay_, std::min<Duration>(quiet_gap_ * 3 / 2, kQuietPollCeiling));
  return gap;
}

TimePoint WaitPlan::after_attempt(TimePoint now, bool split_vote, std::optional<Duration> holder_free_in,
                                  bool subscribed, bool holder_announces) {
  if (split_vote) return now + jittered(retry_delay_, 0.5, 1.5);
  TimePoint next = !subscribed        ? now + jittered(retry_delay_, 0.5, 1.5)
                   : holder_announces ? now + jittered(fallback(), 0.75, 1.25)
                                      : now + quiet_poll();
  if (holder_free_in) {
    // Everyone waiting on this holder wakes at its expiry: spread them a little.
    next = std::min(next, now + *holder_free_in + jittered(slot(), 0.0, 4.0));
  }
  return next;
}

TimePoint WaitPlan::on_released(TimePoint now, TimePoint planned, std::size_t waiters, Duration waited) {
  Duration window = slot() * static_cast<Duration::rep>(waiters > 1 ? waiters - 1 : 0);
  // Several servers announce the same release: the first announcement set the plan.
  if (planned <= now + window) return planned;
  if (window == Duration::zero()) return now;
  // Ageing: after a second of waiting the draw is from the first half of the window, and no
  // narrower, however long the wait: waiters who all waited long must not all go at once.
  double age = std::chrono::duration<double>(waited).count();
  return now + jittered(window, 0.0, std::max(0.5, 1.0 / (1.0 + age)));
}

TimePoint WaitPlan::on_named(TimePoint now, TimePoint planned, std::optional<std::size_t> place, Duration heartbeat,
                             std::size_t waiters, Duration waited, Duration granted) {
  if (place && *place == 0) return now;
  if (place) return std::min(planned, now + granted + jittered(retry_delay_, 1.0, 1.5));
  // Every one named dead: the others try once a heartbeat has passed, spread as after a release.
  return std::min(planned, on_released(now + heartbeat, kNever, waiters, waited + heartbeat));
}

TimePoint WaitPlan::on_retracted(TimePoint now, TimePoint planned) {
  return std::min(planned, now + jittered(retry_delay_, 0.5, 1.5));
}

TimePoint WaitPlan::on_acquired(TimePoint now, Duration ttl_guess, bool subscribed) {
  TimePoint slow = now + (subscribed ? jittered(fallback(), 0.75, 1.25) : jittered(retry_delay_, 0.5, 1.5));
  return std::min(slow, now + ttl_guess + jittered(slot(), 0.0, 4.0));
}

void WaitPlan::observe_round_trip(Duration rtt) {
  shortest_rtt_ = shortest_rtt_ ? std::min(*shortest_rtt_, rtt) : rtt;
}

Duration WaitPlan::slot() const {
  return shortest_rtt_ ? std::max(kMinSlot, 2 * *shortest_rtt_) : std::chrono::microseconds(500);
}

}  // namespace redlock
