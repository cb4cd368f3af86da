#include <doctest/doctest.h>

#include <cstdlib>

#include "core/lock/faults.hpp"

using namespace redlock;

// The negative controls of the fault suite exist only in the test binary redlock-faulty. The
// library the real binary and these tests link must ignore REDLOCK_FAULT: a stray variable in a
// user's environment must never turn off a safety check.
TEST_CASE("the real build ignores REDLOCK_FAULT") {
  setenv("REDLOCK_FAULT", "release-any,no-validity,half-quorum", 1);
  CHECK_FALSE(faults::enabled("release-any"));
  CHECK_FALSE(faults::enabled("no-validity"));
  CHECK_FALSE(faults::enabled("half-quorum"));
  unsetenv("REDLOCK_FAULT");
}
