#include <doctest/doctest.h>

#include "core/lock/faults.hpp"

using namespace redlock;

// The negative controls of the fault suite exist only in the test binary redlock-faulty. The
// library the real binary and these tests link must ignore REDLOCK_FAULT: a stray variable in a
// user's environment must never turn off a safety check.
TEST_CASE("the real build ignores the faults chosen") {
  faults::choose(
      "release-any,no-validity,half-quorum,inherit-any-token,semaphore-extra-slot,semaphore-majority,"
      "shared-ignores-writer");
  CHECK_FALSE(faults::enabled(faults::Fault::ReleaseAny));
  CHECK_FALSE(faults::enabled(faults::Fault::NoValidity));
  CHECK_FALSE(faults::enabled(faults::Fault::HalfQuorum));
  CHECK_FALSE(faults::enabled(faults::Fault::InheritAnyToken));
  CHECK_FALSE(faults::enabled(faults::Fault::SemaphoreExtraSlot));
  CHECK_FALSE(faults::enabled(faults::Fault::SemaphoreMajority));
  CHECK_FALSE(faults::enabled(faults::Fault::SharedIgnoresWriter));
}
