// `list`: every lock under a prefix. Each server is walked with SCAN (never KEYS, which blocks the
// server for the whole keyspace) while the locks it finds are read in batches by one read-only
// script, every server at once and each request within its own deadline, so that a frozen server
// costs --timeout and holds up nobody. The answers are merged by key and judged by the rule of
// `status`. Memory grows with the locks found, never with the keyspace, and stops at a bound.
// A Cluster member's keys are spread over its masters: each master the slot map names (CLUSTER
// SLOTS, asked within the per-request deadline) is walked, and every lock found is read from the
// master that owns its slot, whichever master's SCAN found it: that master's answer is the member's
// vote, and a key left on a master that does not own its slot counts for nothing.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/lock/redlock.hpp"

namespace redlock {

struct ListOptions {
  std::string prefix;
  std::string pattern = "*";      // a glob on NAME (the key without the prefix)
  std::size_t scan_count = 1000;  // SCAN's COUNT: keys looked at per round trip
  std::size_t batch = 100;        // locks read per script call
  std::size_t max_locks = 100000;
  Duration time_limit = std::chrono::seconds(30);  // a server still scanning after this has failed
};

// A semaphore's slot that is held, as its own lock's verdict.
struct ListedSlot {
  std::size_t slot = 0;
  LockVerdict verdict;
};

struct ListedLock {
  std::string name;
  std::string key;
  // A semaphore's: held when a slot is, unknown when a slot's state is, free when every slot is,
  // partial otherwise; its fence the highest slot's, servers_held the most servers holding a slot.
  LockVerdict verdict;
  std::string mode = "mutex";        // or "semaphore", or "shared" (held by readers)
  std::optional<std::size_t> limit;  // a semaphore's stored limit (the value on most servers)
  std::vector<ListedSlot> holders;   // a semaphore's held slots, in slot order
};

struct ListResult {
  std::vector<ListedLock> locks;  // in the order of their keys
  Tally tally;                    // yes: servers that answered every request; failed: the others
  bool no_quorum = false;
  bool truncated = false;  // more than max_locks found (or the scan's bound reached): some are missing
  std::vector<ServerReport> servers;
  Duration elapsed{};
};

// Throws a configuration error when two configured servers turn out to be one.
ListResult list_locks(Network& network, const ListOptions& options);

// The SCAN MATCH patterns that find the locks under PREFIX whose NAME matches PATTERN: their keys,
// and their helper keys ("{KEY}:redlock:…": the fencing counters of free locks, a semaphore's limit
// and slots; a KEY with a hash tag of its own has "KEY:redlock:…", which the first pattern finds).
std::vector<std::string> scan_patterns(const std::string& prefix, const std::string& pattern);

// What a key found by SCAN stands for: a lock to read (its key, owner record and fence), and the
// lock it belongs to (a mutex's own key, or a semaphore's key for its slots and its limit).
struct FoundKey {
  std::string read;
  std::string lock;
  std::optional<std::size_t> slot;  // a semaphore's slot
  bool limit = false;               // a semaphore's stored limit (read as a lock that has no expiry)
  bool semaphore() const { return slot || limit; }
};
// Nothing for another helper key (owner records, wake-up channels…) or a lock outside PREFIX or
// PATTERN (matched against the NAME of the lock it belongs to).
std::optional<FoundKey> found_key(const std::string& key, const std::string& prefix, const std::string& pattern);

// A semaphore's row from the readings of its limit and of its slots, each with one entry per server.
ListedLock judge_semaphore(const std::string& name, const std::string& key,
                           const std::vector<std::optional<LockReading>>& limits,
                           const std::vector<std::pair<std::size_t, std::vector<std::optional<LockReading>>>>& slots);

}  // namespace redlock
