#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "core/net/fanout.hpp"
#include "fake_network.hpp"

using namespace redlock;
using namespace redlock::test;
using namespace std::chrono_literals;

namespace {

// Server I answers "A", "B" and "C" with 10 * I, 10 * I + 1 and 10 * I + 2.
void answer_letters(FakeNetwork& net) {
  for (std::size_t i = 0; i < net.size(); ++i) {
    for (std::int64_t k = 0; k < 3; ++k) {
      Result r;
      r.reply = Reply::number(10 * static_cast<std::int64_t>(i) + k);
      net.servers[i].answers[std::string(1, static_cast<char>('A' + k))] = r;
    }
  }
}

std::vector<Request> letters(std::size_t count) {
  std::vector<Request> requests;
  for (std::size_t k = 0; k < count; ++k) requests.push_back(Request::command({std::string(1, char('A' + k))}));
  return requests;
}

// The fake network, with every answer handed over as if its round trip took no time: a transport
// that reads a reply in the same turn as it wrote the request measures that.
class ZeroLatency final : public Network {
 public:
  explicit ZeroLatency(FakeNetwork& net) : net_(net) {}
  std::size_t size() const override { return net_.size(); }
  TimePoint now() const override { return net_.now(); }
  void send(std::size_t server, Request request, ResultCallback done) override {
    net_.send(server, std::move(request), [done = std::move(done)](Result r) {
      r.latency = Duration::zero();
      done(std::move(r));
    });
  }
  void run_until(const std::function<bool()>& done, TimePoint deadline) override { net_.run_until(done, deadline); }
  void flush(TimePoint deadline) override { net_.flush(deadline); }
  void subscribe(const std::string& channel, ChannelCallback on) override { net_.subscribe(channel, std::move(on)); }
  std::size_t subscribed() const override { return net_.subscribed(); }
  void unsubscribe() override { net_.unsubscribe(); }
  std::string describe(std::size_t server) const override { return net_.describe(server); }
  bool resolving() const override { return net_.resolving(); }

 private:
  FakeNetwork& net_;
};

}  // namespace

TEST_CASE("a fanout sends each server its own requests, in order, and files each answer by server and request") {
  FakeNetwork net(3);
  answer_letters(net);
  // Server 1 has two requests, the others three: the third answer of server 1 stays empty.
  Fanout fanout(net, [](std::size_t i) { return letters(i == 1 ? 2 : 3); });
  CHECK(net.requests_sent() == 8);
  CHECK(fanout.received() == 0);
  CHECK_FALSE(fanout.complete());
  fanout.wait();
  CHECK(fanout.complete());
  CHECK(fanout.received() == 3);
  CHECK(net.servers[0].log == std::vector<std::string>{"A", "B", "C"});
  CHECK(net.servers[1].log == std::vector<std::string>{"A", "B"});
  CHECK(net.servers[2].log == std::vector<std::string>{"A", "B", "C"});
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t k = 0; k < 3; ++k) {
      CAPTURE(i);
      CAPTURE(k);
      if (i == 1 && k == 2) {
        CHECK_FALSE(fanout.result(i, k).has_value());
        continue;
      }
      REQUIRE(fanout.result(i, k).has_value());
      CHECK(fanout.result(i, k)->reply.integer == static_cast<std::int64_t>(10 * i + k));
      CHECK(fanout.answers(k)[i]->reply.integer == fanout.result(i, k)->reply.integer);
    }
  }
  CHECK_FALSE(fanout.result(0, 3).has_value());  // beyond every server's list
}

TEST_CASE("servers a fanout does not ask get nothing and count as answered, with nothing") {
  FakeNetwork net(4);
  answer_letters(net);
  // Server 3 is asked with an empty list: answered at once too.
  Fanout fanout(net, std::vector<bool>{true, false, true, true}, [](std::size_t i) { return letters(i == 3 ? 0 : 1); });
  CHECK(net.requests_sent() == 2);
  CHECK(fanout.received() == 2);
  CHECK_FALSE(fanout.complete());
  fanout.wait();
  CHECK(fanout.complete());
  CHECK(net.servers[1].log.empty());
  CHECK(net.servers[3].log.empty());
  CHECK_FALSE(fanout.result(1, 0).has_value());
  CHECK_FALSE(fanout.answers(0)[3].has_value());
  CHECK(fanout.answers(0).size() == 4);
  CHECK(fanout.result(2, 0)->reply.integer == 20);

  Fanout nobody(net, std::vector<bool>(4, false), [](std::size_t) { return letters(1); });
  CHECK(nobody.complete());
  CHECK(nobody.answers(0).size() == 4);  // one empty answer per server, even with no request at all
  CHECK(net.requests_sent() == 2);
}

TEST_CASE("a server counts as answered once every request sent to it is") {
  FakeNetwork net(2);
  answer_letters(net);
  net.servers[1].latency = 50ms;
  Fanout fanout(net, [](std::size_t) { return letters(2); });
  net.advance(10ms);
  CHECK(fanout.received() == 1);
  CHECK(fanout.result(0, 1).has_value());
  CHECK_FALSE(fanout.result(1, 0).has_value());
  CHECK_FALSE(fanout.complete());
  net.advance(50ms);
  CHECK(fanout.complete());
  CHECK(fanout.result(1, 1)->reply.integer == 11);
}

TEST_CASE("a fanout's requests carry its interest, which abandon() ends while their answers still land") {
  FakeNetwork net(2);
  answer_letters(net);
  net.servers[1].frozen = true;  // keeps what it was sent, for the test to look at
  Fanout fanout(net, [](std::size_t) { return letters(2); });
  REQUIRE(net.servers[1].backlog.size() == 2);
  for (const Request& r : net.servers[1].backlog) CHECK_FALSE(r.interest.abandoned());
  fanout.abandon();
  for (const Request& r : net.servers[1].backlog) CHECK(r.interest.abandoned());
  fanout.wait();
  CHECK(fanout.result(0, 1)->reply.integer == 1);
  CHECK(fanout.result(1, 1)->failure == Failure::Timeout);
  CHECK(fanout.complete());
}

TEST_CASE("answers that come after the fanout is gone land in its dropped state, harmlessly") {
  FakeNetwork net(2);
  answer_letters(net);
  net.servers[1].frozen = true;
  std::size_t recorded = 0;
  {
    Fanout fanout(
        net, [](std::size_t) { return letters(2); },
        [&recorded](std::size_t, TimePoint, Result r) {
          ++recorded;
          return r;
        });
  }
  for (const Request& r : net.servers[1].backlog) CHECK(r.interest.abandoned());
  net.advance(1s);  // under ASan, a use after free here would be caught
  CHECK(recorded == 4);
  CHECK(net.requests_sent() == 4);
}

TEST_CASE("Fanout::timed times each answer from its server's send time to its hand-over") {
  FakeNetwork fake(3);
  answer_letters(fake);
  fake.servers[0].latency = 3ms;
  fake.servers[1].latency = 8ms;
  ZeroLatency net(fake);
  fake.advance(5ms);
  const TimePoint start = net.now();
  Fanout as_given(net, [](std::size_t) { return letters(2); });
  // Server 1's requests go out 2ms after server 0's.
  auto make = [&fake](std::size_t i) {
    if (i == 1) fake.advance(2ms);
    return letters(2);
  };
  Fanout timed(net, std::vector<bool>{true, true, false}, make, Fanout::timed(net));
  CHECK(timed.started() == start);
  CHECK(timed.sent(0) == start);
  CHECK(timed.sent(1) == start + 2ms);
  CHECK(timed.sent(2) == TimePoint{});  // not asked
  as_given.wait();
  timed.wait();
  for (std::size_t k = 0; k < 2; ++k) {
    CAPTURE(k);
    CHECK(as_given.result(0, k)->latency == Duration::zero());
    CHECK(timed.result(0, k)->latency == 3ms);
    CHECK(timed.result(1, k)->latency == 8ms);
  }
}
