// The shared mode over N independent masters (`--shared`): many readers at once, or one writer.
// The writer is the lock itself, in the lock's own wire format, so every exclusive locker (ours,
// node-redlock's, redis-py's) is a writer; readers join a sorted set per server and keep the
// marker kSharedMarker in the lock while they hold. Readers acquire, renew and release with
// Redlock's own rounds (LockKeys::reader picks their scripts): the quorum, the validity, the wait
// and the fence are the mutex's. This reads what a shared lock holds, for `status`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/lock/keys.hpp"
#include "core/lock/redlock.hpp"

namespace redlock {

// A reader that holds on a quorum.
struct ReaderView {
  std::string token;
  std::int64_t ttl_ms = 0;  // how long a quorum still holds it
  std::optional<std::string> owner;
};

struct SharedStatus {
  StatusResult lock;    // the lock itself: a writer, the readers' marker, or free
  bool writer = false;  // a writer (not the marker) holds the lock on a quorum
  std::vector<ReaderView> readers;
  std::size_t writers_waiting = 0;  // the most any server that answered counts
  Tally tally;                      // of the read of the readers
  std::vector<ServerReport> servers;
};

// One server's answer of readers.lua: {waiting writers, {token, ms left, owner record}…}; nothing
// when REPLY is not one.
struct ReadersReading {
  std::size_t writers_waiting = 0;
  std::vector<ReaderView> readers;
};
std::optional<ReadersReading> parse_readers(const Reply& reply);

// The readers that hold on a quorum of READINGS (one per server, empty where none answered),
// each with the time a quorum still holds it, longest first.
std::vector<ReaderView> quorum_readers(const std::vector<std::optional<ReadersReading>>& readings);

class Shared {
 public:
  Shared(Redlock& redlock, const std::string& key);

  const LockKeys& keys() const { return keys_; }
  // The lock and its readers on every server, each answer waited for (up to --timeout).
  SharedStatus status();

 private:
  Redlock& redlock_;
  LockKeys keys_;
};

}  // namespace redlock
