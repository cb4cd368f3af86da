// A member's wake-up subscription: its own connection, SUBSCRIBE to each of its channels, and the
// messages handed to the callback. It is re-established after it broke, no sooner than a second
// later; a Sentinel or Cluster member's goes where its owner says (ConnectionObserver).
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "core/net/connection.hpp"
#include "core/net/network.hpp"
#include "core/net/resp.hpp"
#include "core/util/clock.hpp"

namespace redlock {

class Subscription final : public Connection {
 public:
  // OBSERVER outlives the subscription.
  Subscription(ConnectionConfig config, ConnectionObserver& observer);

  // Asks for CHANNELS (the first is the one that must be allowed); what it hears goes to ON_EVENT.
  void subscribe(std::vector<std::string> channels, ChannelCallback on_event);
  // Opens the connection when it is due; called on every turn of the loop.
  void maintain(TimePoint now);
  bool subscribed() const { return subscribed_; }

  void expire(TimePoint now) override;
  TimePoint next_deadline() const override;

 private:
  // What was sent and waits for its answer: AUTH, or SUBSCRIBE to a channel.
  struct Asked {
    bool auth = false;
    std::string channel;
    TimePoint sent;
    TimePoint deadline;
  };

  bool take(Reply reply, TimePoint now) override;
  void fail(Failure failure, std::string error, TimePoint now) override;
  void open(TimePoint now);
  // Whether a SUBSCRIBE has waited past its deadline by NOW.
  bool overdue(TimePoint now) const;
  // Tells ON_EVENT (if set) what this server's subscription heard.
  void tell(ChannelEvent::Kind kind, std::string_view channel, std::string_view text = {}) const;

  std::vector<std::string> channels_;
  ChannelCallback on_event_;
  std::deque<Asked> asked_;
  bool subscribed_ = false;
  TimePoint next_open_ = kNever;
};

}  // namespace redlock
