// --limit K: the commands' side of a semaphore (core/lock/semaphore.hpp).
#include <cstdio>
#include <ctime>
#include <variant>

#include "commands.hpp"
#include "core/lock/semaphore.hpp"
#include "core/util/duration.hpp"
#include "exit_codes.hpp"

namespace redlock::cli {

AcquireResult take_lock(Redlock& redlock, AcquirePlan& plan) {
  if (plan.limit == 0) return redlock.acquire(plan.spec, plan.wait);
  Semaphore semaphore(redlock, plan.spec.keys.lock, plan.limit);
  AcquireResult r = semaphore.acquire(plan.spec, plan.wait);
  if (r.outcome == AcquireOutcome::Acquired) {
    plan.slot = semaphore.slot();
    plan.spec.keys = semaphore.keys().slots[semaphore.slot()];
  }
  return r;
}

namespace {

// No slot's keys: READ of the slots (WHAT it read) found none for the token, or too few answered.
// Its servers are the answer's, none holding the lock.
SlotLookup found_none(const Probe& read, Duration elapsed, const std::string& what, const std::string& not_held) {
  const Tally& answered = read.tally;
  SlotLookup none{.no_quorum = answered.yes < answered.needed(), .elapsed = elapsed, .servers = read.servers};
  none.tally.total = answered.total;
  none.tally.no = answered.yes;
  none.tally.failed = answered.failed;
  none.message = none.no_quorum ? "only " + servers_text(answered.yes, answered.total) + " answered the read of " +
                                      what + "; " + std::to_string(answered.needed()) + " must answer"
                                : not_held;
  return none;
}

// --slot without --limit: the limit stored on a quorum, one value alike; else a usage error, or no
// quorum when too few servers answered to tell.
std::variant<std::size_t, SlotLookup> limit_for_slot(Redlock& redlock, const LockKeys& keys) {
  const TimePoint started = redlock.network().now();
  const Probe probe = Semaphore(redlock, keys.lock, 0).probe();
  if (auto limit = Semaphore::quorum_limit(probe)) return *limit;
  if (probe.tally.yes < probe.tally.needed())
    return found_none(probe, redlock.network().now() - started, "the stored limit", "");
  usage_error("--slot needs --limit: no semaphore limit is stored for " + printable(keys.lock) + " on a quorum");
}

}  // namespace

SlotLookup slot_keys(Redlock& redlock, const LockKeys& keys, std::size_t limit, const std::string& token, int slot) {
  if (slot >= 0 && keys.reader) usage_error("--slot and --shared exclude each other: a reader holds no slot");
  const bool stored = slot >= 0 && limit == 0;
  if (stored) {
    auto found = limit_for_slot(redlock, keys);
    if (auto* lookup = std::get_if<SlotLookup>(&found)) return *lookup;
    limit = std::get<std::size_t>(found);
  }
  if (slot >= 0 && static_cast<std::size_t>(slot) >= limit) {
    usage_error("--slot " + std::to_string(slot) + ": a semaphore of " + (stored ? "stored limit " : "--limit ") +
                std::to_string(limit) + " has slots 0 to " + std::to_string(limit - 1));
  }
  if (limit == 0) return {.keys = keys};
  if (slot >= 0) return {.keys = derive_semaphore_keys(keys.lock, limit).slots[static_cast<std::size_t>(slot)]};
  Semaphore semaphore(redlock, keys.lock, limit);
  Probe read;
  const TimePoint started = redlock.network().now();
  auto found = semaphore.find(token, &read);
  if (found) return {.keys = semaphore.keys().slots[*found]};
  return found_none(read, redlock.network().now() - started, "the slots",
                    "not held with this token (in none of the " + std::to_string(limit) + " slots)");
}

std::optional<std::size_t> stored_limit(Redlock& redlock, const LockKeys& keys) {
  return Semaphore::stored_limit(Semaphore(redlock, keys.lock, 0).probe());
}

ReleaseResult force_release_semaphore(Redlock& redlock, const LockKeys& keys, std::size_t limit) {
  return Semaphore(redlock, keys.lock, limit).force_release();
}

namespace {

std::optional<std::int64_t> slot_ttl(const StatusResult& s) {
  if (s.state != LockState::Held || s.ttl_ms < 0) return std::nullopt;
  return s.ttl_ms;
}

Json json_holders(const SemaphoreStatus& r) {
  Json holders = Json::array();
  for (const auto& [slot, s] : r.slots) {
    if (s.state != LockState::Held) continue;
    auto ttl = slot_ttl(s);
    holders.push_back({{"slot", slot},
                       {"owner", s.owner ? Json(*s.owner) : Json(nullptr)},
                       {"ttl_ms", ttl ? Json(*ttl) : Json(nullptr)},
                       {"fence", s.fence},
                       {"token", s.token ? Json(*s.token) : Json(nullptr)}});
  }
  return holders;
}

// held: some slot is held; free: every slot is free; unknown: a slot or the probe had no quorum.
LockState semaphore_state(const SemaphoreStatus& r, std::size_t held) {
  bool unknown = r.probe.tally.yes < r.probe.tally.needed();
  bool free = true;
  for (const auto& [slot, s] : r.slots) {
    unknown = unknown || s.no_quorum;
    free = free && s.state == LockState::Free;
  }
  if (unknown) return LockState::Unknown;
  if (held > 0) return LockState::Held;
  return free ? LockState::Free : LockState::Partial;
}

void print_slots(const std::string& name, std::size_t limit, std::size_t held, const SemaphoreStatus& r) {
  std::printf("semaphore  %s\n", printable(name).c_str());
  std::printf("held       %zu of %zu slots\n\n", held, limit);
  for (const auto& [slot, s] : r.slots) {
    std::string line = "slot " + std::to_string(slot) + "  " + std::string(state_name(s.state));
    if (auto ttl = slot_ttl(s)) line += ", " + format_duration(std::chrono::milliseconds(*ttl)) + " left";
    if (s.state == LockState::Held && s.owner) line += ", by " + printable(*s.owner);
    if (s.fence > 0) line += ", fence " + std::to_string(s.fence);
    std::printf("%s\n", line.c_str());
  }
}

}  // namespace

int run_semaphore_status(Redlock& redlock, const std::string& name, const LockKeys& keys, std::size_t limit,
                         const GlobalOptions& global) {
  Semaphore semaphore(redlock, keys.lock, limit);
  const TimePoint started = redlock.network().now();
  const SemaphoreStatus r = semaphore.status();
  const Duration elapsed = redlock.network().now() - started;
  verbose_servers(global, r.probe.servers);
  const std::size_t held = static_cast<std::size_t>(std::count_if(
      r.slots.begin(), r.slots.end(), [](const SlotStatus& s) { return s.status.state == LockState::Held; }));
  const LockState state = semaphore_state(r, held);
  const std::string unanswered = "no quorum: a slot could not be read on a quorum";
  if (global.json) {
    Json j = json_head("status", name, keys.lock);
    j["mode"] = "semaphore";
    j["limit"] = limit;
    j["state"] = state_name(state);
    j["held"] = held;
    j["holders"] = json_holders(r);
    json_no_single_holder(j);
    std::int64_t fence = 0;
    for (const auto& slot : r.slots) fence = std::max(fence, slot.status.fence);
    j["fence"] = fence;  // the highest of the slots'
    j["elapsed_ms"] = json_ms(elapsed);
    j["quorum"] = json_quorum(r.probe.tally);
    j["servers"] = json_servers(r.probe.servers);
    if (state == LockState::Unknown) no_quorum(&j, name, unanswered);
    print_json(j);
  } else {
    print_slots(name, limit, held, r);
    if (state == LockState::Unknown) no_quorum(nullptr, name, unanswered);
  }
  if (state == LockState::Unknown) return exit_code::kNoQuorum;
  return state == LockState::Held ? exit_code::kOk : exit_code::kNotHeld;
}

}  // namespace redlock::cli
