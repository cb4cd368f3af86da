#include "core/lock/round.hpp"

#include <string>
#include <string_view>

namespace redlock {

namespace {

// A replica never votes, whatever it answered: a READONLY refusal of a write, the lock its master
// holds (replicated) to a read, or a write it took as a writable replica, which its master never
// sees. Its answer counts as a failure of its own kind. A READONLY refusal tells a replica whose
// ROLE was not allowed.
Result as_vote(const Network& network, std::size_t server, Result r) {
  const bool answered = r.ok() || r.failure == Failure::Reply;
  const bool readonly = r.failure == Failure::Reply && r.error.starts_with("READONLY");
  if (!answered || (!readonly && network.role(server) != "replica")) return r;
  Result replica;
  replica.failure = Failure::Replica;
  replica.error = "a replica: it never counts as a vote";
  replica.latency = r.latency;
  return replica;
}

}  // namespace

Round::Round(Network& network, const std::function<Request(std::size_t)>& make)
    : Round(network, std::vector<bool>(network.size(), true), make) {}

Round::Round(Network& network, const std::vector<bool>& to, const std::function<Request(std::size_t)>& make)
    : state_(std::make_shared<State>()), started_(network.now()) {
  state_->results.resize(network.size());
  for (std::size_t i = 0; i < network.size(); ++i) {
    if (!to[i]) {
      ++state_->received;
      continue;
    }
    Request request = make(i);
    request.interest = Interest(interest_);
    network.send(i, std::move(request), [state = state_, &network, i](Result r) {
      if (state->results[i]) return;
      state->results[i] = as_vote(network, i, std::move(r));
      ++state->received;
    });
  }
}

}  // namespace redlock
