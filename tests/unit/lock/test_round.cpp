#include <doctest/doctest.h>

#include <optional>

#include "core/lock/round.hpp"

using namespace redlock;
using namespace std::chrono_literals;

namespace {

// Keeps what was sent and lets the test answer it, in any order, as often as it likes.
class RecordingNetwork final : public Network {
 public:
  struct Sent {
    std::size_t server;
    Request request;
    ResultCallback done;
  };

  explicit RecordingNetwork(std::size_t n) : n_(n) {}

  std::vector<Sent> sent;

  std::size_t size() const override { return n_; }
  TimePoint now() const override { return TimePoint{} + 5s; }
  void send(std::size_t server, Request request, ResultCallback done) override {
    sent.push_back(Sent{server, std::move(request), std::move(done)});
  }
  void run_until(const std::function<bool()>&, TimePoint) override {}
  void flush(TimePoint) override {}
  void subscribe(const std::string&, ChannelCallback) override {}
  std::size_t subscribed() const override { return 0; }
  void unsubscribe() override {}
  std::string describe(std::size_t i) const override { return "redis://rec:" + std::to_string(i); }
  bool resolving() const override { return false; }
  std::string role(std::size_t i) const override { return i < roles.size() ? roles[i] : ""; }
  std::vector<std::string> roles;

  // Answers the request sent to SERVER with the integer V.
  void answer(std::size_t server, long long v) {
    Result r;
    r.reply = Reply::number(v);
    answer(server, r);
  }
  void answer(std::size_t server, const Result& r) {
    for (auto& s : sent) {
      if (s.server != server) continue;
      s.done(r);
      return;
    }
    FAIL("nothing was sent to server ", server);
  }

 private:
  std::size_t n_;
};

}  // namespace

TEST_CASE("a round asks every server once and collects the answers as they come") {
  RecordingNetwork net(3);
  Round round(net, [](std::size_t i) { return Request::command({"ECHO", std::to_string(i)}); });
  REQUIRE(net.sent.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(net.sent[i].server == i);
    CHECK(net.sent[i].request.argv == std::vector<std::string>{"ECHO", std::to_string(i)});
  }
  CHECK(round.started() == net.now());
  CHECK(round.received() == 0);
  CHECK_FALSE(round.complete());

  net.answer(2, 22);
  CHECK(round.received() == 1);
  CHECK_FALSE(round.results()[0].has_value());
  REQUIRE(round.results()[2].has_value());
  CHECK(round.results()[2]->reply.integer == 22);

  net.answer(0, 10);
  net.answer(1, 11);
  CHECK(round.complete());
  CHECK(round.results()[1]->reply.integer == 11);
}

TEST_CASE("servers left out of a round count as answered, with nothing, and get no request") {
  RecordingNetwork net(4);
  Round round(net, std::vector<bool>{true, false, true, false}, [](std::size_t) { return Request::command({"PING"}); });
  REQUIRE(net.sent.size() == 2);
  CHECK(net.sent[0].server == 0);
  CHECK(net.sent[1].server == 2);
  CHECK(round.received() == 2);
  CHECK_FALSE(round.results()[1].has_value());
  CHECK_FALSE(round.results()[3].has_value());
  net.answer(0, 1);
  CHECK_FALSE(round.complete());
  net.answer(2, 1);
  CHECK(round.complete());
}

TEST_CASE("a second answer from one server neither replaces the first nor counts twice") {
  RecordingNetwork net(2);
  Round round(net, [](std::size_t) { return Request::command({"PING"}); });
  net.answer(0, 1);
  net.answer(0, 2);
  CHECK(round.received() == 1);
  CHECK(round.results()[0]->reply.integer == 1);
}

TEST_CASE("every request carries the round's interest, which abandon() ends") {
  RecordingNetwork net(2);
  Round round(net, [](std::size_t) { return Request::command({"PING"}); });
  for (auto& s : net.sent) CHECK_FALSE(s.request.interest.abandoned());
  round.abandon();
  for (auto& s : net.sent) CHECK(s.request.interest.abandoned());
  // Answers still land after the round was given up on: a cleanup may want them.
  net.answer(1, 7);
  CHECK(round.results()[1]->reply.integer == 7);
}

TEST_CASE("a request sent outside a round is never abandoned") {
  CHECK_FALSE(Request::command({"PING"}).interest.abandoned());
  auto owner = std::make_shared<const int>(0);
  Interest interest(owner);
  CHECK_FALSE(interest.abandoned());
  owner.reset();
  CHECK(interest.abandoned());
}

TEST_CASE("an answer that comes after the round is gone is dropped safely") {
  RecordingNetwork net(2);
  {
    Round round(net, [](std::size_t) { return Request::command({"PING"}); });
    CHECK_FALSE(net.sent[0].request.interest.abandoned());
  }
  CHECK(net.sent[0].request.interest.abandoned());
  net.answer(0, 1);  // under ASan, a use after free here would be caught
  net.answer(1, 1);
  CHECK(net.sent.size() == 2);
}

TEST_CASE("a replica's answer is recorded as a replica's, never as a vote; a READONLY refusal tells one too") {
  RecordingNetwork net(4);
  net.roles = {"master", "replica", "", ""};
  Round round(net, [](std::size_t) { return Request::command({"EVALSHA"}); });
  net.answer(0, 1);
  net.answer(1, 1);  // a writable replica that took the write
  Result readonly;
  readonly.failure = Failure::Reply;
  readonly.error = "READONLY You can't write against a read only replica.";
  net.answer(2, readonly);  // one whose ROLE was refused
  Result timeout;
  timeout.failure = Failure::Timeout;
  timeout.error = "no answer within 100ms";
  net.answer(3, timeout);
  CHECK(round.results()[0]->ok());
  for (std::size_t i : {std::size_t{1}, std::size_t{2}}) {
    CAPTURE(i);
    CHECK(round.results()[i]->failure == Failure::Replica);
    CHECK(round.results()[i]->error == "a replica: it never counts as a vote");
  }
  CHECK(round.results()[3]->failure == Failure::Timeout);  // a failure stays what it was
  CHECK(failure_name(Failure::Replica) == "replica");
}
