#include "core/lock/quorum.hpp"

#include <algorithm>

namespace redlock {

Duration drift_allowance(Duration ttl, double drift_factor) {
  auto drift = std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::nano>(
      static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(ttl).count()) * drift_factor));
  return drift + std::chrono::milliseconds(2);
}

Duration validity(Duration ttl, Duration elapsed, double drift_factor) {
  if (faults::enabled(faults::Fault::NoValidity)) return ttl;
  return ttl - elapsed - drift_allowance(ttl, drift_factor);
}

std::optional<Duration> quorum_free_in(std::size_t total, std::size_t free_now,
                                       std::vector<std::int64_t> busy_pttl_ms) {
  std::size_t needed = quorum_size(total);
  if (free_now >= needed) return Duration::zero();
  std::vector<std::int64_t> expiring;
  for (auto pttl : busy_pttl_ms) {
    if (pttl >= 0) expiring.push_back(pttl);
  }
  std::size_t more = needed - free_now;
  if (expiring.size() < more) return std::nullopt;
  std::nth_element(expiring.begin(), expiring.begin() + static_cast<std::ptrdiff_t>(more - 1), expiring.end());
  return std::chrono::milliseconds(expiring[more - 1]);
}

std::string servers_text(std::size_t n, std::size_t of) {
  return std::to_string(n) + " of " + std::to_string(of) + (of == 1 ? " server" : " servers");
}

std::string not_waited_text(const Tally& tally) {
  return tally.pending() == 0 ? "" : std::to_string(tally.pending()) + " not waited for";
}

}  // namespace redlock
