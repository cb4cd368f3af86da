#include "core/lock/semaphore.hpp"

#include <doctest/doctest.h>

#include <set>

#include "core/util/error.hpp"
#include "fake_network.hpp"

using namespace redlock;
using namespace std::chrono_literals;
using redlock::test::FakeNetwork;
using redlock::test::Ids;

namespace {

LockSpec spec(const std::string& token, Duration ttl = 10s) {
  LockSpec s;
  s.token = token;
  s.ttl = ttl;
  s.owner = "tester";
  return s;
}

WaitOptions wait_for(FakeNetwork& net, Duration d) {
  WaitOptions w;
  w.wait = true;
  w.deadline = net.now() + d;
  return w;
}

}  // namespace

TEST_CASE("a semaphore of 3 takes three different slots, each an ordinary lock, then is busy") {
  FakeNetwork net(5);
  Redlock lock(net);
  std::set<std::size_t> slots;
  for (const char* token : {"a", "b", "c"}) {
    Semaphore sem(lock, "jobs", 3);
    auto r = sem.acquire(spec(token), WaitOptions{});
    REQUIRE(r.outcome == AcquireOutcome::Acquired);
    CHECK(r.fence == 1);  // each slot's own counter
    slots.insert(sem.slot());
    for (std::size_t i = 0; i < net.size(); ++i) {
      CHECK(net.value(i, "{jobs}:redlock:slot:" + std::to_string(sem.slot())) == std::string(token));
    }
  }
  CHECK(slots == std::set<std::size_t>{0, 1, 2});
  CHECK(net.value(0, "{jobs}:redlock:limit") == std::string("3"));
  CHECK_FALSE(net.value(0, "jobs"));  // the name itself is never written

  Semaphore sem(lock, "jobs", 3);
  auto busy = sem.acquire(spec("d"), WaitOptions{});
  CHECK(busy.outcome == AcquireOutcome::Busy);
  CHECK(busy.message.find("all 3 slots held") == 0);
  CHECK(busy.message.find("(busy on 3 of 5 servers; 2 not waited for)") != std::string::npos);
  REQUIRE(busy.holder_free_in);
  CHECK(*busy.holder_free_in <= 10s);
}

TEST_CASE("a waiter gets the slot a release frees, woken on the name's channel") {
  FakeNetwork net(3);
  Redlock lock(net);
  Semaphore first(lock, "jobs", 1);
  REQUIRE(first.acquire(spec("a", 30s), WaitOptions{}).outcome == AcquireOutcome::Acquired);
  CHECK(first.keys().slots[0].channel == derive_keys("jobs").channel);
  const TimePoint start = net.now();
  net.at(start + 500ms, [&] { lock.release(first.keys().slots[0], "a", false); });
  Semaphore second(lock, "jobs", 1);
  auto r = second.acquire(spec("b"), wait_for(net, 20s));
  REQUIRE(r.outcome == AcquireOutcome::Acquired);
  // Woken by the release, not by the slow poll (20 x 200ms) or the holder's TTL.
  CHECK(net.now() - start < 600ms);
}

TEST_CASE("a minority down: a slot is still taken; a majority down: no quorum") {
  FakeNetwork net(5);
  Redlock lock(net);
  net.servers[0].down = true;
  net.servers[1].frozen = true;
  Semaphore sem(lock, "jobs", 2);
  CHECK(sem.acquire(spec("a"), WaitOptions{}).outcome == AcquireOutcome::Acquired);
  net.servers[2].down = true;
  Semaphore other(lock, "jobs", 2);
  CHECK(other.acquire(spec("b"), WaitOptions{}).outcome == AcquireOutcome::NoQuorum);
}

TEST_CASE("another limit than the stored one is a configuration error, and nothing is taken") {
  FakeNetwork net(3);
  Redlock lock(net);
  REQUIRE(Semaphore(lock, "jobs", 3).acquire(spec("a"), WaitOptions{}).outcome == AcquireOutcome::Acquired);
  Semaphore two(lock, "jobs", 2);
  try {
    two.acquire(spec("b"), WaitOptions{});
    FAIL("no configuration error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Config);
    CHECK(std::string(e.what()) == "semaphore limit conflict: jobs has limit 3, asked 2");
  }
  for (std::size_t s = 0; s < 3; ++s) {
    CHECK(net.value(0, "{jobs}:redlock:slot:" + std::to_string(s)) != std::string("b"));
  }
}

TEST_CASE("find, status and a forced release see every slot") {
  FakeNetwork net(3);
  Redlock lock(net);
  Semaphore a(lock, "jobs", 2);
  REQUIRE(a.acquire(spec("a"), WaitOptions{}).outcome == AcquireOutcome::Acquired);
  Semaphore sem(lock, "jobs", 2);
  CHECK(sem.find("a") == a.slot());
  CHECK_FALSE(sem.find("zzz"));
  SemaphoreStatus st = sem.status();
  CHECK(st.stored_limit == 2U);
  REQUIRE(st.slots.size() == 2);
  CHECK(st.slots[a.slot()].status.state == LockState::Held);
  CHECK(st.slots[1 - a.slot()].status.state == LockState::Free);
  ReleaseResult r = sem.force_release();
  CHECK(r.released);
  CHECK_FALSE(net.value(0, "{jobs}:redlock:limit"));
  CHECK(Semaphore(lock, "jobs", 5).acquire(spec("b"), WaitOptions{}).outcome == AcquireOutcome::Acquired);
}

TEST_CASE("a token that holds a slot takes that slot again (re-acquire), not another") {
  FakeNetwork net(3);
  Redlock lock(net);
  Semaphore sem(lock, "jobs", 3);
  REQUIRE(sem.acquire(spec("a"), WaitOptions{}).outcome == AcquireOutcome::Acquired);
  const std::size_t slot = sem.slot();
  for (int i = 0; i < 5; ++i) {
    Semaphore again(lock, "jobs", 3);
    REQUIRE(again.acquire(spec("a"), WaitOptions{}).outcome == AcquireOutcome::Acquired);
    CHECK(again.slot() == slot);
  }
}

TEST_CASE("the limit on a quorum, one value alike, is the quorum's limit; less is none") {
  FakeNetwork net(5);
  Redlock lock(net);
  auto store = [&](std::size_t i, const std::string& value) {
    net.servers[i].data["{jobs}:redlock:limit"] = FakeNetwork::Entry{value, "string", kNever};
  };
  auto quorum_limit = [&] { return Semaphore::quorum_limit(Semaphore(lock, "jobs", 0).probe()); };
  CHECK_FALSE(quorum_limit());
  for (std::size_t i : Ids{0, 1}) store(i, "3");
  store(2, "4");
  CHECK(Semaphore::stored_limit(Semaphore(lock, "jobs", 0).probe()) == 3U);  // most of those that answered
  CHECK_FALSE(quorum_limit());                                               // but 2 of 5 is no quorum
  store(3, "3");
  CHECK(quorum_limit() == 3U);
  for (std::size_t i : Ids{0, 1}) net.servers[i].down = true;
  CHECK_FALSE(quorum_limit());  // one server holds it among those that answered
}
