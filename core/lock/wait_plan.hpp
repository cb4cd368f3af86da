// When a waiter tries next. Pure timing logic, without I/O, so that its rules are unit-tested:
//  - subscribed to wake-ups: sleep until a release is announced, the holder's lock could have
//    expired on a quorum, or a slow fallback poll (20 × the retry delay) for holders that never
//    announce (crashed holders);
//  - behind a holder that keeps no owner record (node-redlock, redsync, redis-py: they delete
//    their key without a word): poll from the retry delay, backing off to at most a second, so
//    that the hand-off comes within a second of their release;
//  - not subscribed: poll every retry delay, jittered, as other Redlock clients do;
//  - a split vote (some votes but no quorum): back off by a jittered retry delay;
//  - on an announced release, the waiters spread their attempts over one round trip each, so that
//    one goes first and the others see "acquired" and go back to sleep instead of stampeding; the
//    longer a waiter has waited, the earlier in that window it tends to draw, so the oldest tend
//    to win (but waiters of one age never bunch up: they spread over at least half the window);
//  - an attempt without a quorum gives back what it took and announces a retraction: a split
//    vote, whose contenders retry after a jittered retry delay; the others do the same instead of
//    jumping in at once, or every retraction would set off the next split.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>

#include "core/util/clock.hpp"

namespace redlock {

class WaitPlan {
 public:
  WaitPlan(Duration retry_delay, std::uint64_t seed);

  // The slow poll used while subscribed.
  Duration fallback() const { return retry_delay_ * 20; }

  // The poll behind a holder that never announces, at most this far apart.
  static constexpr Duration kQuietPollCeiling = std::chrono::seconds(1);

  // After a failed attempt at NOW. HOLDER_ANNOUNCES: the holder is one whose release wakes us.
  TimePoint after_attempt(TimePoint now, bool split_vote, std::optional<Duration> holder_free_in, bool subscribed,
                          bool holder_announces = true);
  // A release was announced; WAITERS is how many are subscribed (ourselves included). A waiter
  // that has WAITED longer draws from a shorter window, so that nobody is passed over for long.
  TimePoint on_released(TimePoint now, TimePoint planned, std::size_t waiters, Duration waited);
  // A release named the queue's first live waiters. PLACE is ours among them: 0 tries at once, the
  // next after a jittered retry delay (in case the first does not answer: a dead waiter whose
  // heartbeat has not expired yet); a waiter not named sleeps on, but no longer than one
  // HEARTBEAT, in case every one named is dead (then spread as on_released spreads WAITERS). The
  // one that takes the lock announces it, which sends the others back to sleep (on_acquired).
  // GRANTED: the release handed the lock to the first one named for this long; the next waits that
  // out first (the first may have died since its last heartbeat).
  TimePoint on_named(TimePoint now, TimePoint planned, std::optional<std::size_t> place, Duration heartbeat,
                     std::size_t waiters, Duration waited, Duration granted = Duration::zero());
  // Another attempt gave back what it took (it had no quorum): try after a jittered retry delay.
  TimePoint on_retracted(TimePoint now, TimePoint planned);
  // Another waiter took the lock: back to sleep until its lock could expire if it never
  // announces a release (TTL_GUESS: ours, as holders of one name mostly share it), or the slow
  // schedule, whichever comes first.
  TimePoint on_acquired(TimePoint now, Duration ttl_guess, bool subscribed);
  // A round trip seen in an attempt. The unit of the spread is twice the shortest seen in this
  // wait: waiters must share one unit, and one measured on a busy moment would otherwise draw
  // late at every release, be beaten to it each time, never try again to measure anew, and
  // starve.
  void observe_round_trip(Duration rtt);

  // Twice the shortest round trip seen (a default before the first), never under kMinSlot.
  Duration slot() const;

 private:
  Duration jittered(Duration base, double low, double high);
  // The next gap of the poll behind a silent holder: the retry delay at first, half again each
  // time, up to kQuietPollCeiling (or the retry delay, when that is longer).
  Duration quiet_poll();

  Duration retry_delay_;
  Duration quiet_gap_;
  std::optional<Duration> shortest_rtt_;
  std::mt19937_64 rng_;
};

}  // namespace redlock
