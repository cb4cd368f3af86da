// One request to every server, with the answers collected as they arrive (a Fanout of one request
// per server). A replica's answer is recorded as a Failure::Replica: it never counts as a vote.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "core/net/fanout.hpp"
#include "core/net/network.hpp"

namespace redlock {

class Round {
 public:
  // Sends MAKE(i) to every server i.
  Round(Network& network, const std::function<Request(std::size_t)>& make);
  // Sends MAKE(i) to the servers i where TO[i] is true; the others count as answered, with nothing.
  Round(Network& network, const std::vector<bool>& to, const std::function<Request(std::size_t)>& make);

  // The answer of each server, empty while it is still out (or when it was not asked).
  const std::vector<std::optional<Result>>& results() const { return fanout_.answers(0); }
  std::size_t received() const { return fanout_.received(); }
  bool complete() const { return fanout_.complete(); }
  TimePoint started() const { return fanout_.started(); }
  // The outcome is decided: requests still out are not re-sent after a NOSCRIPT (their answers
  // are still recorded). Called before a cleanup follows them, so nothing overtakes it.
  void abandon() { fanout_.abandon(); }

 private:
  Fanout fanout_;
};

}  // namespace redlock
