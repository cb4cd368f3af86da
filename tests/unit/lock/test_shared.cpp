#include "core/lock/shared.hpp"

#include <doctest/doctest.h>

#include "fake_network.hpp"

using namespace redlock;
using namespace std::chrono_literals;
using redlock::test::FakeNetwork;
using redlock::test::Ids;

namespace {

LockSpec spec(LockKeys keys, const std::string& token, Duration ttl) {
  LockSpec s;
  s.keys = std::move(keys);
  s.token = token;
  s.ttl = ttl;
  s.owner = "tester";
  return s;
}

LockSpec reader(const std::string& token, Duration ttl = 10s) {
  return spec(derive_reader_keys("data"), token, ttl);
}

LockSpec writer(const std::string& token, Duration ttl = 10s) {
  return spec(derive_keys("data"), token, ttl);
}

const std::string kWriters = "{data}:redlock:writers";

bool zset_empty(FakeNetwork& net, std::size_t i) {
  auto& z = net.servers[i].zsets[kWriters];
  return z.empty();
}

}  // namespace

TEST_CASE("readers hold at once; the lock holds the marker meanwhile, and is free when the last leaves") {
  FakeNetwork net(5);
  Redlock lock(net);
  REQUIRE(lock.acquire(reader("r1"), WaitOptions{}).outcome == AcquireOutcome::Acquired);
  auto second = lock.acquire(reader("r2", 20s), WaitOptions{});
  REQUIRE(second.outcome == AcquireOutcome::Acquired);
  CHECK(second.fence == 0);  // no writer yet
  for (std::size_t i = 0; i < net.size(); ++i) CHECK(net.value(i, "data") == std::string(kSharedMarker));
  CHECK(net.ttl_ms(0, "data") > 19000);  // covers the longest reader

  Shared shared(lock, "data");
  auto s = shared.status();
  CHECK_FALSE(s.writer);
  REQUIRE(s.readers.size() == 2);
  CHECK(s.readers[0].token == "r2");

  CHECK(lock.release(derive_reader_keys("data"), "r1", false).released);
  CHECK(net.value(0, "data") == std::string(kSharedMarker));
  CHECK(lock.release(derive_reader_keys("data"), "r2", false).released);
  CHECK_FALSE(net.value(0, "data"));
}

TEST_CASE("a writer is refused while readers hold on a quorum, and queues itself; it gives up cleanly") {
  FakeNetwork net(5);
  Redlock lock(net);
  REQUIRE(lock.acquire(reader("r1"), WaitOptions{}).outcome == AcquireOutcome::Acquired);
  auto w = lock.acquire(writer("w"), WaitOptions{});
  CHECK(w.outcome == AcquireOutcome::Busy);
  CHECK(w.writer_queued);
  CHECK(w.holder_announces);
  REQUIRE(w.holder);
  CHECK(w.holder->owner == std::string("readers"));
  net.advance(10ms);  // the withdrawal, not waited for
  for (std::size_t i = 0; i < net.size(); ++i) CHECK_FALSE(net.value(i, "data") == std::string("w"));
  // Gave up: no entry left among the waiting writers, so readers are let in again.
  CHECK(Shared(lock, "data").status().writers_waiting == 0);
  CHECK(lock.acquire(reader("r2"), WaitOptions{}).outcome == AcquireOutcome::Acquired);
}

TEST_CASE("a reader is refused while a writer holds, and the writer's fence is the reader's after it") {
  FakeNetwork net(3);
  Redlock lock(net);
  auto w = lock.acquire(writer("w"), WaitOptions{});
  REQUIRE(w.outcome == AcquireOutcome::Acquired);
  auto r = lock.acquire(reader("r1"), WaitOptions{});
  CHECK(r.outcome == AcquireOutcome::Busy);
  CHECK(Shared(lock, "data").status().writer);
  REQUIRE(lock.release(derive_keys("data"), "w", false).released);
  auto after = lock.acquire(reader("r1"), WaitOptions{});
  REQUIRE(after.outcome == AcquireOutcome::Acquired);
  CHECK(after.fence == w.fence);  // readers read the fence, never raise it
  auto again = lock.acquire(writer("w2"), WaitOptions{});
  CHECK(again.outcome == AcquireOutcome::Busy);
}

TEST_CASE("failed servers let no writer past readers on a quorum, and give no reader a lock without one") {
  FakeNetwork net(5);
  Redlock lock(net);
  for (std::size_t i : Ids{3, 4}) net.servers[i].down = true;
  REQUIRE(lock.acquire(reader("r1"), WaitOptions{}).outcome == AcquireOutcome::Acquired);
  // Two of the three servers that hold the reader fail; a reader alone on one server is no lock.
  for (std::size_t i : Ids{3, 4}) net.servers[i].down = false;
  for (std::size_t i : Ids{0, 1}) net.servers[i].down = true;
  auto w = lock.acquire(writer("w"), WaitOptions{});
  CHECK(w.outcome == AcquireOutcome::Busy);  // server 2 still holds the reader: 2 of 3 answering
  for (std::size_t i : Ids{0, 1}) net.servers[i].down = false;
  for (std::size_t i : Ids{0, 1, 2}) net.servers[i].data.clear(), net.servers[i].zsets.clear();
  // Restarted empty: the reader is gone on a quorum, and a writer gets in.
  CHECK(lock.acquire(writer("w"), WaitOptions{}).outcome == AcquireOutcome::Acquired);
  // A reader with only two servers answering has no quorum.
  REQUIRE(lock.release(derive_keys("data"), "w", false).released);
  for (std::size_t i : Ids{0, 1, 2}) net.servers[i].down = true;
  CHECK(lock.acquire(reader("r2"), WaitOptions{}).outcome == AcquireOutcome::NoQuorum);
}

TEST_CASE("writer priority: a waiting writer holds new readers back and gets in when the old ones leave") {
  FakeNetwork net(3);
  Redlock lock(net);
  REQUIRE(lock.acquire(reader("r1", 30s), WaitOptions{}).outcome == AcquireOutcome::Acquired);
  const TimePoint start = net.now();
  // New readers arrive while the writer waits: refused with priority, let in without it.
  net.at(start + 200ms, [&] {
    CHECK(lock.acquire(reader("r2"), WaitOptions{}).outcome == AcquireOutcome::Busy);
    LockSpec polite = reader("r3");
    polite.writer_priority = false;
    auto r3 = lock.acquire(polite, WaitOptions{});
    CHECK(r3.outcome == AcquireOutcome::Acquired);
    CHECK(net.servers[0].zsets[kWriters].count("w") == 1);
  });
  net.at(start + 1s, [&] { lock.release(derive_reader_keys("data"), "r1", false); });
  net.at(start + 2s, [&] { lock.release(derive_reader_keys("data"), "r3", false); });
  WaitOptions wait;
  wait.wait = true;
  wait.deadline = start + 20s;
  auto w = lock.acquire(writer("w"), wait);
  REQUIRE(w.outcome == AcquireOutcome::Acquired);
  CHECK(net.now() - start >= 2s);
  CHECK(net.now() - start < 3s);  // woken by the last reader's release, not a poll
  net.advance(10ms);
  for (std::size_t i = 0; i < net.size(); ++i) CHECK(zset_empty(net, i));
}

TEST_CASE("a reader's renewal puts it back where a server lost it, never where a writer holds the lock") {
  FakeNetwork net(7);
  Redlock lock(net);
  auto w = lock.acquire(writer("w"), WaitOptions{});
  REQUIRE(lock.release(derive_keys("data"), "w", false).released);
  REQUIRE(lock.acquire(reader("r1"), WaitOptions{}).outcome == AcquireOutcome::Acquired);
  const std::string fence_key = "{data}:redlock:fence";
  const auto keys = derive_reader_keys("data");
  // Server 0 restarted empty; server 1 lost the reader only (another reader's marker is there);
  // server 2 has another client's exclusive lock on the key.
  net.servers[0].data.clear(), net.servers[0].zsets.clear();
  net.servers[1].zsets.clear();
  net.servers[2].zsets.clear();
  net.set(2, "data", "theirs", 10s);
  auto r = lock.extend(keys, "r1", 10s, 0.01, Heal{"", w.fence});
  CHECK(r.extended);  // servers 3 to 6 (the heals are no votes)
  CHECK(r.healed == 2);
  for (std::size_t i : Ids{0, 1}) {
    CHECK(net.value(i, "data") == std::string(kSharedMarker));
    CHECK(net.servers[i].zsets["{data}:redlock:readers"].count("r1") == 1);
  }
  CHECK(net.value(0, fence_key) == std::to_string(w.fence));  // the write fence the reader read
  CHECK(net.value(2, "data") == "theirs");
  CHECK(net.servers[2].zsets["{data}:redlock:readers"].empty());
  // Without a quorum of its own, a reader heals nothing.
  for (std::size_t i : Ids{0, 1, 3, 4}) net.servers[i].data.clear(), net.servers[i].zsets.clear();
  auto lost = lock.extend(keys, "r1", 10s, 0.01);
  CHECK_FALSE(lost.extended);
  CHECK(lost.healed == 0);
  CHECK_FALSE(net.value(0, "data"));
}
