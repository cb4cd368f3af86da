#include <doctest/doctest.h>

#include "fake_network.hpp"
#include "lease.hpp"

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
  Lease lease(h.net, h.keys, "tok", 3s, 0.01, h.valid_until, 1s);
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
  Lease lease(h.net, h.keys, "tok", 3s, 0.01, h.valid_until, 1s);
  for (std::size_t i : Ids{0, 1, 2}) h.net.servers[i].down = true;
  lease.start_renewal();
  CHECK(h.settle(lease) == Lease::Event::Failed);
  CHECK(lease.valid_until() == h.valid_until);
  CHECK(lease.next_renewal() == h.net.now() + 250ms);
}

TEST_CASE("a quorum without our token: the lock is gone") {
  Held h;
  Lease lease(h.net, h.keys, "tok", 3s, 0.01, h.valid_until, 1s);
  for (std::size_t i : Ids{0, 1, 2}) h.net.set(i, "job", "thief", 3s);
  lease.start_renewal();
  CHECK(h.settle(lease) == Lease::Event::Gone);
  CHECK(h.net.value(0, "job") == "thief");  // never extended someone else's lock
}

TEST_CASE("two servers lost and one frozen: failed for now, not gone") {
  Held h;
  Lease lease(h.net, h.keys, "tok", 3s, 0.01, h.valid_until, 1s);
  h.net.servers[0].data.clear();
  h.net.servers[1].data.clear();
  h.net.servers[2].frozen = true;
  lease.start_renewal();
  CHECK(h.settle(lease) == Lease::Event::Failed);
}
