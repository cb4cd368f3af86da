// `list`: every lock under a prefix. Each server is walked with SCAN (never KEYS, which blocks the
// server for the whole keyspace) while the locks it finds are read in batches by one read-only
// script, every server at once and each request within its own deadline, so that a frozen server
// costs --timeout and holds up nobody. The answers are merged by key and judged by the rule of
// `status`. Memory grows with the locks found, never with the keyspace, and stops at a bound.
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

struct ListedLock {
  std::string name;
  std::string key;
  LockVerdict verdict;
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
// and the fencing counters of free locks ("{KEY}:redlock:fence"; a KEY with a hash tag of its own
// has "KEY:redlock:fence", which the first pattern finds).
std::vector<std::string> scan_patterns(const std::string& prefix, const std::string& pattern);
// The lock that KEY, found by SCAN, stands for: KEY itself, or the lock of a fencing counter;
// nothing for another helper key or a lock outside PREFIX or PATTERN.
std::optional<std::string> listed_lock_key(const std::string& key, const std::string& prefix,
                                           const std::string& pattern);

}  // namespace redlock
