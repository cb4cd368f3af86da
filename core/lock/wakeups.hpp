// One acquire's wait: the time of its next attempt (a WaitPlan), moved by the wake-up messages on
// the lock's channel, each parsed once into a WakeEvent. The subscription ends with the object, on
// every path out of the wait (exceptions included): no callback outlives it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/lock/wait_plan.hpp"
#include "core/net/network.hpp"
#include "core/util/clock.hpp"

namespace redlock {

// What a waiter hears on a lock's wake-up channel: the message "released N" (N waiters were
// subscribed where it was released), followed by the ids of the queued waiters it wakes first, when
// it names any, "retracted" (an attempt without a quorum gave back what it took) or "acquired"; or
// the subscription's own news that it is (re)confirmed (Subscribed, never a message's text).
// Anything else is Other.
struct WakeEvent {
  enum class Kind { Released, Retracted, Acquired, Subscribed, Other };
  Kind kind = Kind::Other;
  std::size_t waiters = 1;  // Released: how many were waiting
  // Released: the waiters it wakes, first to try first; empty: every waiter (no queue there).
  std::vector<std::string> named;
  // Released with the word "granted:MS": the release handed the lock to the first one named, for MS.
  std::optional<Duration> granted;
};

WakeEvent parse_wake_message(std::string_view message);
WakeEvent wake_event(const ChannelEvent& event);

// A waiter in the lock's queue (see acquire.lua): its id, which the releases name, the channel of
// its own it listens on instead of the lock's (a release wakes it alone, when its turn comes), and
// the keys its heartbeat keeps alive while it waits.
struct QueuedWaiter {
  std::string id;
  std::string channel;    // {KEY}:redlock:wake:ID
  std::string alive_key;  // {KEY}:redlock:waiter:ID
  std::string queue_key;  // {KEY}:redlock:waiters
  Duration heartbeat{};   // the expiry the heartbeat sets, refreshed three times within it
  std::string fair_key;   // {KEY}:redlock:fair for a fair waiter, which its heartbeat keeps too; else empty
  std::string grant_key;  // {KEY}:redlock:grant:ID for a waiter a release may hand the lock to; else empty
};

class Wakeups {
 public:
  // A wait that began at BEGIN and ends at DEADLINE, for a lock taken with TTL.
  Wakeups(Network& network, std::string channel, Duration ttl, Duration retry_delay, std::uint64_t seed,
          TimePoint begin, TimePoint deadline);
  ~Wakeups();
  Wakeups(const Wakeups&) = delete;
  Wakeups& operator=(const Wakeups&) = delete;

  // A lock with several holders (a semaphore's slots): another's "acquired" does not send this
  // waiter back to sleep, since another place may still be free.
  void set_many_holders(bool many);
  // A waiter in the lock's queue: it listens on its own channel, where only the releases that name
  // it are heard, and its heartbeat is refreshed while it sleeps. If the two waiters a release
  // names both died without taking the lock, the others try at their fallback poll.
  void set_queued(const QueuedWaiter& waiter);
  // The id under which this waiter joined the lock's queue where it could, when it listens on the
  // lock's channel all the same: a release that hands it the lock is still its own to take.
  void set_waiter_id(const std::string& id);
  // Before each attempt: what was heard during the last one is forgotten.
  void forget_heard();
  // The lock a release handed this waiter (see release.lua), once: the waiters that release named
  // (this one first), or empty when none was handed over since the last attempt.
  std::optional<std::vector<std::string>> take_grant();
  // The round trips of an attempt's answers (the median sets the spread of a hand-off).
  void observe(const std::vector<std::optional<Duration>>& latencies);
  bool subscribing() const { return subscribing_; }
  // Subscribes and waits (until SETTLE_BY, or INTERRUPTED) for enough servers to confirm it that a
  // release anywhere a quorum held the lock is heard.
  void subscribe(TimePoint settle_by, const std::function<bool()>& interrupted);
  // The time of the next attempt after a failed one at NOW.
  TimePoint plan(TimePoint now, bool split_vote, std::optional<Duration> holder_free_in, bool holder_announces);
  // Sleeps until the planned time, which wake-ups may move; false when interrupted.
  bool sleep(const std::function<bool()>& interrupted);

 private:
  struct State;
  bool reliable() const;
  // Refreshes the heartbeat when it is due (without waiting for the answers).
  void beat();

  Network& network_;
  std::string channel_;
  std::shared_ptr<State> state_;  // shared with the subscription's callback
  bool subscribing_ = false;
};

}  // namespace redlock
