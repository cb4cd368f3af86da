#include <doctest/doctest.h>

#include <stdexcept>

#include "core/util/defer.hpp"

using redlock::Defer;

TEST_CASE("a deferred cleanup runs when its scope ends, once") {
  int runs = 0;
  {
    const Defer cleanup([&] { ++runs; });
    CHECK(runs == 0);
  }
  CHECK(runs == 1);
}

TEST_CASE("a deferred cleanup runs when an exception leaves its scope") {
  int runs = 0;
  auto body = [&] {
    const Defer cleanup([&] { ++runs; });
    throw std::runtime_error("attempt failed");
  };
  CHECK_THROWS_AS(body(), std::runtime_error);
  CHECK(runs == 1);
}

TEST_CASE("a cleanup that throws does not end the program or hide the first failure") {
  auto body = [] {
    const Defer cleanup([] { throw std::logic_error("cleanup failed"); });
    throw std::runtime_error("attempt failed");
  };
  CHECK_THROWS_AS(body(), std::runtime_error);
}
