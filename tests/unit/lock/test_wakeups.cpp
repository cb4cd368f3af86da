#include <doctest/doctest.h>

#include <stdexcept>

#include "core/lock/wakeups.hpp"
#include "fake_network.hpp"

using namespace redlock;
using redlock::test::FakeNetwork;
using namespace std::chrono_literals;

TEST_CASE("each wake-up message is parsed once into its kind") {
  CHECK(parse_wake_message("released 7").kind == WakeEvent::Kind::Released);
  CHECK(parse_wake_message("released 7").waiters == 7);
  CHECK(parse_wake_message("released").waiters == 1);
  CHECK(parse_wake_message("retracted").kind == WakeEvent::Kind::Retracted);
  CHECK(parse_wake_message("acquired").kind == WakeEvent::Kind::Acquired);
  CHECK(parse_wake_message("subscribed").kind == WakeEvent::Kind::Subscribed);
  CHECK(parse_wake_message("acquired now").kind == WakeEvent::Kind::Other);
  CHECK(parse_wake_message("").kind == WakeEvent::Kind::Other);
}

TEST_CASE("a release heard while sleeping brings the next attempt forward") {
  FakeNetwork net(3);
  const TimePoint begin = net.now();
  Wakeups wakeups(net, "{job}:redlock:wake", 30s, 200ms, 1, begin, kNever);
  wakeups.subscribe(begin + 100ms, [] { return false; });
  TimePoint planned = wakeups.plan(net.now(), false, std::nullopt, true);
  CHECK(planned - net.now() >= 3s);  // the slow fallback poll
  net.at(net.now() + 50ms, [&] { net.announce_everywhere("released 1"); });
  CHECK(wakeups.sleep([] { return false; }));
  CHECK(net.now() < begin + 1s);
}

TEST_CASE("the subscription ends with the wait, on every path out of it") {
  FakeNetwork net(3);
  auto wait = [&] {
    Wakeups wakeups(net, "{job}:redlock:wake", 30s, 200ms, 1, net.now(), kNever);
    wakeups.subscribe(net.now() + 100ms, [] { return false; });
    throw std::runtime_error("an attempt failed");
  };
  CHECK_THROWS(wait());
  CHECK(net.unsubscribes == 1);
  CHECK(net.subscribed() == 0);
}
