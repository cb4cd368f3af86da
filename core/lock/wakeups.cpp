#include "core/lock/wakeups.hpp"

#include <algorithm>
#include <charconv>
#include <set>
#include <utility>

#include "core/lock/quorum.hpp"

namespace redlock {

namespace {
constexpr std::string_view kGrantedWord = "granted:";
}  // namespace

WakeEvent parse_wake_message(std::string_view message) {
  WakeEvent e;
  if (message.starts_with("released")) {
    e.kind = WakeEvent::Kind::Released;
    auto rest = message.substr(std::min<std::size_t>(message.size(), 9));
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), e.waiters);
    rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
    while (ec == std::errc() && !rest.empty() && rest.front() == ' ') {
      rest.remove_prefix(1);
      const auto word = rest.substr(0, rest.find(' '));
      rest.remove_prefix(word.size());
      if (word.starts_with(kGrantedWord)) {
        std::int64_t ms = 0;
        const auto digits = word.substr(kGrantedWord.size());
        if (std::from_chars(digits.data(), digits.data() + digits.size(), ms).ec == std::errc() && ms > 0)
          e.granted = std::chrono::milliseconds(ms);
      } else if (!word.empty()) {
        e.named.emplace_back(word);
      }
    }
  } else if (message.starts_with("retracted")) {
    e.kind = WakeEvent::Kind::Retracted;
  } else if (message == "acquired") {
    e.kind = WakeEvent::Kind::Acquired;
  }
  return e;
}

WakeEvent wake_event(const ChannelEvent& event) {
  switch (event.kind) {
    case ChannelEvent::Kind::Message:
      return parse_wake_message(event.text);
    case ChannelEvent::Kind::Subscribed: {
      WakeEvent e;
      e.kind = WakeEvent::Kind::Subscribed;
      return e;
    }
    default:
      return WakeEvent{};
  }
}

struct Wakeups::State {
  bool active = true;
  bool settled = false;  // the first subscription round is over
  TimePoint begin;       // when this waiter began to wait: older waiters go first
  TimePoint deadline;    // the wait's end: no plan goes past it
  TimePoint next = kNever;
  Duration ttl{};
  // A release (or a retraction) announced while an attempt was out: the plan after that attempt
  // must not forget it.
  std::optional<WakeEvent> released;
  bool retracted = false;
  // A release that named this waiter first handed it the lock: the waiters it named, and the
  // servers that said so. The waiter reads the lock back once every server did, or a moment after
  // the first (the release may not reach them all): a server read before its release came would
  // be left with the hand-over's short expiry.
  std::optional<std::vector<std::string>> granted;
  std::set<std::size_t> granted_by;
  std::size_t servers = 1;
  std::string id;                   // this waiter's id in the lock's queue, whichever channel it listens on
  std::set<std::size_t> confirmed;  // the servers whose subscription was confirmed at least once
  bool many_holders = false;
  std::optional<QueuedWaiter> queued;
  TimePoint heartbeat_due = kNever;
  WaitPlan plan;

  State(Duration retry_delay, std::uint64_t seed) : plan(retry_delay, seed) {}

  void on(const WakeEvent& e, std::size_t server, TimePoint t, bool reliable) {
    TimePoint planned = next;
    switch (e.kind) {
      case WakeEvent::Kind::Released:
        if (handed_to_us(e)) granted_by.insert(server);
        released = e;
        planned = on_released(e, t, planned);
        break;
      case WakeEvent::Kind::Retracted:
        retracted = true;
        planned = plan.on_retracted(t, planned);
        break;
      case WakeEvent::Kind::Acquired:
        // Published by the release that handed this waiter the lock, when it listens on the lock's
        // channel (it could not queue everywhere): the acquisition is its own to make.
        if (many_holders || granted) break;
        released.reset();
        planned = plan.on_acquired(t, ttl, reliable);
        break;
      case WakeEvent::Kind::Subscribed:
        // A subscription came back after a break: a release may have gone unheard. A server's first
        // confirmation, late after the wait settled on enough of the others, is no such news: a
        // release on a quorum reached a server whose subscription was confirmed.
        if (const bool again = !confirmed.insert(server).second; settled && again)
          planned = plan.on_released(t, planned, 1, t - begin);
        break;
      case WakeEvent::Kind::Other:
        break;
    }
    // However a message moves the plan, the wait ends at its deadline: holders that come and go
    // without announcing a release must not keep a waiter past it.
    next = std::min(planned, deadline);
  }

  // Whether E is a release that handed the lock to this waiter (named first), on whichever channel.
  bool handed_to_us(const WakeEvent& e) const {
    return e.granted && !id.empty() && !e.named.empty() && e.named.front() == id;
  }

  // A release that names waiters wakes a queued waiter as its place says; one that names none (or
  // a semaphore's, where another slot may be free) wakes everyone, spread out.
  TimePoint on_released(const WakeEvent& e, TimePoint t, TimePoint planned) {
    if (handed_to_us(e)) {
      granted = e.named;
      return granted_by.size() < servers ? std::min(planned, t + plan.slot()) : t;
    }
    if (!queued || many_holders || e.named.empty()) return plan.on_released(t, planned, e.waiters, t - begin);
    const auto at = std::find(e.named.begin(), e.named.end(), queued->id);
    std::optional<std::size_t> place;
    if (at != e.named.end()) place = static_cast<std::size_t>(at - e.named.begin());
    return plan.on_named(t, planned, place, queued->heartbeat, e.waiters, t - begin,
                         e.granted.value_or(Duration::zero()));
  }
};

Wakeups::Wakeups(Network& network, std::string channel, Duration ttl, Duration retry_delay, std::uint64_t seed,
                 TimePoint begin, TimePoint deadline)
    : network_(network), channel_(std::move(channel)), state_(std::make_shared<State>(retry_delay, seed)) {
  state_->begin = begin;
  state_->deadline = deadline;
  state_->ttl = ttl;
  state_->servers = network.size();
}

Wakeups::~Wakeups() {
  state_->active = false;
  if (subscribing_) network_.unsubscribe();
}

bool Wakeups::reliable() const {
  // Wake-ups are reliable when our subscriptions overlap every quorum that could release.
  const std::size_t n = network_.size();
  return network_.subscribed() >= n - quorum_size(n) + 1;
}

void Wakeups::set_many_holders(bool many) {
  state_->many_holders = many;
}

void Wakeups::set_queued(const QueuedWaiter& waiter) {
  state_->queued = waiter;
  state_->id = waiter.id;
}

void Wakeups::set_waiter_id(const std::string& id) {
  state_->id = id;
}

void Wakeups::forget_heard() {
  state_->released.reset();
  state_->retracted = false;
  state_->granted.reset();
  state_->granted_by.clear();
}

std::optional<std::vector<std::string>> Wakeups::take_grant() {
  return std::exchange(state_->granted, std::nullopt);
}

void Wakeups::observe(const std::vector<std::optional<Duration>>& latencies) {
  std::vector<Duration> seen;
  for (const auto& l : latencies) {
    if (l) seen.push_back(*l);
  }
  if (seen.empty()) return;
  auto middle = seen.begin() + static_cast<std::ptrdiff_t>(seen.size() / 2);
  std::nth_element(seen.begin(), middle, seen.end());
  state_->plan.observe_round_trip(*middle);
}

void Wakeups::subscribe(TimePoint settle_by, const std::function<bool()>& interrupted) {
  subscribing_ = true;
  // A queued waiter listens on its own channel alone: the releases that are not its turn stay unheard.
  const std::string& channel = state_->queued ? state_->queued->channel : channel_;
  network_.subscribe(channel, [state = state_, this](const ChannelEvent& event) {
    if (state->active) state->on(wake_event(event), event.server, network_.now(), reliable());
  });
  network_.run_until([&] { return reliable() || interrupted(); }, std::min(state_->deadline, settle_by));
  state_->settled = true;
}

TimePoint Wakeups::plan(TimePoint now, bool split_vote, std::optional<Duration> holder_free_in, bool holder_announces) {
  State& s = *state_;
  TimePoint next = s.plan.after_attempt(now, split_vote, holder_free_in, reliable(), holder_announces);
  if (s.released) next = s.on_released(*s.released, now, next);
  if (s.retracted) next = s.plan.on_retracted(now, next);
  s.next = std::min(next, s.deadline);
  // The attempt just made refreshed the heartbeat (a busy answer re-joins the queue).
  if (s.queued) s.heartbeat_due = now + s.queued->heartbeat / 3;
  return s.next;
}

bool Wakeups::sleep(const std::function<bool()>& interrupted) {
  // A wake-up message moves the plan, so wait again for the new one.
  while (!interrupted() && network_.now() < state_->next) {
    beat();
    const TimePoint planned = state_->next;
    network_.run_until([&] { return interrupted() || state_->next != planned; },
                       std::min(planned, state_->heartbeat_due));
  }
  return !interrupted();
}

void Wakeups::beat() {
  State& s = *state_;
  const TimePoint now = network_.now();
  if (!s.queued || now < s.heartbeat_due) return;
  // Plain commands, no script: a waiter's heartbeat must cost the servers little. PEXPIRE never
  // brings back a waiter a release has dropped from the queue: its next attempt joins it again.
  const std::string ms =
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(s.queued->heartbeat).count());
  const Network::Batch batch(network_);
  for (std::size_t i = 0; i < network_.size(); ++i) {
    network_.send(i, Request::command({"PEXPIRE", s.queued->alive_key, ms}), [](Result) {});
    network_.send(i, Request::command({"PEXPIRE", s.queued->queue_key, ms}), [](Result) {});
    if (!s.queued->grant_key.empty())
      network_.send(i, Request::command({"PEXPIRE", s.queued->grant_key, ms}), [](Result) {});
    if (!s.queued->fair_key.empty())
      network_.send(i, Request::command({"SET", s.queued->fair_key, "1", "PX", ms}), [](Result) {});
  }
  s.heartbeat_due = now + s.queued->heartbeat / 3;
}

}  // namespace redlock
