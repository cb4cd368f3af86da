#include "core/lock/lease.hpp"

#include <algorithm>

namespace redlock {

Lease::Lease(Network& network, LockKeys keys, std::string token, Duration ttl, double drift, TimePoint valid_until,
             Duration renew_every, Duration reserve)
    : network_(network),
      keys_(std::move(keys)),
      token_(std::move(token)),
      ttl_(ttl),
      drift_(drift),
      valid_until_(valid_until),
      renew_every_(renew_every),
      reserve_(reserve),
      next_renewal_(schedule(network.now(), renew_every)) {}

TimePoint Lease::schedule(TimePoint now, Duration after) const {
  // The cadence, when it leaves room for a retry (a quarter of it) before the last moment a
  // renewal can help. A lock taken slowly (servers that were frozen, a long --timeout) may have
  // less validity than the cadence assumes: then halfway to that moment, so that it is tried at
  // all, with time for another; the floor bounds the retries close to it.
  const TimePoint last = valid_until_ - reserve_;
  if (now + after + after / 4 <= last) return now + after;
  return now + std::min<Duration>(std::max<Duration>((last - now) / 2, std::chrono::milliseconds(1)), after);
}

void Lease::start_renewal() {
  if (round_) return;
  round_.emplace(network_, keys_, token_, ttl_, drift_);
}

Lease::Event Lease::poll() {
  if (!round_ || !round_->decided()) return Event::None;
  ExtendResult r = round_->result();
  // Confirmed on a quorum: put it back where a server lost it, without waiting for the answers.
  if (r.extended) {
    if (round_->heal(heal_)) ++heals_;
  }
  round_.reset();
  TimePoint now = network_.now();
  if (r.extended) {
    // A renewal that started earlier cannot move the deadline back.
    if (r.valid_until > valid_until_) valid_until_ = r.valid_until;
    ++renewals_;
    next_renewal_ = schedule(now, renew_every_);
    last_error_.clear();
    return Event::Renewed;
  }
  if (r.tally.no >= r.tally.needed()) {
    last_error_ = r.counts;
    return Event::Gone;
  }
  last_error_ = r.message;
  // Servers down or slow: try again well before the validity runs out.
  next_renewal_ = schedule(now, renew_every_ / 4);
  return Event::Failed;
}

}  // namespace redlock
