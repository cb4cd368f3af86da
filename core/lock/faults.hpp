// Negative controls for the fault-injection suite: ways to break the lock on purpose, so that the
// suite can show its checkers catch a broken lock. They work only in the test binary
// `redlock-faulty` (its faults.cpp is built with REDLOCK_FAULTS), whose front end hands
// REDLOCK_FAULT=name[,name…] to choose():
//   release-any   release deletes the key whatever token it holds (no compare-and-delete)
//   no-validity   drift 0 and no validity check: a lock counts however long it took, and `run`
//                 never stops its command because the validity ran out
//   half-quorum   N/2 votes make a "quorum" (two holders can each get one)
//   inherit-any-token  inside a run's command, REDLOCK_TOKEN stands in for --token of every lock,
//                 so sibling workers that take a second lock re-enter each other's
//   semaphore-extra-slot  a semaphore has one slot more than its limit
//   semaphore-majority  a semaphore as some peers build one, unsafe: each server admits a holder
//                 while it has fewer than K of its own, and a simple majority admitting is "held"
//   shared-ignores-writer  a reader's scripts are given another key than the lock: readers never
//                 see a writer, and writers never see the readers' marker
//   fair-ignores-queue  every attempt skips the fair queue's order (as a degraded hand-off does)
//                 and still reports the hand-off fair: newcomers take a free lock ahead of the queue
//   grant-keeps-short-expiry  a waiter a release handed the lock to keeps the release's short
//                 expiry, but counts its validity from its own TTL (see grant.hpp)
//   no-quorum-at-once  a wait gives up (69) at its first attempt short of a quorum instead of
//                 waiting the servers out
// Only faults.cpp differs between the two binaries: in the real one, choose() does nothing and
// enabled() is always false, whatever the environment says.
#pragma once

#include <string_view>

namespace redlock::faults {

enum class Fault {
  ReleaseAny,
  NoValidity,
  HalfQuorum,
  InheritAnyToken,
  SemaphoreExtraSlot,
  SemaphoreMajority,
  SharedIgnoresWriter,
  FairIgnoresQueue,
  GrantKeepsShortExpiry,
  NoQuorumAtOnce
};

// The faults named in NAMES (comma-separated; unknown names are ignored) are on from now on.
void choose(std::string_view names);
bool enabled(Fault fault);

}  // namespace redlock::faults
