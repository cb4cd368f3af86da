#include <doctest/doctest.h>

#include "core/lock/lease.hpp"
#include "fake_network.hpp"

using namespace redlock;
using namespace std::chrono_literals;
using redlock::test::FakeNetwork;
using redlock::test::Ids;

namespace {

struct Held {
  FakeNetwork net{5};
  LockKeys keys = derive_keys("job");
  TimePoint valid_until;
  Held() {
    for (std::size_t i = 0; i < 5; ++i) net.set(i, "job", "tok", 3s);
    valid_until = net.now() + 3s - 32ms;
  }
  Lease::Event settle(Lease& lease) {
    net.run_until([&] { return lease.decided(); }, kNever);
    return lease.poll();
  }
};

}  // namespace

TEST_CASE("a renewal moves the validity deadline on and schedules the next") {
  Held h;
  Lease lease(h.net, h.keys, "tok", 3s, 0.01, h.valid_until, 1s, 0ms);
  CHECK(lease.next_renewal() == h.net.now() + 1s);
  h.net.advance(1s);
  lease.start_renewal();
  CHECK(lease.next_renewal() == kNever);
  CHECK(h.settle(lease) == Lease::Event::Renewed);
  CHECK(lease.valid_until() > h.valid_until + 900ms);
  CHECK(lease.renewals() == 1);
  CHECK(lease.next_renewal() == h.net.now() + 1s);
}

TEST_CASE("servers down: the renewal failed, not the lock; try again soon") {
  Held h;
  Lease lease(h.net, h.keys, "tok", 3s, 0.01, h.valid_until, 1s, 0ms);
  for (std::size_t i : Ids{0, 1, 2}) h.net.servers[i].down = true;
  lease.start_renewal();
  CHECK(h.settle(lease) == Lease::Event::Failed);
  CHECK(lease.valid_until() == h.valid_until);
  CHECK(lease.next_renewal() == h.net.now() + 250ms);
}

TEST_CASE("a quorum without our token: the lock is gone") {
  Held h;
  Lease lease(h.net, h.keys, "tok", 3s, 0.01, h.valid_until, 1s, 0ms);
  for (std::size_t i : Ids{0, 1, 2}) h.net.set(i, "job", "thief", 3s);
  lease.start_renewal();
  CHECK(h.settle(lease) == Lease::Event::Gone);
  CHECK(h.net.value(0, "job") == "thief");  // never extended someone else's lock
}

TEST_CASE("servers restarted empty get the lock back from a renewal that had a quorum, fence and owner kept") {
  Held h;
  Lease lease(h.net, h.keys, "tok", 3s, 0.01, h.valid_until, 1s, 0ms);
  lease.heal_with({"1700000000000 me@host:1", 7});
  for (std::size_t i : Ids{0, 1}) h.net.servers[i].data.clear();
  h.net.set(1, "{job}:redlock:fence", "9", 1h);
  h.net.set(2, "job", "thief", 3s);  // another token: never taken over
  h.net.servers[3].data.clear();
  lease.start_renewal();
  CHECK(h.settle(lease) == Lease::Event::Gone);  // 1 of 5 extended: no quorum, so no heal either
  CHECK(lease.heals() == 0);
  h.net.advance(5ms);
  CHECK_FALSE(h.net.value(0, "job"));
  CHECK(h.net.value(2, "job") == "thief");
  h.net.set(3, "job", "tok", 3s);
  h.net.set(2, "job", "tok", 3s);
  lease.start_renewal();
  CHECK(h.settle(lease) == Lease::Event::Renewed);  // 3 of 5: and the other two are put back
  h.net.advance(5ms);
  CHECK(lease.heals() == 1);
  for (std::size_t i : Ids{0, 1}) CHECK(h.net.value(i, "job") == "tok");
  CHECK(h.net.value(0, "{job}:redlock:owner") == "1700000000000 me@host:1");
  CHECK(h.net.value(0, "{job}:redlock:fence") == "7");
  CHECK(h.net.value(1, "{job}:redlock:fence") == "9");                          // a fence is never lowered
  CHECK(h.net.servers[4].log == std::vector<std::string>{"extend", "extend"});  // nothing to heal there
}

TEST_CASE("a server restarted empty that answers after the quorum decided is put back on its answer") {
  // Its connection is new: its answer comes last, after the renewal was decided without it.
  Held h;
  Lease lease(h.net, h.keys, "tok", 3s, 0.01, h.valid_until, 1s, 0ms);
  lease.heal_with({"1700000000000 me@host:1", 7});
  h.net.servers[4].data.clear();
  h.net.servers[4].latency = 40ms;
  lease.start_renewal();
  CHECK(h.settle(lease) == Lease::Event::Renewed);
  CHECK(lease.heals() == 0);  // not heard from yet
  for (int late = 0; late < 5 && lease.heals() == 0; ++late) {
    h.net.run_until([&] { return lease.decided(); }, h.net.now() + 1s);
    CHECK(lease.poll() == Lease::Event::None);
  }
  CHECK(lease.heals() == 1);
  h.net.advance(100ms);
  CHECK(h.net.value(4, "job") == "tok");
  CHECK(h.net.value(4, "{job}:redlock:fence") == "7");
  CHECK_FALSE(lease.decided());  // nothing more to do until the next renewal
}

TEST_CASE("a late answer after the validity that renewal gave heals nothing") {
  // A deadline long enough for the empty server's answer to come, after the 3s the renewal gave.
  FakeNetwork net{5, 10s};
  const LockKeys keys = derive_keys("job");
  for (std::size_t i = 0; i < 4; ++i) net.set(i, "job", "tok", 3s);
  Lease lease(net, keys, "tok", 3s, 0.01, net.now() + 3s - 32ms, 1s, 0ms);
  net.servers[4].latency = 4s;
  lease.start_renewal();
  net.run_until([&] { return lease.decided(); }, kNever);
  CHECK(lease.poll() == Lease::Event::Renewed);
  net.run_until([&] { return lease.decided(); }, net.now() + 5s);
  CHECK(lease.decided());  // the empty server answered, after the validity
  lease.poll();
  CHECK(lease.heals() == 0);
  net.advance(5s);
  CHECK_FALSE(net.value(4, "job"));
}

TEST_CASE("a lock gone everywhere (expired while stopped) is never taken back by a renewal") {
  Held h;
  Lease lease(h.net, h.keys, "tok", 3s, 0.01, h.valid_until, 1s, 0ms);
  for (std::size_t i = 0; i < 5; ++i) h.net.servers[i].data.clear();
  lease.start_renewal();
  CHECK(h.settle(lease) == Lease::Event::Gone);
  h.net.advance(5ms);
  for (std::size_t i = 0; i < 5; ++i) CHECK_FALSE(h.net.value(i, "job"));
}

TEST_CASE("two servers lost and one frozen: failed for now, not gone") {
  Held h;
  Lease lease(h.net, h.keys, "tok", 3s, 0.01, h.valid_until, 1s, 0ms);
  h.net.servers[0].data.clear();
  h.net.servers[1].data.clear();
  h.net.servers[2].frozen = true;
  lease.start_renewal();
  CHECK(h.settle(lease) == Lease::Event::Failed);
}

TEST_CASE("a lock taken with little validity is renewed in time, not only after the cadence") {
  // Taken slowly: 1.77s of validity left, of which the last 1.1s are needed to stop the command.
  Held h;
  const TimePoint valid_until = h.net.now() + 1770ms;
  Lease lease(h.net, h.keys, "tok", 3s, 0.01, valid_until, 1s, 1100ms);
  CHECK(lease.next_renewal() == h.net.now() + 335ms);  // halfway to the last moment, not 1s
  for (std::size_t i : Ids{0, 1, 2}) h.net.servers[i].down = true;
  h.net.advance(335ms);
  lease.start_renewal();
  CHECK(h.settle(lease) == Lease::Event::Failed);
  CHECK(lease.next_renewal() > h.net.now());
  CHECK(lease.next_renewal() < valid_until - 1100ms);  // again before the last moment
  for (std::size_t i : Ids{0, 1, 2}) h.net.servers[i].down = false;
  h.net.advance(lease.next_renewal() - h.net.now());
  lease.start_renewal();
  CHECK(h.settle(lease) == Lease::Event::Renewed);
  CHECK(lease.valid_until() > valid_until + 1s);
  CHECK(lease.next_renewal() == h.net.now() + 1s);  // the cadence again, with a full validity
}

TEST_CASE("a cadence chosen to fit is kept as it is") {
  // 30s lock, --renew 15s, 10.1s reserved: 15s and a retry at 18.75s both come before 19.6s.
  FakeNetwork net{5};
  const TimePoint valid_until = net.now() + 29700ms;
  Lease lease(net, derive_keys("job"), "tok", 30s, 0.01, valid_until, 15s, 10100ms);
  CHECK(lease.next_renewal() == net.now() + 15s);
}

TEST_CASE("at the cut-off, retries keep a floor instead of spinning") {
  Held h;
  Lease lease(h.net, h.keys, "tok", 3s, 0.01, h.net.now() + 1100ms, 1s, 1100ms);
  CHECK(lease.next_renewal() == h.net.now() + 1ms);
}
