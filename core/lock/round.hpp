// One request to every server, with the answers collected as they arrive. Answers that come after
// the caller stopped caring land in the shared state and are dropped with it. A replica's answer is
// recorded as a Failure::Replica: it never counts as a vote.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "core/net/network.hpp"

namespace redlock {

class Round {
 public:
  // Sends MAKE(i) to every server i.
  Round(Network& network, const std::function<Request(std::size_t)>& make);
  // Sends MAKE(i) to the servers i where TO[i] is true; the others count as answered, with nothing.
  Round(Network& network, const std::vector<bool>& to, const std::function<Request(std::size_t)>& make);

  // The answer of each server, empty while it is still out (or when it was not asked).
  const std::vector<std::optional<Result>>& results() const { return state_->results; }
  std::size_t received() const { return state_->received; }
  bool complete() const { return state_->received == state_->results.size(); }
  TimePoint started() const { return started_; }
  // The outcome is decided: requests still out are not re-sent after a NOSCRIPT (their answers
  // are still recorded). Called before a cleanup follows them, so nothing overtakes it.
  void abandon() { interest_.reset(); }

 private:
  struct State {
    std::vector<std::optional<Result>> results;
    std::size_t received = 0;
  };
  std::shared_ptr<State> state_;
  std::shared_ptr<const int> interest_ = std::make_shared<const int>(0);
  TimePoint started_;
};

}  // namespace redlock
