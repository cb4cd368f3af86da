// Negative controls for the fault-injection suite: ways to break the lock on purpose, so that the
// suite can show its checkers catch a broken lock. They work only in the test binary
// `redlock-faulty` (its faults.cpp is built with REDLOCK_FAULTS) and are chosen with
// REDLOCK_FAULT=name[,name…]:
//   release-any   release deletes the key whatever token it holds (no compare-and-delete)
//   no-validity   drift 0 and no validity check: a lock counts however long it took, and `run`
//                 never stops its command because the validity ran out
//   half-quorum   N/2 votes make a "quorum" (two holders can each get one)
//   inherit-any-token  inside a run's command, REDLOCK_TOKEN stands in for --token of every lock,
//                 so sibling workers that take a second lock re-enter each other's
//   semaphore-extra-slot  a semaphore has one slot more than its --limit: K + 1 holders at once
// Only faults.cpp differs between the two binaries: in the real one, enabled() returns false
// without looking at the environment.
#pragma once

#include <string_view>

namespace redlock::faults {

bool enabled(std::string_view name);

}  // namespace redlock::faults
