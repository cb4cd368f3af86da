#include "core/net/subscription.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include "core/util/text.hpp"

namespace redlock {

namespace {

// A subscription that broke is re-established no sooner than this.
constexpr Duration kResubscribeDelay = std::chrono::seconds(1);
// Subscriptions are not on anyone's critical path: a busy server gets at least this long to confirm
// one, so that it does not flap (and its waiter fall back to polling) under load.
constexpr Duration kMinSubscribeDeadline = std::chrono::seconds(1);

}  // namespace

Subscription::Subscription(ConnectionConfig config, ConnectionObserver& observer)
    : Connection(std::move(config), observer) {}

void Subscription::subscribe(std::vector<std::string> channels, ChannelCallback on_event) {
  channels_ = std::move(channels);
  on_event_ = std::move(on_event);
  next_open_ = TimePoint{};
}

void Subscription::maintain(TimePoint now) {
  if (stream_ || channels_.empty() || now < next_open_) return;
  open(now);
  if (!stream_) {  // a Sentinel member whose master is not known yet
    next_open_ = now + kResubscribeDelay;
    return;
  }
  // One SUBSCRIBE each: a refusal refuses the whole command, and only the first channel must be allowed.
  for (const auto& channel : channels_) {
    encode_argv({"SUBSCRIBE", channel});
    asked_.push_back(Asked{false, channel, now, now + std::max(config_.timeout, kMinSubscribeDeadline)});
  }
  drive(now);
}

void Subscription::open(TimePoint now) {
  // A Sentinel member's subscriber goes where the commands go, once their master is confirmed; a
  // Cluster member's to the master of its channel's slot (the lock's).
  if (url().is_sentinel() || url().is_cluster()) {
    target_ = observer_.subscriber_target(config_.server, channels_.front());
    if (!target_) return;
  }
  open_stream(endpoint());
  if (encode_auth()) asked_.push_back(Asked{true, {}, now, now + config_.timeout});
}

TimePoint Subscription::next_deadline() const {
  TimePoint t = kNever;
  for (const auto& a : asked_) {
    if (!a.auth) t = std::min(t, a.deadline);
  }
  if (!stream_ && !channels_.empty()) t = std::min(t, next_open_);
  return t;
}

void Subscription::expire(TimePoint now) {
  // As for requests: what is readable is read before a confirmation counts as late.
  if (overdue(now)) drive(now);
  for (const auto& a : asked_) {
    if (a.auth || now < a.deadline) continue;
    fail(Failure::Timeout, "no subscription confirmed within " + ms_text(a.deadline - a.sent), now);
    return;
  }
}

bool Subscription::overdue(TimePoint now) const {
  return std::any_of(asked_.begin(), asked_.end(), [now](const Asked& a) { return !a.auth && now >= a.deadline; });
}

bool Subscription::take(Reply reply, TimePoint now) {
  if (reply.is_error()) {
    const bool later_channel = !asked_.empty() && !asked_.front().auth && asked_.front().channel != channels_.front();
    if (!later_channel) {
      fail(classify_error_reply(reply.str), "SUBSCRIBE refused: " + reply.str, now);
      return false;
    }
    const std::string channel = asked_.front().channel;
    asked_.pop_front();
    tell(ChannelEvent::Kind::Refused, channel, reply.str);
    return true;
  }
  if (!asked_.empty() && asked_.front().auth) {
    asked_.pop_front();  // AUTH's +OK
    return true;
  }
  if (reply.type != Reply::Type::Array || reply.elements.size() < 3) return true;
  const std::string& kind = reply.elements[0].str;
  if (kind == "subscribe") {
    if (!asked_.empty()) asked_.pop_front();
    if (reply.elements[1].str != channels_.front()) return true;
    subscribed_ = true;
    tell(ChannelEvent::Kind::Subscribed, channels_.front());
  } else if (kind == "message") {
    tell(ChannelEvent::Kind::Message, reply.elements[1].str, reply.elements[2].str);
  }
  return true;
}

// Whatever went wrong, the subscription is asked for again a little later.
void Subscription::fail(Failure, std::string, TimePoint now) {
  asked_.clear();
  close_stream();
  if (subscribed_) tell(ChannelEvent::Kind::Unsubscribed, channels_.front());
  subscribed_ = false;
  next_open_ = now + kResubscribeDelay;
}

void Subscription::tell(ChannelEvent::Kind kind, std::string_view channel, std::string_view text) const {
  if (on_event_) on_event_(ChannelEvent{kind, config_.server, channel, text});
}

}  // namespace redlock
