#include <doctest/doctest.h>

#include <set>

#include "core/lock/token.hpp"

TEST_CASE("tokens: 32 lower-case hex characters, never the same twice") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string t = redlock::make_token();
    REQUIRE(t.size() == 32);
    for (char c : t) CHECK(((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')));
    seen.insert(t);
  }
  CHECK(seen.size() == 1000);
}

TEST_CASE("tokens: every hex digit shows up (the bytes are not constant)") {
  std::set<char> digits;
  for (int i = 0; i < 50; ++i) {
    for (char c : redlock::make_token()) digits.insert(c);
  }
  CHECK(digits.size() == 16);
}
