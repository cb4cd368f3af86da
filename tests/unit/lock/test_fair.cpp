#include "core/lock/fair.hpp"

#include <doctest/doctest.h>

using namespace redlock;
using namespace std::chrono_literals;

TEST_CASE("choose_ticket: the highest, written back unless a quorum drew it") {
  SUBCASE("every server drew the same ticket: stored on a quorum already") {
    auto c = choose_ticket({7, 7, 7}, 2);
    REQUIRE(c);
    CHECK(c->ticket == 7);
    CHECK_FALSE(c->write_back);
  }
  SUBCASE("a quorum drew the highest, one lags behind") {
    auto c = choose_ticket({9, 4, 9}, 2);
    REQUIRE(c);
    CHECK(c->ticket == 9);
    CHECK_FALSE(c->write_back);
  }
  SUBCASE("the highest on a minority: written back") {
    auto c = choose_ticket({9, 8, 8, 0, 0}, 3);
    REQUIRE(c);
    CHECK(c->ticket == 9);
    CHECK(c->write_back);
  }
  SUBCASE("a quorum agrees on a lower one: the highest still wins, written back") {
    auto c = choose_ticket({5, 5, 6}, 2);
    REQUIRE(c);
    CHECK(c->ticket == 6);
    CHECK(c->write_back);
  }
  SUBCASE("nobody queued the waiter") {
    CHECK_FALSE(choose_ticket({0, 0, 0}, 2));
  }
}

TEST_CASE("queue_place: the median of the places known") {
  CHECK(queue_place({3, 3, 4}) == 3);
  CHECK(queue_place({-1, 2, 5, 9}) == 5);
  CHECK(queue_place({0}) == 0);
  CHECK_FALSE(queue_place({-1, -1}));
  CHECK_FALSE(queue_place({}));
}

TEST_CASE("HandOffWatch: skip the queue's order after one heartbeat held up by queues alone") {
  HandOffWatch watch(3s);
  const TimePoint t0{};
  CHECK_FALSE(watch.observe(t0, true));
  CHECK_FALSE(watch.observe(t0 + 2900ms, true));
  CHECK(watch.observe(t0 + 3s, true));
  CHECK(watch.barging());
  SUBCASE("an attempt that finds a holder ends the hold-up, and the next begins anew") {
    CHECK_FALSE(watch.observe(t0 + 4s, false));
    CHECK_FALSE(watch.barging());
    CHECK_FALSE(watch.observe(t0 + 5s, true));
    CHECK_FALSE(watch.observe(t0 + 7s, true));
    CHECK(watch.observe(t0 + 8s, true));
  }
}

TEST_CASE("HandOffWatch: fewer heads are the same hand-off (a server held for a moment by a split vote)") {
  HandOffWatch watch(3s);
  const TimePoint t0{};
  CHECK_FALSE(watch.observe(t0, true, {"aa", "bb"}));
  CHECK_FALSE(watch.observe(t0 + 1s, true, {"bb"}));
  CHECK_FALSE(watch.observe(t0 + 2s, true, {"aa"}));
  CHECK(watch.observe(t0 + 3s, true, {"aa", "bb"}));
  SUBCASE("a head not named before in this hold-up begins the count anew") {
    CHECK_FALSE(watch.observe(t0 + 4s, true, {"aa", "cc"}));
    CHECK_FALSE(watch.observe(t0 + 6s, true, {"cc"}));
    CHECK(watch.observe(t0 + 7s, true, {"cc"}));
  }
}

TEST_CASE("HandOffWatch: other heads are another hand-off, and the count begins anew") {
  HandOffWatch watch(3s);
  const TimePoint t0{};
  CHECK_FALSE(watch.observe(t0, true, {"aa", "aa"}));
  CHECK_FALSE(watch.observe(t0 + 3500ms, true, {"bb", "bb"}));
  CHECK_FALSE(watch.observe(t0 + 6s, true, {"bb", "bb"}));
  CHECK(watch.observe(t0 + 6500ms, true, {"bb", "bb"}));
}

TEST_CASE("merge_queue: each waiter once, by ticket then id, with its highest ticket") {
  std::vector<std::vector<QueueEntry>> servers = {
      {{"aa", 1, "alice"}, {"bb", 2, "bob"}},
      {{"bb", 2, "bob"}, {"aa", 3, "alice"}},  // a ticket written back here
      {{"cc", 2, "carol"}},
  };
  auto q = merge_queue(servers);
  REQUIRE(q.size() == 3);
  CHECK(q[0].owner == "bob");
  CHECK(q[0].ticket == 2);
  CHECK(q[0].position == 0);
  CHECK(q[1].owner == "carol");  // ticket 2 too: after bob by id
  CHECK(q[1].position == 1);
  CHECK(q[2].owner == "alice");
  CHECK(q[2].ticket == 3);
  CHECK(q[2].position == 2);
  CHECK(merge_queue({}).empty());
}
