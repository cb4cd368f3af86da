// Requests to every server (or to those a mask names) at once, pipelined per server, with the
// answers collected as they arrive: the lock's rounds and doctor's probes both go out this way.
// Answers that come after the caller stopped caring land in the shared state and are dropped with
// it.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "core/net/network.hpp"

namespace redlock {

class Fanout {
 public:
  // The requests for server I, in the order they are sent (the server answers them in that order).
  using Make = std::function<std::vector<Request>(std::size_t server)>;
  // What is kept of an answer of SERVER, whose requests went out at SENT: by default the answer
  // as it came.
  using Record = std::function<Result(std::size_t server, TimePoint sent, Result)>;

  // Sends MAKE(i) to every server i.
  Fanout(Network& network, const Make& make, Record record = {});
  // Sends MAKE(i) to the servers i where TO[i] is true; the others count as answered, with nothing.
  Fanout(Network& network, const std::vector<bool>& to, const Make& make, Record record = {});

  // Keeps each answer with its round trip timed from its server's send time to the moment the
  // answer is handed over: a reply read in the same turn as its request was written would
  // otherwise count as taking no time at all.
  static Record timed(const Network& network);

  // The answer to request K of SERVER, empty while it is still out (or when it was not asked).
  const std::optional<Result>& result(std::size_t server, std::size_t k) const;
  // The answers to request K of every server, one per server (answers(0) always exists).
  const std::vector<std::optional<Result>>& answers(std::size_t k) const { return state_->answers.at(k); }
  // How many servers have answered every request sent to them (those not asked count).
  std::size_t received() const { return state_->received; }
  bool complete() const { return state_->received == state_->left.size(); }
  TimePoint started() const { return started_; }
  // When SERVER's requests went out (the epoch for a server not asked).
  TimePoint sent(std::size_t server) const { return state_->sent[server]; }
  // The outcome is decided: requests still out are not re-sent after a NOSCRIPT (their answers
  // are still recorded). Called before a cleanup follows them, so nothing overtakes it.
  void abandon() { interest_.reset(); }
  // Runs the event loop until every request is answered: each is, within its per-request
  // deadline, so this ends.
  void wait() const;

 private:
  struct State {
    std::vector<std::vector<std::optional<Result>>> answers;  // [request][server]
    std::vector<std::size_t> left;                            // per server: requests still out
    std::vector<TimePoint> sent;
    std::size_t received = 0;
    Record record;
  };
  void send(std::size_t server, std::vector<Request> requests);

  Network* network_;
  std::shared_ptr<State> state_;
  std::shared_ptr<const int> interest_ = std::make_shared<const int>(0);
  TimePoint started_;
};

}  // namespace redlock
