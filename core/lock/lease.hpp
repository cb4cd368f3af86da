// A lock being kept: it knows its validity deadline on the monotonic clock and renews itself in
// the background, on the caller's event loop. Used by `run`; the process handling stays in cli/.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/lock/redlock.hpp"

namespace redlock {

class Lease {
 public:
  // RENEW_EVERY is the cadence while renewals succeed. RESERVE is the validity the holder needs
  // at the end (to stop its work): a renewal is always started while there is time for another
  // before valid_until − RESERVE, however little validity the lock was taken with.
  Lease(Network& network, LockKeys keys, std::string token, Duration ttl, double drift, TimePoint valid_until,
        Duration renew_every, Duration reserve);

  TimePoint valid_until() const { return valid_until_; }
  // When the next renewal is due (kNever while one is out).
  TimePoint next_renewal() const { return round_ ? kNever : next_renewal_; }
  bool renewing() const { return round_ != nullptr; }
  // A renewal is out and its outcome is known, or a late answer of the last one came: poll() has
  // something to do.
  bool decided() const { return (round_ && round_->decided()) || late_answers(); }
  std::size_t renewals() const { return renewals_; }
  // How many renewals put the lock back on servers that had lost it (restarted empty).
  std::size_t heals() const { return heals_; }
  // What a heal writes beside the lock: the owner record and the fence it was taken with.
  void heal_with(Heal heal) { heal_ = std::move(heal); }
  // Why the last renewal failed; when the lock is gone (Event::Gone), what the servers answered in
  // numbers ("extended on 0 of 3 servers"), since "gone" says the rest.
  const std::string& last_error() const { return last_error_; }

  // Sends an extend to every server; poll() tells the outcome.
  void start_renewal();

  enum class Event {
    None,     // nothing decided yet (or no renewal out)
    Renewed,  // a quorum extended in time: valid_until moved on
    Failed,   // no quorum this time (servers down or slow): try again soon
    Gone,     // a quorum said the token is not there: the lock is lost for sure
  };
  Event poll();

 private:
  // The next renewal: AFTER from now when that leaves room for a retry before the last moment one
  // could help, else halfway to that moment.
  TimePoint schedule(TimePoint now, Duration after) const;
  // The last renewal that extended the lock is kept until every server answered it: a server
  // restarted empty answers late (its connection is new), after the quorum decided, and is put
  // back on its answer.
  bool late_answers() const;
  void heal_late();

  Network& network_;
  LockKeys keys_;
  std::string token_;
  Duration ttl_;
  double drift_;
  TimePoint valid_until_;
  Duration renew_every_;
  Duration reserve_;
  TimePoint next_renewal_;
  std::unique_ptr<ExtendRound> round_;
  std::unique_ptr<ExtendRound> last_;  // the last renewal that extended the lock, until all answered
  std::vector<bool> healed_;           // its servers put back (or answered otherwise)
  TimePoint last_valid_until_{};       // the validity it gave: no heal after it, so it is dropped then
  std::size_t renewals_ = 0;
  Heal heal_;
  std::size_t heals_ = 0;
  std::string last_error_;
};

}  // namespace redlock
