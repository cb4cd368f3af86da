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
  CHECK(parse_wake_message("subscribed").kind == WakeEvent::Kind::Other);
  CHECK(parse_wake_message("acquired now").kind == WakeEvent::Kind::Other);
  CHECK(parse_wake_message("").kind == WakeEvent::Kind::Other);
}

TEST_CASE("a confirmation is the subscription's news, never a message's text") {
  using K = ChannelEvent::Kind;
  CHECK(wake_event(ChannelEvent{K::Subscribed, 0, "{job}:redlock:wake", ""}).kind == WakeEvent::Kind::Subscribed);
  CHECK(wake_event(ChannelEvent{K::Message, 0, "{job}:redlock:wake", "subscribed"}).kind == WakeEvent::Kind::Other);
  CHECK(wake_event(ChannelEvent{K::Message, 0, "{job}:redlock:wake", "released 3"}).waiters == 3);
  CHECK(wake_event(ChannelEvent{K::Unsubscribed, 0, "{job}:redlock:wake", ""}).kind == WakeEvent::Kind::Other);
  CHECK(wake_event(ChannelEvent{K::Refused, 0, "{job}:redlock:wake", "released 3"}).kind == WakeEvent::Kind::Other);
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

TEST_CASE("a release message names the queued waiters it wakes, in order") {
  const WakeEvent e = parse_wake_message("released 12 3f9a 77b0");
  CHECK(e.kind == WakeEvent::Kind::Released);
  CHECK(e.waiters == 12);
  CHECK(e.named == std::vector<std::string>{"3f9a", "77b0"});
  CHECK(parse_wake_message("released 12").named.empty());
  CHECK(parse_wake_message("released 2 ").named.empty());
  CHECK(parse_wake_message("released").named.empty());
}

TEST_CASE("a release that handed the lock over says for how long, apart from the waiters it names") {
  const WakeEvent e = parse_wake_message("released 4 3f9a 77b0 granted:1500");
  CHECK(e.named == std::vector<std::string>{"3f9a", "77b0"});
  REQUIRE(e.granted);
  CHECK(*e.granted == 1500ms);
  CHECK(!parse_wake_message("released 4 3f9a 77b0").granted);
  CHECK(!parse_wake_message("released 4 3f9a granted:").granted);
  CHECK(!parse_wake_message("released 4 3f9a granted:x").granted);
  CHECK(parse_wake_message("released 4 3f9a granted:x").named == std::vector<std::string>{"3f9a"});
}

namespace {

// A queued waiter's sleep after a busy attempt, with MESSAGE announced by every server 50 ms in:
// how long it slept, and how many heartbeats it sent.
struct Slept {
  Duration slept;
  std::size_t heartbeats;
};

Slept sleep_through(const std::string& message, bool many_holders = false) {
  FakeNetwork net(3);
  Wakeups wakeups(net, "{job}:redlock:wake", 30s, 200ms, 1, net.now(), kNever);
  wakeups.set_many_holders(many_holders);
  wakeups.set_queued(QueuedWaiter{"aa11", "{job}:redlock:wake:aa11", "{job}:redlock:waiter:aa11",
                                  "{job}:redlock:waiters", 3s, "", ""});
  wakeups.subscribe(net.now() + 100ms, [] { return false; });
  net.advance(10ms);  // every server's confirmation in
  const TimePoint from = net.now();
  wakeups.plan(from, false, std::nullopt, true);
  net.at(from + 50ms, [&] { net.announce_everywhere(message); });
  const std::size_t sent = net.requests_sent();
  CHECK(wakeups.sleep([] { return false; }));
  return Slept{net.now() - from, net.requests_sent() - sent};
}

}  // namespace

TEST_CASE("a queued waiter wakes for its turn only") {
  SUBCASE("named first: at once") {
    CHECK(sleep_through("released 9 aa11 bb22").slept < 60ms);
  }
  SUBCASE("named second: after a retry delay, in case the first does not answer") {
    const Duration d = sleep_through("released 9 bb22 aa11").slept;
    CHECK(d >= 250ms);
    CHECK(d <= 400ms);
  }
  SUBCASE("not named: not before its heartbeat could have lapsed, with heartbeats meanwhile") {
    const Slept s = sleep_through("released 9 bb22 cc33");
    CHECK(s.slept >= 3s);
    // One PEXPIRE of the heartbeat and one of the queue to each of 3 servers, every second.
    CHECK(s.heartbeats >= 6 * 3);
    CHECK(s.heartbeats <= 6 * 5);
  }
  SUBCASE("handed the lock, named first: once every server said so, and it is told so once") {
    FakeNetwork net(3);
    Wakeups wakeups(net, "{job}:redlock:wake", 30s, 200ms, 1, net.now(), kNever);
    wakeups.set_queued(QueuedWaiter{"aa11", "{job}:redlock:wake:aa11", "{job}:redlock:waiter:aa11",
                                    "{job}:redlock:waiters", 3s, "", "{job}:redlock:grant:aa11"});
    wakeups.subscribe(net.now() + 100ms, [] { return false; });
    net.advance(10ms);
    const TimePoint from = net.now();
    wakeups.plan(from, false, std::nullopt, true);
    net.at(from + 50ms, [&] { net.announce(0, "released 9 aa11 bb22 granted:1500"); });
    net.at(from + 51ms, [&] { net.announce(1, "released 9 aa11 bb22 granted:1500"); });
    net.at(from + 52ms, [&] { net.announce(2, "released 9 aa11 bb22 granted:1500"); });
    CHECK(wakeups.sleep([] { return false; }));
    CHECK(net.now() - from < 60ms);
    const auto granted = wakeups.take_grant();
    REQUIRE(granted);
    CHECK(*granted == std::vector<std::string>{"aa11", "bb22"});
    CHECK(!wakeups.take_grant());
  }
  SUBCASE("named second after a hand-over: not before the hand-over could have lapsed") {
    const Duration d = sleep_through("released 9 bb22 aa11 granted:1500").slept;
    CHECK(d >= 1500ms + 250ms);
    CHECK(d <= 1500ms + 400ms);
  }
  SUBCASE("a release that names nobody wakes everyone, as before the queue") {
    CHECK(sleep_through("released 9").slept < 60ms);
  }
  SUBCASE("a semaphore's waiter is woken by any slot's release, named or not") {
    CHECK(sleep_through("released 9 bb22", true).slept < 60ms);
  }
}
