#include "core/net/fanout.hpp"

namespace redlock {

Fanout::Fanout(Network& network, const Make& make, Record record)
    : Fanout(network, std::vector<bool>(network.size(), true), make, std::move(record)) {}

Fanout::Fanout(Network& network, const std::vector<bool>& to, const Make& make, Record record)
    : network_(&network), state_(std::make_shared<State>()), started_(network.now()) {
  const std::size_t n = network.size();
  state_->answers.resize(1, std::vector<std::optional<Result>>(n));
  state_->left.resize(n, 0);
  state_->sent.resize(n);
  state_->record = std::move(record);
  const Network::Batch batch(network);
  for (std::size_t i = 0; i < n; ++i) {
    if (to[i]) {
      send(i, make(i));
    } else {
      ++state_->received;
    }
  }
}

void Fanout::send(std::size_t i, std::vector<Request> requests) {
  State& state = *state_;
  if (state.answers.size() < requests.size()) {
    state.answers.resize(requests.size(), std::vector<std::optional<Result>>(state.left.size()));
  }
  state.left[i] = requests.size();
  state.sent[i] = network_->now();
  if (requests.empty()) ++state.received;
  for (std::size_t k = 0; k < requests.size(); ++k) {
    requests[k].interest = Interest(interest_);
    network_->send(i, std::move(requests[k]), [state = state_, i, k](Result r) {
      std::optional<Result>& slot = state->answers[k][i];
      if (slot) return;
      slot = state->record ? state->record(i, state->sent[i], std::move(r)) : std::move(r);
      if (--state->left[i] == 0) ++state->received;
    });
  }
}

Fanout::Record Fanout::timed(const Network& network) {
  return [&network](std::size_t, TimePoint sent, Result r) {
    r.latency = network.now() - sent;
    return r;
  };
}

const std::optional<Result>& Fanout::result(std::size_t server, std::size_t k) const {
  static const std::optional<Result> none;
  return k < state_->answers.size() ? state_->answers[k][server] : none;
}

void Fanout::wait() const {
  network_->run_until([state = state_] { return state->received == state->left.size(); }, kNever);
}

}  // namespace redlock
