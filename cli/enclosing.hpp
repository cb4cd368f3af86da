// The locks a process runs inside of, when `redlock run` started it: the run's own lock (REDLOCK_KEY,
// REDLOCK_TOKEN, REDLOCK_FENCE on REDLOCK_SERVERS) and the locks of the runs around that run
// (REDLOCK_ENCLOSING). Re-entry is for these locks only: the same key on the same servers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/net/server_url.hpp"

namespace redlock::cli {

struct EnclosingLock {
  std::string key;
  std::string token;
  std::optional<std::int64_t> fence;
  std::string servers;     // servers_signature of its servers; empty when not known
  bool semaphore = false;  // a slot of the semaphore KEY (REDLOCK_SLOT), which only --limit re-enters
};

// The locks this process is inside of, innermost first; none outside any run.
std::vector<EnclosingLock> enclosing_locks();

// What makes two server lists the same set of servers, whatever their order, credentials or form.
std::string servers_signature(const std::vector<ServerUrl>& servers);

// The lock of LOCKS that is KEY on the servers of signature SERVERS, if any: a semaphore's when
// SEMAPHORE, else a mutex's or a reader's (a semaphore and a mutex of one NAME are two locks).
const EnclosingLock* find_enclosing(const std::vector<EnclosingLock>& locks, const std::string& key,
                                    const std::string& servers, bool semaphore);

// REDLOCK_ENCLOSING for a run's child: LOCKS, the ones its run is inside of.
std::string enclosing_text(const std::vector<EnclosingLock>& locks);

}  // namespace redlock::cli
