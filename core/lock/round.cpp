#include "core/lock/round.hpp"

#include <string>
#include <string_view>
#include <utility>

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

// Each server's one request, as the Fanout asks for its requests.
Fanout::Make one_each(const std::function<Request(std::size_t)>& make) {
  return [&make](std::size_t i) {
    std::vector<Request> requests;
    requests.push_back(make(i));
    return requests;
  };
}

// Each answer as the lock counts it: a replica's never as a vote.
Fanout::Record votes(const Network& network) {
  return [&network](std::size_t server, TimePoint, Result r) { return as_vote(network, server, std::move(r)); };
}

}  // namespace

Round::Round(Network& network, const std::function<Request(std::size_t)>& make)
    : fanout_(network, one_each(make), votes(network)) {}

Round::Round(Network& network, const std::vector<bool>& to, const std::function<Request(std::size_t)>& make)
    : fanout_(network, to, one_each(make), votes(network)) {}

}  // namespace redlock
