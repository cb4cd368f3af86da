// The Redis names a lock uses. The lock itself is KEY exactly (what node-redlock, redsync and
// redis-py write); helper keys and the wake-up channel are derived from it and share its hash tag,
// so they would live in the same cluster slot, and never change the lock key itself.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace redlock {

struct LockKeys {
  std::string lock;     // KEY: value = token, PX expiry
  std::string fence;    // the fencing counter: expires after --fence-ttl without an acquisition
  std::string owner;    // who holds it and since when: same expiry as the lock
  std::string channel;  // wake-up messages on release and acquisition
  std::string waiters;  // the waiters' queue: a sorted set of waiter ids by arrival
  // The shared mode (`--shared`): the readers and the waiting writers, sorted sets of tokens scored
  // by their expiry on the server's clock, and the readers' owner records. A writer (any exclusive
  // acquire) names them too: it is refused while readers hold and waits among the writers.
  std::string readers;
  std::string writers;
  std::string reader_owners;
  bool reader = false;  // these keys are a reader's: its scripts are join, stay and leave
};

// The heartbeat key of waiter ID in the queue of KEYS: while it lives, the waiter is alive.
std::string waiter_key(const LockKeys& keys, const std::string& id);
// What a release needs to hand the lock to waiter ID ({KEY}:redlock:grant:ID, see acquire.lua).
std::string grant_key(const LockKeys& keys, const std::string& id);
// The helper key {KEY}:redlock:WORD beside KEYS' channel, as the scripts find it: "ticket" (the
// queue's ticket counter), "fair" (a fair waiter's mark).
std::string queue_helper(const LockKeys& keys, const std::string& word);

LockKeys derive_keys(const std::string& key);
// KEY's keys as a reader of the shared mode uses them.
LockKeys derive_reader_keys(const std::string& key);
// The value the lock holds while readers hold it: never a token (refused as --token).
inline constexpr const char* kSharedMarker = "redlock:shared";

// The keys of a semaphore over KEY (`--limit`): its limit, stored beside it, and its slots, each
// an ordinary lock of its own (its own fence and owner record) whose wake-up channel is KEY's, so
// that any slot's release wakes every waiter. They share KEY's hash tag, and a lock name cannot be
// one of them (is_helper_key).
struct SemaphoreKeys {
  std::string key;              // KEY itself: never written
  std::string channel;          // KEY's wake-up channel
  std::string limit;            // {KEY}:redlock:limit: the limit, a string that never expires
  std::vector<LockKeys> slots;  // {KEY}:redlock:slot:0 … :slot:LIMIT-1
};

SemaphoreKeys derive_semaphore_keys(const std::string& key, std::size_t limit);

// Whether every key a lock on KEY touches (its helper keys, the waiters' heartbeats, a semaphore's
// slots, the wake-up channel) lives in KEY's own cluster slot. Not so when KEY has braces that form
// no hash tag the "{KEY}" wrapping keeps ("a{}b", "a}b"): on a Redis Cluster its scripts would be
// refused (CROSSSLOT), so such a name is refused there before anything is sent.
bool keys_share_slot(const std::string& key);

// Whether KEY ends as a helper key does (":redlock:fence", ":redlock:owner", ":redlock:wake",
// ":redlock:limit", ":redlock:waiters", ":redlock:readers", ":redlock:writers", ":redlock:readerowners",
// ":redlock:ticket", ":redlock:fair",
// ":redlock:slot:" and digits, ":redlock:waiter:" and hex digits): a lock of that name could be
// another lock's helper key or a semaphore's slot, and be overwritten by its owner record or share
// its holders.
bool is_helper_key(const std::string& key);

// The lock a helper key belongs to: KEY is "{LOCK}:redlock:WORD" (or "LOCK:redlock:WORD" for a
// LOCK with a hash tag of its own), as derive_keys makes them, for any lower-case WORD (helpers
// added later too). "{NAME}" and "NAME" share their helper keys: the lock is then the unbraced one.
struct HelperKey {
  std::string lock;
  std::string word;  // fence, owner, …
};
std::optional<HelperKey> helper_of(const std::string& key);
// As helper_of, one level only: a semaphore slot's fence belongs to the slot ("{LOCK}:redlock:slot:N").
std::optional<HelperKey> direct_helper_of(const std::string& key);
// N of a semaphore slot's key "…:redlock:slot:N"; nothing for another key.
std::optional<std::size_t> slot_number(const std::string& key);

}  // namespace redlock
