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
  round_ = std::make_unique<ExtendRound>(network_, keys_, token_, ttl_, drift_);
}

bool Lease::late_answers() const {
  if (!last_) return false;
  const auto& results = last_->results();
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (results[i] && !healed_[i]) return true;
  }
  return false;
}

void Lease::heal_late() {
  if (!last_) return;
  // As safe as the heal at the decision while the validity that round gave lasts (the quorum that
  // confirmed the lock holds it until then, so nobody else can): heal() checks it is not over.
  if (last_->heal(heal_, healed_)) ++heals_;
  const auto& results = last_->results();
  for (std::size_t i = 0; i < results.size(); ++i) healed_[i] = healed_[i] || results[i].has_value();
  if (last_->round().complete() || network_.now() >= last_valid_until_) last_.reset();
}

Lease::Event Lease::poll() {
  heal_late();
  if (!round_ || !round_->decided()) return Event::None;
  ExtendResult r = round_->result();
  // Confirmed on a quorum: put it back where a server lost it, without waiting for the answers;
  // those that answer later are put back as they do.
  if (r.extended) {
    healed_.assign(round_->results().size(), false);
    if (round_->heal(heal_, healed_)) ++heals_;
    last_valid_until_ = r.valid_until;
    last_ = std::move(round_);
    heal_late();
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
