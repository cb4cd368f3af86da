#include "core/lock/faults.hpp"

#include <array>

namespace redlock::faults {

#ifdef REDLOCK_FAULTS
namespace {

constexpr std::array<std::pair<Fault, std::string_view>, 10> kNames{{
    {Fault::ReleaseAny, "release-any"},
    {Fault::NoValidity, "no-validity"},
    {Fault::HalfQuorum, "half-quorum"},
    {Fault::InheritAnyToken, "inherit-any-token"},
    {Fault::SemaphoreExtraSlot, "semaphore-extra-slot"},
    {Fault::SemaphoreMajority, "semaphore-majority"},
    {Fault::SharedIgnoresWriter, "shared-ignores-writer"},
    {Fault::FairIgnoresQueue, "fair-ignores-queue"},
    {Fault::GrantKeepsShortExpiry, "grant-keeps-short-expiry"},
    {Fault::NoQuorumAtOnce, "no-quorum-at-once"},
}};

std::array<bool, kNames.size()> g_on{};

}  // namespace

void choose(std::string_view names) {
  while (!names.empty()) {
    const auto comma = names.find(',');
    const std::string_view name = names.substr(0, comma);
    for (std::size_t i = 0; i < kNames.size(); ++i) {
      if (kNames[i].second == name) g_on[static_cast<std::size_t>(kNames[i].first)] = true;
    }
    names = comma == std::string_view::npos ? std::string_view{} : names.substr(comma + 1);
  }
}

bool enabled(Fault fault) {
  return g_on[static_cast<std::size_t>(fault)];
}
#else
void choose(std::string_view) {}

bool enabled(Fault) {
  return false;
}
#endif

}  // namespace redlock::faults
