// The arithmetic of Redlock: how many votes make a quorum, how long a lock is valid, and when a
// busy lock could possibly be free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/lock/faults.hpp"
#include "core/util/clock.hpp"

namespace redlock {

// N/2 + 1: any two quorums share at least one server.
inline std::size_t quorum_size(std::size_t servers) {
  if (faults::enabled(faults::Fault::HalfQuorum)) return servers / 2 > 0 ? servers / 2 : 1;
  return servers / 2 + 1;
}

// What the clocks of the servers and of this host may drift apart over TTL: TTL·factor + 2 ms.
Duration drift_allowance(Duration ttl, double drift_factor);

// How long a lock taken with TTL is still valid after ELAPSED: TTL − ELAPSED − drift allowance.
// Zero or negative means the lock must be treated as not held.
Duration validity(Duration ttl, Duration elapsed, double drift_factor);

// "3 of 5 servers", "1 of 1 server": a count of servers in a message, the noun agreeing with OF.
std::string servers_text(std::size_t n, std::size_t of);

// Votes of one round, counted as the answers come in.
struct Tally {
  std::size_t total = 0;   // servers asked
  std::size_t yes = 0;     // did what was asked
  std::size_t no = 0;      // answered, but said no (busy, not held)
  std::size_t failed = 0;  // did not answer usefully (timeout, error)

  std::size_t needed() const { return quorum_size(total); }
  std::size_t pending() const { return total - yes - no - failed; }
  bool won() const { return yes >= needed(); }
  // The quorum can no longer be reached, whatever the servers still out will say.
  bool lost() const { return yes + pending() < needed(); }
  bool decided() const { return won() || lost(); }
  // Too few servers answered at all for any verdict ("no quorum", exit 69), as opposed to a
  // quorum that answered no ("busy", "not held").
  bool unreachable() const { return failed > total - needed(); }
};

// "2 not waited for": the servers whose answer was still out when the outcome was known, which
// neither said yes nor failed; empty when every answer was in.
std::string not_waited_text(const Tally& tally);

// When a lock that some servers reported busy could first be free on a quorum if nobody releases
// it: FREE_NOW servers are already free; BUSY_PTTL_MS holds each busy server's PTTL (−1: no expiry).
// Nothing when that time cannot be known (too many servers without an expiry or an answer).
std::optional<Duration> quorum_free_in(std::size_t total, std::size_t free_now, std::vector<std::int64_t> busy_pttl_ms);

}  // namespace redlock
