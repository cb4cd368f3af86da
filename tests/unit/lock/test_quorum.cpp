#include <doctest/doctest.h>

#include "core/lock/quorum.hpp"

using namespace redlock;
using namespace std::chrono_literals;

TEST_CASE("quorum is N/2+1") {
  CHECK(quorum_size(1) == 1);
  CHECK(quorum_size(2) == 2);
  CHECK(quorum_size(3) == 2);
  CHECK(quorum_size(4) == 3);
  CHECK(quorum_size(5) == 3);
  CHECK(quorum_size(9) == 5);
}

TEST_CASE("validity = TTL - elapsed - (TTL*drift + 2ms)") {
  CHECK(drift_allowance(30s, 0.01) == 302ms);
  CHECK(validity(30s, 10ms, 0.01) == 30s - 10ms - 302ms);
  CHECK(validity(1s, 0ms, 0.0) == 998ms);
  CHECK(validity(10ms, 9ms, 0.0) < Duration::zero());
}

TEST_CASE("tally: decided as soon as the outcome is known") {
  Tally t{5, 0, 0, 0};
  CHECK_FALSE(t.decided());
  t.yes = 3;
  CHECK(t.won());
  CHECK(t.decided());

  Tally busy{5, 0, 3, 0};
  CHECK(busy.lost());
  CHECK_FALSE(busy.unreachable());

  Tally dead{5, 0, 0, 3};
  CHECK(dead.lost());
  CHECK(dead.unreachable());

  Tally mixed{5, 2, 1, 1};  // one still out could still make it 3
  CHECK_FALSE(mixed.decided());
  mixed.failed = 2;
  CHECK(mixed.lost());
  CHECK_FALSE(mixed.unreachable());
}

TEST_CASE("when a busy lock could be free on a quorum") {
  // 5 servers, quorum 3; none free, holders' TTLs 100..500ms: the third to expire decides.
  CHECK(quorum_free_in(5, 0, {500, 100, 300, 200, 400}) == 300ms);
  // Two already free: the first to expire makes three.
  CHECK(quorum_free_in(5, 2, {900, 700, 800}) == 700ms);
  CHECK(quorum_free_in(5, 3, {}) == 0ms);
  // A holder without expiry on three servers: never, by expiry alone.
  CHECK_FALSE(quorum_free_in(5, 0, {-1, -1, -1, 100, 200}));
  // Not enough answers to know.
  CHECK_FALSE(quorum_free_in(5, 0, {100, 200}));
}

TEST_CASE("counts of servers read right: one server, and the servers not waited for") {
  CHECK(servers_text(1, 1) == "1 of 1 server");
  CHECK(servers_text(0, 1) == "0 of 1 server");
  CHECK(servers_text(1, 3) == "1 of 3 servers");
  Tally t;
  t.total = 5;
  t.no = 3;
  CHECK(not_waited_text(t) == "2 not waited for");
  t.failed = 2;
  CHECK(not_waited_text(t).empty());
}
