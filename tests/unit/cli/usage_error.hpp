// The usage error a front-end step throws, for tests that check what it names.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "core/util/error.hpp"

// The message of the usage error STEP throws; empty when it throws none.
template <class Step>
std::string usage_error_of(Step step) {
  try {
    step();
  } catch (const redlock::Error& e) {
    CHECK(e.kind() == redlock::ErrorKind::Usage);
    return e.what();
  }
  return {};
}
