// Negative controls for the fault-injection suite: ways to break the lock on purpose, so that the
// suite can show its checkers catch a broken lock. They exist only in the test binary
// `redlock-faulty` (built with REDLOCK_FAULTS) and are chosen with REDLOCK_FAULT=name[,name…]:
//   release-any   release deletes the key whatever token it holds (no compare-and-delete)
//   no-validity   drift 0 and no validity check: a lock counts however long it took, and `run`
//                 never stops its command because the validity ran out
//   half-quorum   N/2 votes make a "quorum" (two holders can each get one)
// In the real binary, enabled() is a constant false and the compiler removes every use.
#pragma once

#include <string_view>

namespace redlock::faults {

#ifdef REDLOCK_FAULTS
bool enabled(std::string_view name);
#else
constexpr bool enabled(std::string_view) { return false; }
#endif

}  // namespace redlock::faults
