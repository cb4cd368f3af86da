#include <doctest/doctest.h>

#include "core/lock/watch.hpp"

using namespace redlock;

namespace {

LockReading holding(const std::string& token, std::int64_t ttl_ms = 1000) {
  return LockReading{"string", token, ttl_ms, std::string("1700000000000/1000 alice@host:1"), 7};
}

std::vector<std::string> kinds(const std::vector<LockEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.emplace_back(event_name(e.kind));
  return out;
}

using Names = std::vector<std::string>;
using Ids = std::initializer_list<std::size_t>;

}  // namespace

TEST_CASE("each event is told once, however many servers report it") {
  LockHistory h(3);
  const TimePoint t0 = TimePoint(std::chrono::hours(1));
  h.start({LockReading{}, LockReading{}, LockReading{}}, t0);
  SUBCASE("acquired once a quorum holds the token; released at the first release") {
    h.read(0, holding("t"), t0, t0, false);
    CHECK(h.take().empty());  // one of three is no lock yet
    h.read(1, holding("t"), t0, t0, false);
    auto events = h.take();
    REQUIRE(kinds(events) == Names{"acquired"});
    CHECK(events[0].token == "t");
    CHECK(events[0].fence == 7);
    CHECK(events[0].ttl_ms == 1000);
    h.read(2, holding("t"), t0, t0, false);
    h.read(2, holding("t"), t0, t0, true);
    h.read(0, holding("t"), t0, t0, true);
    CHECK(kinds(h.take()) == Names{"extended"});
    for (std::size_t i : Ids{1, 0, 2}) h.ended(i, LockEventKind::Released, t0, true);
    CHECK(kinds(h.take()) == Names{"released"});
    CHECK(h.free_servers() == 3);
    // The same token taken again is a new acquisition.
    h.read(0, holding("t"), t0, t0, false);
    h.read(1, holding("t"), t0, t0, false);
    CHECK(kinds(h.take()) == Names{"acquired"});
  }
  SUBCASE("a lock gone after its expiry expired; before it, released") {
    for (std::size_t i : Ids{0, 1, 2}) h.read(i, holding("t", 500), t0, t0, false);
    CHECK(kinds(h.take()) == Names{"acquired"});
    h.read(0, LockReading{}, t0, t0 + std::chrono::milliseconds(600), false);
    h.ended(1, LockEventKind::Expired, t0 + std::chrono::milliseconds(610), false);
    h.read(2, LockReading{}, t0, t0 + std::chrono::milliseconds(620), false);
    CHECK(kinds(h.take()) == Names{"expired"});
    for (std::size_t i : Ids{0, 1}) h.read(i, holding("u", 500), t0, t0, false);
    h.read(0, LockReading{}, t0, t0 + std::chrono::milliseconds(100), false);
    CHECK(kinds(h.take()) == Names{"acquired", "released"});
  }
  SUBCASE("an attempt without a quorum is no acquisition, and its retraction is told once") {
    h.read(0, holding("loser"), t0, t0, false);
    h.ended(0, LockEventKind::Retracted, t0, true);
    h.ended(1, LockEventKind::Retracted, t0, true);
    auto events = h.take();
    REQUIRE(kinds(events) == Names{"retracted"});
    CHECK(events[0].token == "loser");
  }
  SUBCASE("a server that lost the lock while a quorum holds it is no release; its holder's word is") {
    for (std::size_t i : Ids{0, 1, 2}) h.read(i, holding("t"), t0, t0, false);
    CHECK(kinds(h.take()) == Names{"acquired"});
    h.read(0, LockReading{}, t0, t0, false);  // restarted empty
    CHECK(h.take().empty());
    h.read(0, holding("t"), t0, t0, false);          // put back by a renewal: the same holder, nothing new
    h.ended(1, LockEventKind::Released, t0, false);  // deleted there, unexplained
    CHECK(h.take().empty());
    h.ended(2, LockEventKind::Expired, t0, false);  // and expired on a third: held on 1 of 3
    CHECK(kinds(h.take()) == Names{"expired"});
  }
  SUBCASE("the holder's own release is told at its first server") {
    for (std::size_t i : Ids{0, 1, 2}) h.read(i, holding("t"), t0, t0, false);
    h.take();
    h.ended(2, LockEventKind::Released, t0, true);
    CHECK(kinds(h.take()) == Names{"released"});
  }
  SUBCASE("another holder seen in place of the announced one: the first left, the second came") {
    for (std::size_t i : Ids{0, 1}) h.read(i, holding("a"), t0, t0, false);
    for (std::size_t i : Ids{0, 1}) h.read(i, holding("b"), t0, t0, false);
    CHECK(kinds(h.take()) == Names{"acquired", "released", "acquired"});
  }
}

TEST_CASE("a lock held when the watch starts is the announced holder") {
  LockHistory h(3);
  const TimePoint t0 = TimePoint(std::chrono::hours(1));
  h.start({holding("t"), holding("t"), std::nullopt}, t0);
  h.read(2, holding("t"), t0, t0, false);
  CHECK(h.take().empty());
  h.ended(1, LockEventKind::Released, t0, true);
  CHECK(kinds(h.take()) == Names{"released"});
}

TEST_CASE("a string without an expiry is someone's data, never an acquisition") {
  LockHistory h(3);
  const TimePoint t0 = TimePoint(std::chrono::hours(1));
  h.start({LockReading{}, LockReading{}, LockReading{}}, t0);
  for (std::size_t i : Ids{0, 1, 2}) h.read(i, holding("appdata", -1), t0, t0, false);
  CHECK(h.take().empty());
  CHECK(h.free_servers() == 3);
}
