#include "lease.hpp"

namespace redlock {

Lease::Lease(Network& network, LockKeys keys, std::string token, Duration ttl, double drift, TimePoint valid_until,
             Duration renew_every)
    : network_(network),
      keys_(std::move(keys)),
      token_(std::move(token)),
      ttl_(ttl),
      drift_(drift),
      valid_until_(valid_until),
      renew_every_(renew_every),
      next_renewal_(network.now() + renew_every) {}

void Lease::start_renewal() {
  if (round_) return;
  round_.emplace(network_, keys_, token_, ttl_, drift_);
}

Lease::Event Lease::poll() {
  if (!round_ || !round_->decided()) return Event::None;
  ExtendResult r = round_->result();
  round_.reset();
  TimePoint now = network_.now();
  if (r.extended) {
    // A renewal that started earlier cannot move the deadline back.
    if (r.valid_until > valid_until_) valid_until_ = r.valid_until;
    ++renewals_;
    next_renewal_ = now + renew_every_;
    last_error_.clear();
    return Event::Renewed;
  }
  last_error_ = r.message;
  if (r.tally.no >= r.tally.needed()) return Event::Gone;
  // Servers down or slow: try again well before the validity runs out.
  next_renewal_ = now + renew_every_ / 4;
  return Event::Failed;
}

}  // namespace redlock
