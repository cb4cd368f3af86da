#include "round.hpp"

namespace redlock {

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
    request.interest = interest_;
    request.tracked = true;
    network.send(i, std::move(request), [state = state_, i](Result r) {
      if (state->results[i]) return;
      state->results[i] = std::move(r);
      ++state->received;
    });
  }
}

}  // namespace redlock
