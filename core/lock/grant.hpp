// A lock handed over by a release: a queued waiter that asked for it (LockSpec::take_grants) is
// given the lock by the release that names it first (see release.lua), for a short expiry, and
// takes it with plain commands, no script: on each server it reads the lock back, sets its own TTL
// (PEXPIRE GT, which only ever lengthens an expiry) and reads the lock again.
//
// Why a server counts as a vote only when both reads found the waiter's token: nothing writes that
// token into the lock while the waiter's reads run (a release hands it over once per join, and the
// waiter's own requests to that server run in the order they were sent), so a key found holding it
// before and after the PEXPIRE held it throughout, and the PEXPIRE set its expiry to at least TTL
// from a moment after the reads were sent. Such a server holds the lock until the reads' send time
// + TTL, as one that took it with SET NX PX in a round sent then: the validity is the round's.
// Had the lock changed hands between the reads (the grant lapsed and another took it), the second
// read finds another token and the server is no vote; the PEXPIRE GT then only lengthened the other
// holder's expiry, which is never unsafe for it. A member that fails over (Sentinel, Cluster) is
// never handed the lock: a hand-over counts there only once replicas have it, which a read cannot
// tell.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/lock/keys.hpp"
#include "core/net/fanout.hpp"
#include "core/net/network.hpp"

namespace redlock {

// The requests that take a handed-over lock on one server: TTL_MS is the waiter's TTL.
std::vector<Request> grant_requests(const LockKeys& keys, const std::string& ttl_ms);

// What a server's answers to grant_requests say: its fencing counter when it holds TOKEN for us
// (a vote), nothing when it does not. ANSWERS are the answers in order, all in.
std::optional<std::int64_t> granted_fence(const std::vector<const Result*>& answers, const std::string& token);

// One server's answers to grant_requests, read: none while some are out; else a failure (the
// first), or an Integer reply 1 (it holds the lock for TOKEN, with FENCE) or 0 (it does not).
struct GrantVerdict {
  std::optional<Result> verdict;
  std::int64_t fence = 0;
};
GrantVerdict read_grant(const Fanout& reads, std::size_t server, const std::string& token);

}  // namespace redlock
