// A counting semaphore over N independent masters (`--limit K`): K slots, each an ordinary Redlock
// mutex in the lock's own wire format (its own fence and owner record), so that each slot has at
// most one holder and the semaphore at most K, with the mutex's tolerance of any minority of
// failed servers whatever K is. The slots' releases announce themselves on the wake-up channel of
// the semaphore's key, so that any slot's release wakes every waiter.
//
// An attempt reads every slot on every server in one read-only script (the probe), then tries the
// slots free on a quorum, from a random one on, each with Redlock's own attempt: the probe only
// chooses, the slot's quorum decides. The limit is stored beside the key, and a caller that asks for
// another limit is refused with a configuration error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/lock/keys.hpp"
#include "core/lock/redlock.hpp"

namespace redlock {

// The largest --limit: a probe carries every slot, and no one needs thousands of places.
inline constexpr std::size_t kMaxLimit = 1000;

// What one probe found of one slot.
struct SlotView {
  std::size_t free = 0;        // servers where the slot's key is absent
  std::size_t with_token = 0;  // servers where it holds the token asked about
  std::vector<std::int64_t> busy_pttl;
  std::vector<std::optional<std::string>> records;  // the owner records of the busy servers
};

struct Probe {
  Tally tally;  // yes: answered
  std::vector<ServerReport> servers;
  std::vector<std::optional<std::string>> limits;  // per server: the stored limit, none when absent
  std::vector<SlotView> slots;
};

// One slot's state, as Redlock::status reads it.
struct SlotStatus {
  std::size_t slot = 0;
  StatusResult status;
};

struct SemaphoreStatus {
  std::optional<std::size_t> stored_limit;  // the limit on most servers that answered
  Probe probe;
  std::vector<SlotStatus> slots;
};

class Semaphore {
 public:
  // KEY's semaphore of LIMIT slots (0: none, for reading the stored limit with probe()).
  Semaphore(Redlock& redlock, const std::string& key, std::size_t limit);

  const SemaphoreKeys& keys() const { return keys_; }
  std::size_t limit() const { return keys_.slots.size(); }

  // Takes a slot with SPEC's token, TTL, drift, owner and minimum validity (its keys are those of
  // the slot), waiting as WAIT says. slot() tells which. Throws the configuration error of a
  // conflicting limit.
  AcquireResult acquire(const LockSpec& spec, const WaitOptions& wait);
  // The slot of the last acquisition.
  std::size_t slot() const { return slot_; }

  // Reads every slot on every server, each answer waited for; WITH_TOKEN counts where TOKEN holds.
  // Throws the configuration error of a conflicting limit; writes nothing.
  Probe probe(const std::string& token = {});
  // The slot where TOKEN is found on the most servers, if any (release, extend, re-entry). READ,
  // when given, is the probe it was found by: fewer than a quorum answering is no answer.
  std::optional<std::size_t> find(const std::string& token, Probe* read = nullptr);
  // The stored limit: the value on most servers that answered (none when none holds one).
  static std::optional<std::size_t> stored_limit(const Probe& probe);
  // The limit a quorum of the servers hold, one value alike (none when no value is on a quorum).
  static std::optional<std::size_t> quorum_limit(const Probe& probe);
  // Each slot's status, after a probe that checks the limit.
  SemaphoreStatus status();
  // Forced release of every slot, whoever holds it, and of the stored limit: an operator's cure,
  // and the way to change a semaphore's limit. Slots that hold something that cannot be a lock
  // are refused as Redlock::release refuses them.
  ReleaseResult force_release();

 private:
  // One attempt: a probe, then the slots free on a quorum.
  AcquireResult attempt(const LockSpec& spec);
  // Sends the probe; waits for every answer, or, when QUORUM_ENOUGH, until a quorum answered.
  Probe read(const std::string& token, bool quorum_enough);
  // Refuses a stored limit other than ours; with STORE, stores ours where there is none (SET NX,
  // not waited for).
  void check_limit(const Probe& probe, bool store);
  // The slots to try, in order: where the token already is, then the free ones from a random one.
  std::vector<std::size_t> candidates(const Probe& probe);
  AcquireResult all_busy(const LockSpec& spec, const Probe& probe) const;
  // The negative control semaphore-majority (core/lock/faults.hpp, redlock-faulty only): the unsafe
  // design, one attempt of it (see majority.lua). Never called by the real binary.
  AcquireResult majority_attempt(const LockSpec& spec);
  AcquireResult majority_outcome(const LockSpec& spec, const Round& round);

  Network& network_;
  Redlock& redlock_;
  SemaphoreKeys keys_;
  std::size_t slot_ = 0;
  std::mt19937_64 rng_;
};

// The negative control semaphore-majority (redlock-faulty only) leaves a holder places in other
// slots than the one it renews: gives TOKEN's back in each of the LIMIT slots beside SLOT.
void release_majority_places(Redlock& redlock, const LockKeys& slot, std::size_t limit, const std::string& token);

// "semaphore limit conflict: KEY has limit 3, asked 2", or empty when STORED is LIMIT or absent.
std::string limit_conflict(const std::string& key, const std::optional<std::string>& stored, std::size_t limit);

}  // namespace redlock
