#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/lock/redlock.hpp"
#include "core/util/error.hpp"
#include "fake_network.hpp"

using namespace redlock;
using namespace std::chrono_literals;
using redlock::test::FakeNetwork;
using redlock::test::Ids;

namespace {

LockSpec spec(const std::string& token = "tok", Duration ttl = 10s) {
  LockSpec s;
  s.keys = derive_keys("job");
  s.token = token;
  s.ttl = ttl;
  s.owner = "tester";
  return s;
}

WaitOptions no_wait() {
  return WaitOptions{};
}

WaitOptions wait_for(FakeNetwork& net, Duration d) {
  WaitOptions w;
  w.wait = true;
  w.deadline = net.now() + d;
  return w;
}

// Server i's fencing counter of "job" is COUNTERS[i].
void set_fences(FakeNetwork& net, const std::vector<std::int64_t>& counters) {
  for (std::size_t i = 0; i < counters.size(); ++i)
    net.set(i, "{job}:redlock:fence", std::to_string(counters[i]), 1000h);
}

// Another redlock client holds the lock everywhere: with an owner record, as redlock holders keep.
void held_by_redlock(FakeNetwork& net, Duration ttl) {
  for (std::size_t i = 0; i < net.size(); ++i) {
    net.set(i, "job", "other", ttl);
    net.set(i, "{job}:redlock:owner", "0 other@host:1", ttl);
  }
}

std::size_t holders(FakeNetwork& net, const std::string& token) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < net.size(); ++i) n += net.value(i, "job") == token ? 1U : 0U;
  return n;
}

}  // namespace

TEST_CASE("acquire on healthy servers: held everywhere, fence 1, validity from the start") {
  FakeNetwork net(5);
  Redlock lock(net);
  auto r = lock.acquire(spec(), no_wait());
  REQUIRE(r.outcome == AcquireOutcome::Acquired);
  CHECK(r.fence == 1);
  CHECK(holders(net, "tok") == 5);
  CHECK(r.tally.yes >= 3);
  // One round trip (1ms): the counters agree, so the fence needs no second one.
  CHECK(r.validity == 10s - 1ms - 102ms);
  CHECK(r.valid_until == r.taken_at - 1ms + 10s - 102ms);
  // The servers not heard from by then still get the fence written, without anyone waiting.
  net.advance(5ms);
  for (std::size_t i = 0; i < 5; ++i) CHECK(net.value(i, "{job}:redlock:fence") == "1");
  CHECK(net.value(0, "{job}:redlock:owner").value().find(" tester") != std::string::npos);
}

TEST_CASE("the outcome is decided without waiting on frozen or slow servers") {
  FakeNetwork net(5, 100ms);
  net.servers[3].frozen = true;
  net.servers[4].latency = 80ms;
  Redlock lock(net);
  TimePoint start = net.now();
  auto r = lock.acquire(spec(), no_wait());
  REQUIRE(r.outcome == AcquireOutcome::Acquired);
  // Three answered after 1 ms: the outcome is known then; the frozen and the slow one cost only
  // the short grace in which a second address of an answered server would show itself.
  CHECK(net.now() - start == 1ms + kDuplicateGrace);
  CHECK(r.servers[3].result == Answer::NotWaitedFor);
}

TEST_CASE("three of five frozen: no quorum after the timeout, nothing left behind") {
  FakeNetwork net(5, 100ms);
  for (std::size_t i : Ids{0, 2, 4}) net.servers[i].frozen = true;
  Redlock lock(net);
  TimePoint start = net.now();
  auto r = lock.acquire(spec(), no_wait());
  CHECK(r.outcome == AcquireOutcome::NoQuorum);
  CHECK(net.now() - start <= 101ms);
  CHECK(holders(net, "tok") == 0);
  // The frozen servers got the release right behind the acquire: when they thaw, both run.
  for (std::size_t i : Ids{0, 2, 4}) net.thaw(i);
  CHECK(holders(net, "tok") == 0);
  CHECK(net.servers[0].log == std::vector<std::string>{"acquire", "release"});
}

TEST_CASE("a failed re-acquire gives the token's lock up, as any failed attempt does") {
  // Held with "tok" everywhere; three servers freeze; a re-acquire with "tok" gets no quorum. Its
  // caller is told it does not hold the lock (69): the release follows the acquire everywhere, so
  // that no server keeps the lock for a holder who was told it has none.
  FakeNetwork net(5, 100ms);
  for (std::size_t i = 0; i < 5; ++i) net.set(i, "job", "tok", 10s);
  for (std::size_t i : Ids{2, 3, 4}) net.servers[i].frozen = true;
  Redlock lock(net);
  auto r = lock.acquire(spec("tok"), no_wait());
  CHECK(r.outcome == AcquireOutcome::NoQuorum);
  CHECK(r.servers[0].result == Answer::Reacquired);
  for (std::size_t i : Ids{2, 3, 4}) net.thaw(i);
  net.advance(5ms);
  CHECK(holders(net, "tok") == 0);
  for (std::size_t i = 0; i < 5; ++i) CHECK(net.servers[i].log == std::vector<std::string>{"acquire", "release"});
}

TEST_CASE("busy: another holder on a quorum; our partial votes are released on every server") {
  FakeNetwork net(5);
  for (std::size_t i : Ids{0, 1, 2}) net.set(i, "job", "other", 3s);
  Redlock lock(net);
  auto r = lock.acquire(spec(), no_wait());
  CHECK(r.outcome == AcquireOutcome::Busy);
  net.advance(5ms);  // the releases are on their way to every server
  CHECK(holders(net, "tok") == 0);
  CHECK(holders(net, "other") == 3);
  // Only the servers that took it are released; the busy ones cannot hold our token.
  for (std::size_t i : Ids{0, 1, 2}) CHECK(net.servers[i].log == std::vector<std::string>{"acquire"});
  for (std::size_t i : Ids{3, 4}) CHECK(net.servers[i].log == std::vector<std::string>{"acquire", "release"});
  // What we gave back is announced as a retraction, not a holder's release: waiters do not all
  // jump in at once (they would split the vote again).
  for (std::size_t i : Ids{3, 4})
    CHECK(net.servers[i].announced == std::vector<std::string>{"acquired", "retracted 0"});
  REQUIRE(r.holder_free_in);
  CHECK(*r.holder_free_in <= 3s);
  CHECK(*r.holder_free_in >= 3s - 2ms);
  CHECK(r.servers[0].result == Answer::Busy);
}

TEST_CASE("no quorum is told apart from busy") {
  FakeNetwork net(5);
  net.servers[0].down = true;
  net.servers[1].down = true;
  net.servers[2].down = true;
  Redlock lock(net);
  auto r = lock.acquire(spec(), no_wait());
  CHECK(r.outcome == AcquireOutcome::NoQuorum);
  CHECK(r.message.find("3 of 5 servers failed (first: redis://fake:7000: connect: Connection refused)") !=
        std::string::npos);
  CHECK(r.servers[0].result_name() == "connect");

  FakeNetwork busy_and_down(5);
  busy_and_down.servers[0].down = true;
  for (std::size_t i : Ids{1, 2}) busy_and_down.set(i, "job", "other", 3s);
  Redlock lock2(busy_and_down);
  CHECK(lock2.acquire(spec(), no_wait()).outcome == AcquireOutcome::Busy);
}

TEST_CASE("a quorum that answers after the TTL is not a lock") {
  FakeNetwork net(3);
  for (auto& s : net.servers) s.latency = 60ms;
  Redlock lock(net);
  auto r = lock.acquire(spec("tok", 50ms), no_wait());
  CHECK(r.outcome == AcquireOutcome::NoQuorum);
  CHECK(r.message.find("validity") != std::string::npos);
  net.advance(200ms);
  CHECK(holders(net, "tok") == 0);
}

TEST_CASE("a lock left with no more than the validity asked for is given back") {
  // 60ms round trips and a TTL of 200ms: 200 - 60 - (2 + 2) = 136ms of validity at the decision.
  LockSpec s = spec("tok", 200ms);
  s.min_validity = 100ms;
  FakeNetwork enough(3);
  for (auto& server : enough.servers) server.latency = 60ms;
  auto taken = Redlock(enough).acquire(s, no_wait());
  CHECK(taken.outcome == AcquireOutcome::Acquired);
  CHECK(taken.validity > 100ms);

  s.min_validity = 136ms;
  FakeNetwork short_of_it(3);
  for (auto& server : short_of_it.servers) server.latency = 60ms;
  auto r = Redlock(short_of_it).acquire(s, no_wait());
  CHECK(r.outcome == AcquireOutcome::NoQuorum);
  CHECK(r.message == "a quorum answered with 136ms of the lock's validity left, not more than the 136ms needed");
  short_of_it.advance(500ms);
  CHECK(holders(short_of_it, "tok") == 0);
}

TEST_CASE("the validity asked for is checked again after the fence's second round trip") {
  // Counters 1, 5, 9 disagree: the fence is written back, one more 60ms round trip, which leaves
  // 200 - 120 - (2 + 2) = 76ms, less than the 100ms asked for (136ms at the decision was enough).
  LockSpec s = spec("tok", 200ms);
  s.min_validity = 100ms;
  FakeNetwork net(3);
  set_fences(net, {1, 5, 9});
  for (auto& server : net.servers) server.latency = 60ms;
  auto r = Redlock(net).acquire(s, no_wait());
  CHECK(r.outcome == AcquireOutcome::NoQuorum);
  CHECK(r.message == "a quorum answered with 76ms of the lock's validity left, not more than the 100ms needed");
  CHECK(net.servers[0].log == std::vector<std::string>{"acquire", "fence", "release"});
  net.advance(500ms);
  CHECK(holders(net, "tok") == 0);
}

TEST_CASE("a server configured twice is a configuration error, after cleaning up") {
  FakeNetwork net(3);
  net.servers[2].duplicate = true;
  net.servers[1].latency = 5ms;
  Redlock lock(net);
  // Servers 0 and 2 decide first: 0 says yes, 2 is a duplicate; then 1 says yes.
  CHECK_THROWS_AS(lock.acquire(spec(), no_wait()), Error);
  CHECK(holders(net, "tok") == 0);
}

TEST_CASE("a second name of a server is refused even when its lookup ends after the quorum said yes") {
  FakeNetwork net(3);
  net.servers[2].duplicate = true;
  net.servers[2].lookup = 30ms;  // a loaded resolver: long after 0 and 1 said yes (1 ms)
  Redlock lock(net);
  CHECK_THROWS_AS(lock.acquire(spec(), no_wait()), Error);
  CHECK(holders(net, "tok") == 0);
}

TEST_CASE("a lookup that never ends costs at most --timeout, and the lock is taken") {
  FakeNetwork net(3);
  net.servers[2].lookup = 10s;  // a resolver that hangs: the connect fails at --timeout
  Redlock lock(net);
  const TimePoint start = net.now();
  auto r = lock.acquire(spec(), no_wait());
  CHECK(r.outcome == AcquireOutcome::Acquired);
  CHECK(net.now() - start <= 100ms + 1ms);
  CHECK(holders(net, "tok") == 2);
}

TEST_CASE("re-acquire with the same token resets the TTL") {
  FakeNetwork net(3);
  Redlock lock(net);
  REQUIRE(lock.acquire(spec("mine", 1s), no_wait()).outcome == AcquireOutcome::Acquired);
  net.advance(900ms);
  auto r = lock.acquire(spec("mine", 1s), no_wait());
  REQUIRE(r.outcome == AcquireOutcome::Acquired);
  CHECK(r.servers[0].result == Answer::Reacquired);
  net.advance(900ms);
  CHECK(holders(net, "mine") == 3);
}

TEST_CASE("fences strictly increase from holder to holder, also when a minority forgets") {
  FakeNetwork net(5);
  Redlock lock(net);
  std::int64_t last = 0;
  for (int i = 0; i < 20; ++i) {
    auto r = lock.acquire(spec("t" + std::to_string(i)), no_wait());
    REQUIRE(r.outcome == AcquireOutcome::Acquired);
    CHECK(r.fence > last);
    last = r.fence;
    lock.release(spec().keys, "t" + std::to_string(i), false);
    if (i % 3 == 0) {
      // Two servers restart empty.
      net.servers[static_cast<std::size_t>(i) % 5].data.clear();
      net.servers[(static_cast<std::size_t>(i) + 1) % 5].data.clear();
    }
  }
  CHECK(last >= 20);
}

TEST_CASE("fence: agreeing counters need no second round; disagreeing ones are written back") {
  FakeNetwork net(5);
  Redlock lock(net);
  // Counters 7, 7, 3, 9, 0: after taking the lock they are 8, 8, 4, 10, 1 — no quorum agrees.
  set_fences(net, {7, 7, 3, 9, 0});
  auto r = lock.acquire(spec(), no_wait());
  REQUIRE(r.outcome == AcquireOutcome::Acquired);
  // Any fence stored on a quorum before is at most 7 (the third-highest counter).
  CHECK(r.fence > 7);
  std::size_t stored = 0;
  for (std::size_t i = 0; i < 5; ++i)
    stored += net.value(i, "{job}:redlock:fence") == std::to_string(r.fence) ? 1U : 0U;
  CHECK(stored >= 3);
  CHECK(net.servers[2].log == std::vector<std::string>{"acquire", "fence"});
  // The written-back fence is a vote like the acquire: on a Sentinel member it counts once a
  // replica has it, or a failover could forget a fence a holder was given.
  CHECK(net.servers[2].replicated == std::vector<bool>{true, true});
  lock.release(spec().keys, "tok", false);
  net.advance(5ms);
  // Now equal everywhere: the next holder's fence comes with its acquire, one round trip.
  auto next = lock.acquire(spec("tok2"), no_wait());
  CHECK(next.fence == r.fence + 1);
  CHECK(net.servers[2].log.back() == "acquire");
}

TEST_CASE("fence: a quorum that agrees sends its fence to a lagging server, as no vote") {
  FakeNetwork net(5);
  Redlock lock(net);
  set_fences(net, {7, 7, 7, 7, 2});
  auto r = lock.acquire(spec(), no_wait());
  REQUIRE(r.outcome == AcquireOutcome::Acquired);
  CHECK(r.fence == 8);
  net.advance(5ms);
  CHECK(net.value(4, "{job}:redlock:fence") == "8");
  // Nobody waits for the catch-up: a WAIT behind it would only hold the connection up.
  CHECK(net.servers[4].log == std::vector<std::string>{"acquire", "fence"});
  CHECK(net.servers[4].replicated == std::vector<bool>{true, false});
}

TEST_CASE("fence: two minorities wiped one after the other cannot make it go back") {
  FakeNetwork net(5);
  Redlock lock(net);
  auto latencies = [&](std::initializer_list<int> ms) {
    std::size_t i = 0;
    for (int m : ms) net.servers[i++].latency = std::chrono::milliseconds(m);
  };
  std::int64_t last = 0;
  for (int i = 0; i < 5; ++i) {
    last = lock.acquire(spec("warm" + std::to_string(i)), no_wait()).fence;
    lock.release(spec().keys, "warm" + std::to_string(i), false);
  }
  net.advance(10ms);
  // s0 and s1 restart empty; s2-s4 answer first and agree on the next fence.
  net.servers[0].data.clear();
  net.servers[1].data.clear();
  latencies({5, 5, 1, 1, 1});
  auto a = lock.acquire(spec("a"), no_wait());
  REQUIRE(a.outcome == AcquireOutcome::Acquired);
  CHECK(a.fence == last + 1);
  lock.release(spec().keys, "a", false);
  net.advance(10ms);
  // Then s2 and s3 restart empty, and s0-s2 answer first: they must still know fence a.
  net.servers[2].data.clear();
  net.servers[3].data.clear();
  latencies({1, 1, 1, 5, 5});
  auto b = lock.acquire(spec("b"), no_wait());
  REQUIRE(b.outcome == AcquireOutcome::Acquired);
  CHECK(b.fence > a.fence);
}

TEST_CASE("agreed fence needs NEEDED equal counters, and none above them") {
  CHECK(agreed_fence({5, 5, 5}, 3) == 5);
  CHECK(agreed_fence({6, 5, 6, 6}, 3) == 6);
  CHECK_FALSE(agreed_fence({5, 6, 5, 5}, 3));  // 6 may be all that is left of the last fence
  CHECK_FALSE(agreed_fence({5, 6, 7}, 3));
  CHECK_FALSE(agreed_fence({5, 5}, 3));
  CHECK_FALSE(agreed_fence({}, 1));
}

TEST_CASE("fence: a server that missed fences and one restarted empty cannot make it go back") {
  // s2 is unreachable while fences 1..7 are issued on s0 and s1; then s1 loses its data. s1 and
  // s2 now agree on 1, but s0's 8 is the trace of fence 7: the fence must be above it.
  FakeNetwork net(3);
  Redlock lock(net);
  net.servers[2].down = true;
  std::int64_t last = 0;
  for (int i = 0; i < 7; ++i) {
    auto r = lock.acquire(spec("t" + std::to_string(i)), no_wait());
    REQUIRE(r.outcome == AcquireOutcome::Acquired);
    last = r.fence;
    lock.release(spec().keys, "t" + std::to_string(i), false);
  }
  REQUIRE(last == 7);
  net.advance(10ms);
  net.servers[2].down = false;
  net.servers[1].data.clear();
  auto r = lock.acquire(spec("next"), no_wait());
  REQUIRE(r.outcome == AcquireOutcome::Acquired);
  CHECK(r.fence > last);
}

namespace {

constexpr std::int64_t kThirtyDaysMs = 30LL * 24 * 3600 * 1000;  // the default --fence-ttl

// Server clocks near 2026, OFFSETS_S seconds apart from one another.
void set_clocks(FakeNetwork& net, std::initializer_list<std::int64_t> offsets_s) {
  std::size_t i = 0;
  for (std::int64_t off : offsets_s) net.servers[i++].wall = std::chrono::seconds(1790000000 + off);
}

std::int64_t take_and_give_back(Redlock& lock, FakeNetwork& net, const LockSpec& s) {
  auto r = lock.acquire(s, no_wait());
  REQUIRE(r.outcome == AcquireOutcome::Acquired);
  lock.release(s.keys, s.token, false);
  net.advance(10ms);
  return r.fence;
}

}  // namespace

TEST_CASE("fence: a new counter starts at its server's clock, and servers on the same second agree") {
  FakeNetwork net(3);
  set_clocks(net, {0, 0, 0});
  Redlock lock(net);
  const std::int64_t first = take_and_give_back(lock, net, spec());
  CHECK(first >= 1790000000LL * 1000000);
  CHECK(first < (1LL << 53));                                                   // a Lua number holds it exactly
  CHECK(net.servers[0].log == std::vector<std::string>{"acquire", "release"});  // one round trip
  CHECK(take_and_give_back(lock, net, spec("t2")) == first + 1);
  // Every acquisition sets the counter's expiry anew.
  for (std::size_t i = 0; i < 3; ++i) CHECK(net.ttl_ms(i, "{job}:redlock:fence") > kThirtyDaysMs - 1000);
}

TEST_CASE("fence: counters that expired start again above every earlier fence, clocks apart or not") {
  // s0's clock is 20 minutes ahead of s1's and s2's: the fences it seeded are ahead of their clocks.
  FakeNetwork net(3);
  set_clocks(net, {1200, 0, 3});
  Redlock lock(net);
  LockSpec s = spec();
  s.fence_ttl = 1h;
  std::int64_t last = 0;
  for (int i = 0; i < 5; ++i) {
    s.token = "t" + std::to_string(i);
    std::int64_t fence = take_and_give_back(lock, net, s);
    CHECK(fence > last);
    last = fence;
  }
  for (std::size_t i = 0; i < 3; ++i) CHECK(net.ttl_ms(i, "{job}:redlock:fence") > 3599000);
  net.advance(1h);
  for (std::size_t i = 0; i < 3; ++i) CHECK_FALSE(net.value(i, "{job}:redlock:fence").has_value());
  // Now s0 is out: s1 and s2 start again from their own clocks, behind s0's, but an hour later.
  net.servers[0].down = true;
  s.token = "after";
  CHECK(take_and_give_back(lock, net, s) > last);
}

TEST_CASE("fence: a counter of an earlier version (no expiry) goes on from where it was, and gets one") {
  FakeNetwork net(3);
  set_clocks(net, {0, 0, 0});
  for (std::size_t i = 0; i < 3; ++i) net.set(i, "{job}:redlock:fence", "7", 100000h);
  Redlock lock(net);
  CHECK(take_and_give_back(lock, net, spec()) == 8);
  for (std::size_t i = 0; i < 3; ++i) CHECK(net.ttl_ms(i, "{job}:redlock:fence") > kThirtyDaysMs - 1000);
}

TEST_CASE("fence: where TIME is refused the counter counts from 1 and never expires") {
  FakeNetwork net(3);
  set_clocks(net, {0, 0, 0});
  net.servers[2].wall.reset();
  Redlock lock(net);
  const std::int64_t first = take_and_give_back(lock, net, spec());
  CHECK(first >= 1790000000LL * 1000000);
  // s2 said 1; the servers that seeded from their clocks say more: the highest is written back.
  CHECK(net.value(2, "{job}:redlock:fence") == std::to_string(first));
  CHECK(net.ttl_ms(2, "{job}:redlock:fence") == -1);
  CHECK(net.ttl_ms(0, "{job}:redlock:fence") > 0);
}

TEST_CASE("waiting: no retry before the holder could be free, then it is taken at once") {
  FakeNetwork net(5);
  held_by_redlock(net, 2s);
  Redlock lock(net);
  TimePoint start = net.now();
  auto r = lock.acquire(spec(), wait_for(net, 10s));
  REQUIRE(r.outcome == AcquireOutcome::Acquired);
  CHECK(net.now() - start >= 2s);
  CHECK(net.now() - start <= 2s + 20ms);
  // First attempt, one right after subscribing, one at expiry.
  CHECK(r.attempts <= 4);
}

TEST_CASE("waiting without wake-ups polls every retry delay") {
  FakeNetwork net(5);
  net.refuse_subscribe = true;
  for (std::size_t i = 0; i < 5; ++i) net.set(i, "job", "other", 2s);
  Redlock lock(net);
  WaitOptions w = wait_for(net, 10s);
  w.retry_delay = 100ms;
  auto r = lock.acquire(spec(), w);
  REQUIRE(r.outcome == AcquireOutcome::Acquired);
  CHECK(r.attempts >= 10);
  CHECK(r.attempts <= 45);
}

TEST_CASE("a release announced on the channel wakes the waiter at once") {
  FakeNetwork net(5);
  for (std::size_t i = 0; i < 5; ++i) net.set(i, "job", "other", 30s);
  Redlock lock(net);
  TimePoint released_at = net.now() + 500ms;
  net.at(released_at, [&] { net.release_everywhere("job", "{job}:redlock:wake"); });
  auto r = lock.acquire(spec(), wait_for(net, 60s));
  REQUIRE(r.outcome == AcquireOutcome::Acquired);
  CHECK(net.now() - released_at <= 10ms);
  CHECK(net.unsubscribes == 1);  // the wait is over: no subscriptions left open
  CHECK(net.subscribed() == 0);
}

TEST_CASE("a redlock holder gone without a word (killed) is noticed by the fallback poll") {
  FakeNetwork net(5);
  held_by_redlock(net, 60s);
  Redlock lock(net);
  TimePoint released_at = net.now() + 500ms;
  net.at(released_at, [&] { net.release_everywhere("job", ""); });
  TimePoint start = net.now();
  auto r = lock.acquire(spec(), wait_for(net, 60s));
  REQUIRE(r.outcome == AcquireOutcome::Acquired);
  CHECK(net.now() - start >= 3s);  // 20 x 200ms x 0.75
  CHECK(net.now() - start <= 5s + 10ms);
}

TEST_CASE("a holder without an owner record (another client) is polled for: in within a second of its release") {
  for (Duration release_after : std::initializer_list<Duration>{300ms, 1500ms, 7s}) {
    CAPTURE(release_after.count());
    FakeNetwork net(5);
    for (std::size_t i = 0; i < 5; ++i) net.set(i, "job", "other", 60s);
    Redlock lock(net);
    TimePoint released_at = net.now() + release_after;
    net.at(released_at, [&] { net.release_everywhere("job", ""); });
    auto r = lock.acquire(spec(), wait_for(net, 60s));
    REQUIRE(r.outcome == AcquireOutcome::Acquired);
    CHECK(net.now() - released_at <= 1s);
    // Backing off to about one attempt a second: not one per retry delay (35 in 7s).
    if (release_after == 7s) CHECK(r.attempts <= 18);
  }
}

TEST_CASE("extend puts the lock back where a server lost it, and says so") {
  FakeNetwork net(3);
  for (std::size_t i = 0; i < 3; ++i) net.set(i, "job", "tok", 10s);
  net.servers[1].data.clear();
  Redlock lock(net);
  auto r = lock.extend(spec().keys, "tok", 10s, 0.01);
  CHECK(r.extended);
  CHECK(r.healed == 1);
  CHECK(r.servers[1].result == Answer::Healed);
  CHECK(holders(net, "tok") == 3);
  // Not without a quorum of its own token: another holder, or nothing, keeps what it has.
  net.servers[0].data.clear();
  net.set(1, "job", "other", 10s);
  auto lost = lock.extend(spec().keys, "tok", 10s, 0.01);
  CHECK_FALSE(lost.extended);
  CHECK(lost.healed == 0);
  CHECK_FALSE(net.value(0, "job"));
  CHECK(net.value(1, "job") == "other");
}

TEST_CASE("a wait outlasts servers frozen for a while: no quorum is not yet") {
  FakeNetwork net(5);
  for (std::size_t i : Ids{0, 2, 4}) net.servers[i].frozen = true;
  Redlock lock(net);
  TimePoint thawed_at = net.now() + 2s;
  net.at(thawed_at, [&] {
    for (std::size_t i : Ids{0, 2, 4}) net.thaw(i);
  });
  std::size_t retries_short = 0;
  WaitOptions w = wait_for(net, 10s);
  w.on_retry = [&](const AcquireResult& r, TimePoint) { retries_short += r.outcome == AcquireOutcome::NoQuorum; };
  auto r = lock.acquire(spec(), w);
  REQUIRE(r.outcome == AcquireOutcome::Acquired);
  CHECK(net.now() - thawed_at <= 400ms);  // a jittered retry delay (and a timeout) after the thaw
  CHECK(retries_short >= 5);
  CHECK(holders(net, "tok") == 5);
}

TEST_CASE("a wait that ends short of a quorum is no quorum (69), at its deadline, not before") {
  FakeNetwork net(3);
  for (std::size_t i : Ids{1, 2}) net.servers[i].down = true;
  Redlock lock(net);
  TimePoint start = net.now();
  auto r = lock.acquire(spec(), wait_for(net, 2s));
  const Duration waited = net.now() - start;
  CHECK(r.outcome == AcquireOutcome::NoQuorum);
  CHECK(r.attempts >= 5);
  CHECK(waited >= 2s);
  CHECK(waited <= 2s + 10ms);
  CHECK(r.message.find("still no quorum when the wait ended") != std::string::npos);
  CHECK(holders(net, "tok") == 0);
  // One attempt (-n): no quorum at once.
  start = net.now();
  CHECK(lock.acquire(spec(), no_wait()).outcome == AcquireOutcome::NoQuorum);
  CHECK(net.now() - start <= 5ms);
}

TEST_CASE("the wait gives up at its deadline") {
  FakeNetwork net(5);
  for (std::size_t i = 0; i < 5; ++i) net.set(i, "job", "other", 30s);
  Redlock lock(net);
  TimePoint start = net.now();
  auto r = lock.acquire(spec(), wait_for(net, 300ms));
  CHECK(r.outcome == AcquireOutcome::TimedOut);
  CHECK(net.now() - start >= 300ms);
  CHECK(net.now() - start <= 310ms);
  CHECK(holders(net, "tok") == 0);
}

TEST_CASE("the wait gives up at its deadline however often the wake-ups move the plan") {
  FakeNetwork net(5);
  for (std::size_t i = 0; i < 5; ++i) net.set(i, "job", "other", 60s);
  Redlock lock(net);
  // Holders that come and go without a word on their way out (killed, say): every "acquired"
  // moves the plan to the fallback poll or the new holder's expiry, both past the deadline.
  for (int k = 1; k <= 75; ++k) net.at(net.now() + k * 400ms, [&net] { net.announce_everywhere("acquired"); });
  TimePoint start = net.now();
  auto r = lock.acquire(spec(), wait_for(net, 1s));
  CHECK(r.outcome == AcquireOutcome::TimedOut);
  CHECK(net.now() - start >= 1s);
  CHECK(net.now() - start <= 1s + 10ms);
  CHECK(holders(net, "tok") == 0);
}

TEST_CASE("the wait stops when interrupted") {
  FakeNetwork net(5);
  for (std::size_t i = 0; i < 5; ++i) net.set(i, "job", "other", 30s);
  Redlock lock(net);
  WaitOptions w = wait_for(net, 60s);
  TimePoint stop_at = net.now() + 1s;
  bool stop = false;
  net.at(stop_at, [&] { stop = true; });
  w.interrupted = [&] { return stop; };
  auto r = lock.acquire(spec(), w);
  CHECK(r.outcome == AcquireOutcome::Interrupted);
  CHECK(net.now() - stop_at <= 1ms);
}

TEST_CASE("extend: a quorum resets the expiry; a wrong token is not held; no quorum is told apart") {
  FakeNetwork net(5);
  Redlock lock(net);
  REQUIRE(lock.acquire(spec("tok", 1s), no_wait()).outcome == AcquireOutcome::Acquired);
  auto ok = lock.extend(spec().keys, "tok", 5s, 0.01);
  CHECK(ok.extended);
  net.advance(3s);
  CHECK(holders(net, "tok") == 5);

  auto wrong = lock.extend(spec().keys, "nope", 5s, 0.01);
  CHECK_FALSE(wrong.extended);
  CHECK_FALSE(wrong.no_quorum);
  CHECK(wrong.servers[0].result == Answer::NotHeld);

  for (std::size_t i : Ids{0, 1, 2}) net.servers[i].down = true;
  auto down = lock.extend(spec().keys, "tok", 5s, 0.01);
  CHECK_FALSE(down.extended);
  CHECK(down.no_quorum);
}

TEST_CASE("release: compare-and-delete, --force, and not held") {
  FakeNetwork net(5);
  Redlock lock(net);
  REQUIRE(lock.acquire(spec(), no_wait()).outcome == AcquireOutcome::Acquired);
  auto wrong = lock.release(spec().keys, "nope", false);
  CHECK_FALSE(wrong.released);
  CHECK(wrong.deleted == 0);
  CHECK(holders(net, "tok") == 5);

  auto r = lock.release(spec().keys, "tok", false);
  CHECK(r.released);
  CHECK(r.deleted == 5);
  CHECK(holders(net, "tok") == 0);

  for (std::size_t i = 0; i < 5; ++i) net.set(i, "job", "stale", 30s);
  auto forced = lock.release(spec().keys, "", true);
  CHECK(forced.released);
  CHECK(forced.deleted == 5);
  auto again = lock.release(spec().keys, "", true);
  CHECK(again.released);  // free already: the operator's intent holds
  CHECK(again.deleted == 0);
}

TEST_CASE("release --force deletes only locks: data on any server refuses it everywhere") {
  FakeNetwork net(3);
  Redlock lock(net);
  using Entry = FakeNetwork::Entry;
  // A lock on two servers, application data on the third: nothing is deleted anywhere.
  for (const Entry& data : {Entry{"", "hash", kNever}, Entry{"app data", "string", kNever}}) {
    for (std::size_t i : Ids{0, 1}) net.set(i, "job", "stale", 30s);
    net.servers[2].data["job"] = data;
    auto refused = lock.release(spec().keys, "", true);
    CHECK_FALSE(refused.released);
    CHECK(refused.not_a_lock);
    CHECK_FALSE(refused.no_quorum);
    CHECK(refused.deleted == 0);
    const std::string what = data.type == "hash" ? "a hash" : "a string without an expiry";
    CHECK(refused.message == "not a lock on redis://fake:7002 (" + what + "); nothing deleted");
    CHECK(refused.servers[2].result == Answer::Foreign);
    CHECK(refused.servers[0].result == Answer::Held);
    CHECK(holders(net, "stale") == 2);
    CHECK(net.servers[2].data.at("job").type == data.type);
    for (const auto& s : net.servers) CHECK(std::count(s.log.begin(), s.log.end(), "release") == 0);
  }
  // A plain lock, anyone's, is still deleted.
  net.set(2, "job", "stale", 30s);
  auto forced = lock.release(spec().keys, "", true);
  CHECK(forced.released);
  CHECK(forced.deleted == 3);
}

TEST_CASE("release --force: data written after the check, or on a server that missed it, is left alone") {
  FakeNetwork net(3, 100ms);
  Redlock lock(net);
  for (std::size_t i : Ids{0, 1, 2}) net.set(i, "job", "stale", 30s);
  // Between the check (answered at 1ms) and the delete (run at 1.5ms), server 2's key becomes a hash.
  net.at(net.now() + 1200us, [&] { net.servers[2].data["job"] = FakeNetwork::Entry{"", "hash", kNever}; });
  auto raced = lock.release(spec().keys, "", true);
  CHECK_FALSE(raced.released);
  CHECK(raced.not_a_lock);
  CHECK(raced.deleted == 2);
  CHECK(raced.servers[2].result == Answer::Foreign);
  CHECK(raced.message ==
        "not a lock on redis://fake:7002 (written after the check), left alone; the lock was deleted on 2 of 3 "
        "servers");
  CHECK(net.servers[2].data.at("job").type == "hash");

  // A frozen server misses the check; when it thaws, its queued release leaves its hash alone.
  for (std::size_t i : Ids{0, 1}) net.set(i, "job", "stale", 30s);
  net.servers[2].frozen = true;
  auto partial = lock.release(spec().keys, "", true);
  CHECK(partial.released);
  CHECK(partial.deleted == 2);
  net.thaw(2);
  CHECK(net.servers[2].data.at("job").type == "hash");
}

TEST_CASE("release: every server's answer, or only the outcome") {
  FakeNetwork net(5, 100ms);
  Redlock lock(net);
  REQUIRE(lock.acquire(spec(), no_wait()).outcome == AcquireOutcome::Acquired);
  net.servers[3].frozen = true;
  TimePoint start = net.now();
  auto every = lock.release(spec().keys, "tok", false);
  CHECK(every.released);
  CHECK(net.now() - start == 100ms);  // the frozen one's --timeout
  CHECK(every.servers[3].result_name() == "timeout");

  net.thaw(3);  // runs the release it was sent: nothing left
  REQUIRE(lock.acquire(spec(), no_wait()).outcome == AcquireOutcome::Acquired);
  net.servers[3].frozen = true;
  start = net.now();
  auto outcome = lock.release(spec().keys, "tok", false, Redlock::ReleaseWait::Outcome);
  CHECK(outcome.released);
  CHECK(net.now() - start == 1ms);  // three said released after 1 ms
  CHECK(outcome.tally.yes >= 3);
  CHECK(holders(net, "tok") == 1);  // the frozen one, whose release waits in its socket
  net.thaw(3);
  CHECK(holders(net, "tok") == 0);
}

TEST_CASE("release and extend short of a quorum name the servers that failed, not only the token") {
  FakeNetwork net(5);
  Redlock lock(net);
  for (std::size_t i : Ids{0, 1}) net.set(i, "job", "tok", 30s);
  net.set(2, "job", "other", 30s);
  for (std::size_t i : Ids{3, 4}) net.servers[i].down = true;
  auto e = lock.extend(spec().keys, "tok", 5s, 0.01);
  CHECK_FALSE(e.extended);
  CHECK(e.message ==
        "not held with this token (extended on 2 of 5 servers; 2 of 5 servers failed (first: redis://fake:7003: "
        "connect: Connection refused))");
  auto r = lock.release(spec().keys, "tok", false);
  CHECK_FALSE(r.released);
  CHECK_FALSE(r.no_quorum);
  CHECK(r.message ==
        "not held with this token (deleted on 2 of 5 servers; 2 of 5 servers failed (first: redis://fake:7003: "
        "connect: Connection refused))");
  for (std::size_t i : Ids{3, 4}) net.servers[i].down = false;
  CHECK(lock.release(spec().keys, "nope", false).message == "not held with this token (deleted on 0 of 5 servers)");
}

TEST_CASE("a replica never counts as a vote: not in acquire, extend, release or status") {
  FakeNetwork net(3);
  Redlock lock(net);
  net.servers[2].role = "replica";  // the fake takes its writes, as a writable replica does
  auto acquired = lock.acquire(spec(), no_wait());
  REQUIRE(acquired.outcome == AcquireOutcome::Acquired);
  CHECK(acquired.tally.yes == 2);
  CHECK(acquired.servers[2].result_name() == "replica");
  CHECK(acquired.servers[2].role == "replica");
  CHECK(acquired.servers[0].role == "master");
  auto status = lock.status(spec().keys);
  CHECK(status.state == LockState::Held);
  CHECK(status.tally.yes == 2);
  CHECK(status.tally.failed == 1);
  CHECK_FALSE(status.servers[2].value);
  CHECK(lock.extend(spec().keys, "tok", 10s, 0.01).tally.yes == 2);
  CHECK(lock.release(spec().keys, "tok", false).deleted == 2);

  // With one master down, the replica's yes would have made a quorum.
  net.servers[1].down = true;
  auto alone = lock.acquire(spec(), no_wait());
  CHECK(alone.outcome == AcquireOutcome::NoQuorum);
  CHECK(alone.tally.yes == 1);
  CHECK(alone.message.find("redis://fake:7001: connect") != std::string::npos);
}

TEST_CASE("status: held, free, partial and foreign") {
  FakeNetwork net(5);
  Redlock lock(net);
  CHECK(lock.status(spec().keys).state == LockState::Free);
  REQUIRE(lock.acquire(spec(), no_wait()).outcome == AcquireOutcome::Acquired);
  auto held = lock.status(spec().keys);
  CHECK(held.state == LockState::Held);
  CHECK(held.token == "tok");
  CHECK(held.owner == "tester");
  CHECK(held.since_unix_ms);
  CHECK(held.fence == 1);
  CHECK(held.ttl_ms > 9000);

  lock.release(spec().keys, "tok", false);
  net.set(0, "job", "a", 5s);
  net.set(1, "job", "a", 5s);
  net.servers[2].data["job"] = FakeNetwork::Entry{"", "hash", kNever};
  auto partial = lock.status(spec().keys);
  CHECK(partial.state == LockState::Partial);
  CHECK(partial.servers[2].result == Answer::Foreign);
  CHECK(partial.servers[2].type == "hash");

  for (std::size_t i : Ids{2, 3, 4}) net.servers[i].frozen = true;
  CHECK(lock.status(spec().keys).no_quorum);
}

TEST_CASE("busy: the answers not waited for are no failure, and the holder is named") {
  FakeNetwork net(5);
  held_by_redlock(net, 20s);
  for (std::size_t i : Ids{3, 4}) net.servers[i].latency = 50ms;
  Redlock lock(net);
  auto r = lock.acquire(spec(), no_wait());
  REQUIRE(r.outcome == AcquireOutcome::Busy);
  CHECK(r.message == "held by other@host:1 for another 20s (busy on 3 of 5 servers; 2 not waited for)");
  for (std::size_t i : Ids{3, 4}) {
    CHECK(r.servers[i].result == Answer::NotWaitedFor);
    CHECK(!r.servers[i].waited_for());
  }
  REQUIRE(r.holder);
  CHECK(r.holder->owner == "other@host:1");
  CHECK(r.holder->ttl == 19999ms);  // the script ran half a round trip in
}

TEST_CASE("busy: a holder without an owner record is held elsewhere, owner unknown") {
  FakeNetwork net(3);
  for (std::size_t i = 0; i < 3; ++i) net.set(i, "job", "theirs", 5s);
  Redlock lock(net);
  auto r = lock.acquire(spec(), no_wait());
  REQUIRE(r.holder);
  CHECK(!r.holder->owner);
  CHECK(r.message.rfind("held elsewhere for another 5s (busy on ", 0) == 0);
}

TEST_CASE("owner records: since, the TTL taken with, and who; earlier forms read as far as they go") {
  auto r = parse_owner_record(make_owner_record(1700000000000, 60000, "alice@host:1 (job 7)"));
  CHECK(r.since_unix_ms == 1700000000000);
  CHECK(r.ttl_ms == 60000);
  CHECK(r.owner == "alice@host:1 (job 7)");
  r = parse_owner_record("1700000000000 bob");
  CHECK(r.since_unix_ms == 1700000000000);
  CHECK(!r.ttl_ms);
  CHECK(r.owner == "bob");
  r = parse_owner_record("someone");
  CHECK(!r.since_unix_ms);
  CHECK(r.owner == "someone");
}

TEST_CASE("extend without a TTL keeps the TTL the lock was taken with, or a longer remaining one") {
  FakeNetwork net(3);
  Redlock lock(net);
  REQUIRE(lock.acquire(spec("tok", 60s), no_wait()).outcome == AcquireOutcome::Acquired);
  net.advance(10s);
  auto r = lock.extend(derive_keys("job"), "tok", 30s, 0.01, {}, true);
  REQUIRE(r.extended);
  CHECK(r.ttl == 60s);
  CHECK(r.validity > 59s);
  // Explicit: the TTL asked for, shorter or not.
  r = lock.extend(derive_keys("job"), "tok", 5s, 0.01);
  CHECK(r.ttl == 5s);
  // No owner record (another client's lock): the fallback, or what is left if longer.
  for (std::size_t i = 0; i < 3; ++i) net.set(i, "job", "T", 100s);
  r = lock.extend(derive_keys("job"), "T", 30s, 0.01, {}, true);
  CHECK(r.ttl > 99s);
}

TEST_CASE("status: fewer than a quorum answered is unknown, whatever the others said") {
  FakeNetwork net(5);
  held_by_redlock(net, 20s);
  for (std::size_t i : Ids{2, 3, 4}) net.servers[i].down = true;
  Redlock lock(net);
  auto s = lock.status(derive_keys("job"));
  CHECK(s.no_quorum);
  CHECK(s.state == LockState::Unknown);
  CHECK(state_name(s.state) == "unknown");
  for (std::size_t i : Ids{0, 1}) net.servers[i].down = true;
  CHECK(lock.status(derive_keys("job")).state == LockState::Unknown);
}

TEST_CASE("a waiter joins the lock's queue while it waits and leaves it on every way out") {
  FakeNetwork net(3);
  Redlock lock(net);
  auto queue_of = [&](std::size_t i) { return net.servers[i].queues["{job}:redlock:waiters"]; };
  SUBCASE("a single attempt does not queue") {
    held_by_redlock(net, 5s);
    CHECK(lock.acquire(spec(), no_wait()).outcome == AcquireOutcome::Busy);
    for (std::size_t i = 0; i < 3; ++i) CHECK(queue_of(i).empty());
  }
  SUBCASE("queued while busy; gone from every queue once it took the lock") {
    held_by_redlock(net, 5s);
    std::vector<std::string> seen;
    net.at(net.now() + 500ms, [&] {
      seen = queue_of(0);
      net.release_everywhere("job", "{job}:redlock:wake");
    });
    auto r = lock.acquire(spec(), wait_for(net, 10s));
    REQUIRE(r.outcome == AcquireOutcome::Acquired);
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].size() == 16);
    net.advance(10ms);
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(queue_of(i).empty());
      CHECK(!net.value(i, "{job}:redlock:waiter:" + seen[0]));
    }
  }
  SUBCASE("given up at its deadline: its place is given back, not left to lapse") {
    held_by_redlock(net, 30s);
    auto r = lock.acquire(spec(), wait_for(net, 2s));
    CHECK(r.outcome == AcquireOutcome::TimedOut);
    net.advance(10ms);
    for (std::size_t i = 0; i < 3; ++i) CHECK(queue_of(i).empty());
  }
  SUBCASE("its heartbeat keeps it alive past the heartbeat's expiry") {
    held_by_redlock(net, 30s);
    std::string id;
    bool alive = false;
    net.at(net.now() + 8s, [&] {
      id = queue_of(0).at(0);
      alive = net.value(0, "{job}:redlock:waiter:" + id).has_value();
    });
    lock.acquire(spec(), wait_for(net, 9s));
    CHECK(alive);
  }
}

TEST_CASE("a waiter asks to be handed the lock only where no member fails over") {
  // The flags of every acquire script a waiter sent ("TTL FENCE_TTL WAITER HEARTBEAT FLAGS").
  auto waiter_flags = [](FakeNetwork& net) {
    std::vector<std::string> flags;
    for (std::size_t k = 0; k < net.servers[0].log.size(); ++k) {
      if (net.servers[0].log[k] != "acquire") continue;
      const std::string& words = net.servers[0].argvs[k].at(5);
      if (std::count(words.begin(), words.end(), ' ') >= 3) flags.push_back(words.substr(words.rfind(' ') + 1));
    }
    return flags;
  };
  for (const bool sentinel : {false, true}) {
    CAPTURE(sentinel);
    FakeNetwork net(3);
    net.servers[2].sentinel = sentinel;
    held_by_redlock(net, 20s);
    Redlock lock(net);
    CHECK(lock.acquire(spec(), wait_for(net, 1s)).outcome == AcquireOutcome::TimedOut);
    const auto flags = waiter_flags(net);
    REQUIRE(!flags.empty());
    for (const auto& f : flags) CHECK((f.find('g') != std::string::npos) == !sentinel);
  }
}

TEST_CASE("a waiter keeps its place where an attempt without a quorum takes the lock") {
  // A release that reached one server alone (another client holds the lock on the four others, a
  // quorum) names the waiter there: each of its attempts takes that server alone and gives it back.
  FakeNetwork net(5);
  Redlock lock(net);
  held_by_redlock(net, 20s);
  auto queue_of = [&](std::size_t i) { return net.servers[i].queues["{job}:redlock:waiters"]; };
  std::string id;
  std::vector<std::string> queued;
  bool alive = false;
  net.at(net.now() + 500ms, [&] {
    id = queue_of(0).at(0);
    net.servers[0].data.erase("job");
    net.servers[0].data.erase("{job}:redlock:owner");
    net.announce(0, "released 0 " + id);
  });
  net.at(net.now() + 2500ms, [&] {
    queued = queue_of(0);
    alive = net.value(0, "{job}:redlock:waiter:" + id).has_value();
  });
  auto r = lock.acquire(spec(), wait_for(net, 3s));
  CHECK(r.outcome == AcquireOutcome::TimedOut);
  // It took server 0 (and gave it back) more than once.
  CHECK(std::count(net.servers[0].log.begin(), net.servers[0].log.end(), "release") >= 2);
  CHECK(queued == std::vector<std::string>{id});
  CHECK(alive);
  // Its acquire over, it left every queue.
  net.advance(10ms);
  for (std::size_t i = 0; i < 5; ++i) CHECK(queue_of(i).empty());
}

TEST_CASE("a release names the queue's first two live waiters, dropping the dead ones") {
  FakeNetwork net(1);
  Redlock lock(net);
  auto& queue = net.servers[0].queues["{job}:redlock:waiters"];
  queue = {"dead", "a1", "b2", "c3"};
  net.set(0, "{job}:redlock:waiter:a1", "1", 3s);
  net.set(0, "{job}:redlock:waiter:b2", "1", 3s);
  net.set(0, "{job}:redlock:waiter:c3", "1", 3s);
  REQUIRE(lock.acquire(spec(), no_wait()).outcome == AcquireOutcome::Acquired);
  CHECK(lock.release(derive_keys("job"), "tok", false).released);
  CHECK(net.servers[0].announced.back() == "released 0 a1 b2");
  CHECK(queue == std::vector<std::string>{"a1", "b2", "c3"});
}
