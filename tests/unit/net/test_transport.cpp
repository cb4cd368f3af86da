// Transport against real sockets on loopback that misbehave on purpose: nothing listening, a
// listener that never answers, one that answers garbage. (Real Redis is in the integration tests.)
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <fstream>
#include <thread>

#include "core/lock/round.hpp"
#include "core/lock/scripts.hpp"
#include "core/net/cluster.hpp"
#include "core/net/transport.hpp"
#include "core/util/fd.hpp"
#include "loopback.hpp"

using namespace redlock;
using namespace std::chrono_literals;
using redlock::test::Listener;

namespace {

int free_port() {
  Listener l;
  return l.port;  // closed again when l goes: nothing listens there
}

// This process's wait for a CPU so far: the second field of the kernel's schedstat (zero where it
// does not say).
std::chrono::nanoseconds cpu_wait() {
  std::ifstream schedstat("/proc/self/schedstat");
  unsigned long long on_cpu = 0, waiting = 0;
  schedstat >> on_cpu >> waiting;
  return std::chrono::nanoseconds(waiting);
}

// The time since it was made, on the wall clock and as the transport's own: less this process's
// wait for a CPU meanwhile, which the transport's deadlines leave out (on a loaded machine that
// wait is the other processes' time, not the server's); an upper bound on the wall clock would
// count it.
struct Stopwatch {
  TimePoint start = Clock::now();
  std::chrono::nanoseconds waited = cpu_wait();
  Duration wall() const { return Clock::now() - start; }
  Duration own() const { return wall() - (cpu_wait() - waited); }
};

Result one_request(Transport& t, std::size_t server = 0) {
  std::optional<Result> out;
  t.send(server, Request::command({"PING"}), [&](Result r) { out = std::move(r); });
  t.run_until([&] { return out.has_value(); }, Clock::now() + 5s);
  REQUIRE(out);
  return *out;
}

TransportOptions fast() {
  TransportOptions o;
  o.timeout = 100ms;
  return o;
}

// A transport (its requests given TIMEOUT) whose connection to a listener is up and answered
// once: a PING sent, the connection accepted (conn), INFO server and ROLE (which every connection
// starts with) and the PING answered.
struct Answered {
  Listener server;
  Transport t;
  Fd conn;
  explicit Answered(Duration timeout) : t({server.url()}, options(timeout)) {
    std::optional<Result> first;
    t.send(0, Request::command({"PING"}), [&](Result x) { first = std::move(x); });
    conn.reset(accept(server.fd.get(), nullptr, nullptr));
    REQUIRE(conn);
    const std::string prelude = "+INFO\r\n*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n+PONG\r\n";
    REQUIRE(write(conn.get(), prelude.data(), prelude.size()) == static_cast<ssize_t>(prelude.size()));
    t.run_until([&] { return first.has_value(); }, Clock::now() + 2s);
    REQUIRE((first && first->ok()));
  }
  static TransportOptions options(Duration timeout) {
    TransportOptions o;
    o.timeout = timeout;
    return o;
  }
};

volatile sig_atomic_t g_alarms = 0;
void on_alarm(int) {
  g_alarms = g_alarms + 1;
}

}  // namespace

TEST_CASE("nothing listening: a connect failure at once") {
  Transport t({parse_server_url("127.0.0.1:" + std::to_string(free_port()))}, fast());
  Stopwatch watch;
  Result r = one_request(t);
  CHECK(r.failure == Failure::Connect);
  CHECK(r.error.find("refused") != std::string::npos);
  CHECK(watch.own() < 50ms);
}

TEST_CASE("a server that never answers costs the timeout, no more") {
  Listener silent;
  Transport t({silent.url()}, fast());
  Stopwatch watch;
  Result r = one_request(t);
  CHECK(r.failure == Failure::Timeout);
  CHECK(watch.wall() >= 100ms);
  CHECK(watch.own() < 150ms);
}

TEST_CASE("behind a request a server has not answered in time, the next is sent but not waited for") {
  Listener frozen;  // a stopped server: its kernel takes the bytes, nothing answers
  Transport t({frozen.url()}, fast());
  REQUIRE(one_request(t).failure == Failure::Timeout);
  // Answered in order, the second could come only after the first: a second --timeout would be
  // a frozen server costing a command twice what the contract allows.
  Stopwatch watch;
  Result second = one_request(t);
  CHECK(watch.own() < 50ms);
  CHECK(second.failure == Failure::Timeout);
  CHECK(second.error.find("no answer to an earlier request within 100ms") != std::string::npos);
  // Sent all the same, on the same connection, for the server to run in order when it wakes.
  int flags = fcntl(frozen.fd.get(), F_GETFL);
  fcntl(frozen.fd.get(), F_SETFL, flags | O_NONBLOCK);
  Fd conn(accept(frozen.fd.get(), nullptr, nullptr));
  REQUIRE(conn);
  std::string received(4096, '\0');
  const ssize_t n = read(conn.get(), received.data(), received.size());
  REQUIRE(n > 0);
  received.resize(static_cast<std::size_t>(n));
  const auto first = received.find("PING");
  REQUIRE(first != std::string::npos);
  CHECK(received.find("PING", first + 4) != std::string::npos);
}

TEST_CASE("requests sent within a batch leave together when it ends, without a turn of the loop") {
  Answered a(2s);
  Transport& t = a.t;
  const Fd& conn = a.conn;
  std::string received(4096, '\0');
  REQUIRE(read(conn.get(), received.data(), received.size()) > 0);  // the prelude and the first PING

  const auto readable = [&] {
    char byte = 0;
    return recv(conn.get(), &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
  };
  {
    const Network::Batch batch(t);
    t.send(0, Request::command({"ECHO", "one"}), [](Result) {});
    {
      const Network::Batch inner(t);  // batches nest: the outer one decides
      t.send(0, Request::command({"ECHO", "two"}), [](Result) {});
    }
    CHECK(!readable());
  }
  const ssize_t n = recv(conn.get(), received.data(), received.size(), MSG_DONTWAIT);
  REQUIRE(n > 0);
  received.resize(static_cast<std::size_t>(n));
  CHECK(received.find("one") != std::string::npos);
  CHECK(received.find("two") != std::string::npos);
}

TEST_CASE("two names of one endpoint: the second is a duplicate once its address is known, before any answer") {
  Listener silent;  // never answers, so no run_id could tell
  const std::string port = std::to_string(silent.port);
  Transport t({parse_server_url("127.0.0.1:" + port), parse_server_url("localhost:" + port)}, fast());
  std::optional<Result> first, second;
  t.send(0, Request::command({"PING"}), [&](Result r) { first = std::move(r); });
  t.send(1, Request::command({"PING"}), [&](Result r) { second = std::move(r); });
  Stopwatch watch;
  t.run_until([&] { return second.has_value(); }, watch.start + 5s);
  REQUIRE(second);
  CHECK(second->failure == Failure::Duplicate);
  CHECK(second->error.find("both reach 127.0.0.1:" + port) != std::string::npos);
  CHECK(watch.own() < 100ms);
  CHECK(!first);  // the first is still waited for
}

TEST_CASE("a reply that came in time is taken, however late the loop gets to read it (a loaded host)") {
  Answered a(50ms);
  Transport& t = a.t;
  const Fd& conn = a.conn;

  // The server answers at once; the client gets no CPU until well past the deadline.
  std::optional<Result> second;
  t.send(0, Request::command({"PING"}), [&](Result x) { second = std::move(x); });
  REQUIRE(write(conn.get(), "+PONG\r\n", 7) == 7);
  std::this_thread::sleep_for(80ms);
  t.run_until([&] { return second.has_value(); }, Clock::now() + 2s);
  REQUIRE(second);
  CHECK(second->ok());
  CHECK(second->failure == Failure::None);
}

TEST_CASE("a connection the server still owes answers is never replaced: its requests run in order") {
  Listener frozen;  // accepts nothing yet: a stopped server, whose kernel still takes the bytes
  TransportOptions o;
  o.timeout = 20ms;
  Transport t({frozen.url()}, o);
  std::vector<std::optional<Result>> results(40);
  for (auto& r : results) t.send(0, Request::command({"PING"}), [&r](Result x) { r = std::move(x); });
  t.run_until([&] { return std::all_of(results.begin(), results.end(), [](auto& r) { return r.has_value(); }); },
              Clock::now() + 5s);
  for (auto& r : results) REQUIRE((r && r->failure == Failure::Timeout));

  // A second connection could be served first when the server wakes up: none is opened, and what
  // is asked meanwhile fails at once.
  Stopwatch watch;
  Result refused = one_request(t);
  CHECK(refused.failure == Failure::Timeout);
  CHECK(refused.error.find("none sent until it answers") != std::string::npos);
  CHECK(watch.own() < 20ms);
  int flags = fcntl(frozen.fd.get(), F_GETFL);
  fcntl(frozen.fd.get(), F_SETFL, flags | O_NONBLOCK);
  Fd conn(accept(frozen.fd.get(), nullptr, nullptr));
  REQUIRE(conn);
  CHECK(accept(frozen.fd.get(), nullptr, nullptr) < 0);  // one connection, not two

  // The server wakes up and answers all 42 (INFO, ROLE, then the PINGs): the same connection goes on.
  std::string answers;
  for (int i = 0; i < 42; ++i) answers += "+PONG\r\n";
  REQUIRE(write(conn.get(), answers.data(), answers.size()) == static_cast<ssize_t>(answers.size()));
  t.run_until([] { return false; }, Clock::now() + 50ms);
  std::optional<Result> later;
  t.send(0, Request::command({"PING"}), [&](Result x) { later = std::move(x); });
  REQUIRE(write(conn.get(), "+PONG\r\n", 7) == 7);
  t.run_until([&] { return later.has_value(); }, Clock::now() + 2s);
  REQUIRE(later);
  CHECK(later->ok());
  CHECK(accept(frozen.fd.get(), nullptr, nullptr) < 0);
}

TEST_CASE("a server that answers garbage is a protocol failure, not a crash") {
  Listener garbage;
  std::thread server([&] {
    int c = accept(garbage.fd.get(), nullptr, nullptr);
    const char junk[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
    [[maybe_unused]] auto n = write(c, junk, sizeof junk - 1);
    std::this_thread::sleep_for(200ms);
    close(c);
  });
  Transport t({garbage.url()}, fast());
  Result r = one_request(t);
  server.join();
  CHECK(r.failure == Failure::Protocol);
  CHECK(r.error.find("not a Redis server") != std::string::npos);
}

TEST_CASE("ROLE goes in the first round trip with INFO and the request: a replica is known by its answer") {
  Listener replica;
  std::string received;
  std::thread server([&] {
    Fd c(accept(replica.fd.get(), nullptr, nullptr));
    char buf[4096];
    // Nothing is answered before the request itself has arrived: no extra round trip.
    while (received.find("PING") == std::string::npos) {
      ssize_t n = read(c.get(), buf, sizeof buf);
      if (n <= 0) return;
      received.append(buf, static_cast<std::size_t>(n));
    }
    const std::string answers =
        "$22\r\n# Server\r\nrun_id:abc\r\n\r\n"
        "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:6379\r\n$9\r\nconnected\r\n:42\r\n"
        "+PONG\r\n";
    [[maybe_unused]] auto n = write(c.get(), answers.data(), answers.size());
    std::this_thread::sleep_for(100ms);
  });
  Transport t({replica.url()}, fast());
  CHECK(t.role(0).empty());
  Result r = one_request(t);
  server.join();
  CHECK(r.ok());
  CHECK(t.role(0) == "replica");
  CHECK(received.find("INFO") < received.find("ROLE"));
  CHECK(received.find("ROLE") < received.find("PING"));
}

TEST_CASE("a server that hangs up is a closed connection") {
  Listener rude;
  std::thread server([&] {
    int c = accept(rude.fd.get(), nullptr, nullptr);
    close(c);
  });
  Transport t({rude.url()}, fast());
  Result r = one_request(t);
  server.join();
  CHECK((r.failure == Failure::Closed || r.failure == Failure::Io));
}

TEST_CASE("signals during the wait do not cut it short or break it (EINTR)") {
  Listener silent;
  struct sigaction sa {};
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, nullptr);
  itimerval every_10ms{{0, 10000}, {0, 10000}};
  setitimer(ITIMER_REAL, &every_10ms, nullptr);
  g_alarms = 0;
  Transport t({silent.url()}, fast());
  Stopwatch watch;
  Result r = one_request(t);
  const Duration wall = watch.wall(), own = watch.own();
  itimerval off{};
  setitimer(ITIMER_REAL, &off, nullptr);
  signal(SIGALRM, SIG_DFL);
  CHECK(g_alarms >= 5);
  CHECK(r.failure == Failure::Timeout);
  CHECK(wall >= 100ms);
  CHECK(own < 150ms);
}

TEST_CASE("one frozen server does not hold up the answers of the others") {
  Listener silent;
  Listener garbage;
  std::thread server([&] {
    int c = accept(garbage.fd.get(), nullptr, nullptr);
    [[maybe_unused]] auto n = write(c, "x", 1);
    std::this_thread::sleep_for(300ms);
    close(c);
  });
  Transport t({silent.url(), garbage.url()}, fast());
  Round round(t, [](std::size_t) { return Request::command({"PING"}); });
  Stopwatch watch;
  t.run_until([&] { return round.results()[1].has_value(); }, Clock::now() + 5s);
  CHECK(watch.own() < 50ms);
  CHECK_FALSE(round.results()[0].has_value());
  server.join();
}

TEST_CASE("flush waits for what is queued on a connection that is up, not for one still being made") {
  Listener silent;  // accepts nothing, but its queue has room: the kernel completes the connect
  test::BlackHole hole;
  TransportOptions o;
  o.timeout = 2s;
  Transport t({silent.url(), hole.url()}, o);
  t.send(0, Request::command({"PING"}), [](Result) {});
  t.send(1, Request::command({"PING"}), [](Result) {});
  Stopwatch watch;
  t.flush(Clock::now() + 2s);
  CHECK(watch.own() < 500ms);
  // What flush waited for has arrived: the request sits in the silent server's socket.
  Fd conn(accept(silent.fd.get(), nullptr, nullptr));
  REQUIRE(conn);
  char buf[512];
  timeval tv{1, 0};
  setsockopt(conn.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  auto n = read(conn.get(), buf, sizeof buf);
  REQUIRE(n > 0);
  CHECK(std::string(buf, static_cast<std::size_t>(n)).find("PING") != std::string::npos);
}

TEST_CASE("a name that does not resolve is that server's failure") {
  Transport t({parse_server_url("redis://no-such-host.invalid:6379")}, fast());
  Result r = one_request(t);
  CHECK((r.failure == Failure::Connect || r.failure == Failure::Timeout));
}

namespace {

// A scripted server on L: for each step, reads until the text appears, then writes the answer.
// RECEIVED gets everything read, in order.
std::thread scripted(Listener& l, std::vector<std::pair<std::string, std::string>> steps, std::string& received) {
  return std::thread([&l, steps = std::move(steps), &received] {
    Fd c(accept(l.fd.get(), nullptr, nullptr));
    char buf[4096];
    std::size_t seen = 0;
    for (const auto& [until, answer] : steps) {
      while (received.find(until, seen) == std::string::npos) {
        ssize_t n = read(c.get(), buf, sizeof buf);
        if (n <= 0) return;
        received.append(buf, static_cast<std::size_t>(n));
      }
      seen = received.find(until, seen) + until.size();
      [[maybe_unused]] auto n = write(c.get(), answer.data(), answer.size());
    }
    std::this_thread::sleep_for(100ms);
  });
}

std::string bulk(const std::string& s) {
  return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

// A sentinel's answers to SENTINEL REPLICAS (none known, or REPLICAS given) and to the master's
// address, naming the master at 127.0.0.1:PORT.
std::string master_address(int port, const std::string& replicas = "*0\r\n") {
  return replicas + "*2\r\n" + bulk("127.0.0.1") + bulk(std::to_string(port));
}

// SENTINEL REPLICAS' answer: one replica with FLAGS and ROLE, down (s_down) for DOWN_MS of its
// down-after-milliseconds of 1000, whose INFO the sentinel has read (its master's address) or not.
std::string one_replica(const std::string& flags, const std::string& role = "slave", int down_ms = 0,
                        const std::string& master_host = "127.0.0.1") {
  return "*1\r\n*10\r\n" + bulk("flags") + bulk(flags) + bulk("role-reported") + bulk(role) + bulk("s-down-time") +
         bulk(std::to_string(down_ms)) + bulk("down-after-milliseconds") + bulk("1000") + bulk("master-host") +
         bulk(master_host);
}

// A vote (a PING marked replicated) on member 0 of T, and its answer (nullopt: none in 5 s).
std::optional<Result> vote(Transport& t) {
  std::optional<Result> out;
  Request request = Request::command({"PING"});
  request.replicated = true;
  t.send(0, std::move(request), [&](Result r) { out = std::move(r); });
  t.run_until([&] { return out.has_value(); }, Clock::now() + 5s);
  return out;
}

// One Sentinel member, "mymaster" on the sentinel at PORT, with a 2 s deadline.
Transport sentinel_member(int port) {
  TransportOptions o;
  o.timeout = 2s;
  return Transport({parse_server_url("sentinel://127.0.0.1:" + std::to_string(port) + "/mymaster")}, o);
}

const std::string kInfo = bulk("# Server\r\nrun_id:abc\r\n");
const std::string kMasterAlone = "*3\r\n" + bulk("master") + ":0\r\n*0\r\n";
const std::string kMasterWithReplica =
    "*3\r\n" + bulk("master") + ":0\r\n*1\r\n*3\r\n" + bulk("127.0.0.1") + bulk("7001") + bulk("0");

}  // namespace

TEST_CASE("a Sentinel member: sentinels asked in turn, the master named checked by ROLE before anything is sent") {
  Listener sentinel, master;
  std::string asked, received;
  std::thread s = scripted(sentinel, {{"mymaster", master_address(master.port)}}, asked);
  std::thread m = scripted(master, {{"ROLE", kInfo + kMasterAlone}, {"PING", "+PONG\r\n"}}, received);
  TransportOptions o;
  o.timeout = 2s;
  // The first sentinel refuses connections: the next one is asked within the same deadline.
  Transport t({parse_server_url("sentinel://127.0.0.1:" + std::to_string(free_port()) +
                                ",127.0.0.1:" + std::to_string(sentinel.port) + "/mymaster")},
              o);
  Result r = one_request(t);
  s.join();
  m.join();
  CHECK(r.ok());
  CHECK(asked.find("GET-MASTER-ADDR-BY-NAME") != std::string::npos);
  CHECK(t.resolved(0) == "127.0.0.1:" + std::to_string(master.port));
  CHECK(t.role(0) == "master");
  // The request waited for ROLE's answer: it is not in what came with ROLE.
  CHECK(received.find("PING") > received.find("ROLE"));
  CHECK(t.describe(0).starts_with("sentinel://"));
}

TEST_CASE("a Sentinel member whose named master says it is a replica gets nothing sent") {
  Listener sentinel, master;
  std::string asked, received;
  std::thread s = scripted(sentinel, {{"mymaster", master_address(master.port)}}, asked);
  const std::string replica =
      "*5\r\n" + bulk("slave") + bulk("127.0.0.1") + ":6379\r\n" + bulk("connected") + ":42\r\n";
  std::thread m = scripted(master, {{"ROLE", kInfo + replica}}, received);
  Transport t = sentinel_member(sentinel.port);
  Result r = one_request(t);
  s.join();
  m.join();
  CHECK(r.failure == Failure::Replica);
  CHECK(r.error.find("named by the sentinels as the master mymaster") != std::string::npos);
  CHECK(received.find("PING") == std::string::npos);
  CHECK(t.resolved(0).empty());
}

TEST_CASE("a vote on a Sentinel member counts once WAIT confirms a replica has it") {
  Listener sentinel, master;
  std::string asked, received;
  std::thread s = scripted(sentinel, {{"mymaster", master_address(master.port)}}, asked);
  // The vote, then WAIT in the same pipeline: one replica confirms the first, none the second.
  std::thread m =
      scripted(master, {{"ROLE", kInfo + kMasterWithReplica}, {"WAIT", "+PONG\r\n:1\r\n"}, {"WAIT", "+PONG\r\n:0\r\n"}},
               received);
  Transport t = sentinel_member(sentinel.port);
  auto vote_counted = [&] {
    auto out = vote(t);
    REQUIRE(out);
    return *out;
  };
  Result confirmed = vote_counted();
  CHECK(confirmed.ok());
  CHECK(confirmed.reply.str == "PONG");
  Result unconfirmed = vote_counted();
  s.join();
  m.join();
  CHECK(unconfirmed.failure == Failure::Reply);
  CHECK(unconfirmed.error.find("WAIT: 0 of 1 replicas") != std::string::npos);
  // The default is 1 for a master with a replica; WAIT's timeout is within the request's deadline.
  auto wait = received.find("WAIT");
  REQUIRE(wait != std::string::npos);
  CHECK(received.find("PING") < wait);
  CHECK(received.substr(wait, 20).find("$1\r\n1\r\n") != std::string::npos);
}

TEST_CASE("a vote whose master drops the connection before WAIT answers is told, not forgotten") {
  Listener sentinel, master;
  std::string asked, received;
  std::thread s = scripted(sentinel, {{"mymaster", master_address(master.port)}}, asked);
  // The vote is answered, then the master goes away (killed in a failover) before WAIT answers.
  std::thread m = scripted(master, {{"ROLE", kInfo + kMasterWithReplica}, {"WAIT", "+PONG\r\n"}}, received);
  Transport t = sentinel_member(sentinel.port);
  std::optional<Result> out = vote(t);
  s.join();
  m.join();
  REQUIRE(out);  // a callback lost here left a round waiting for ever
  CHECK_FALSE(out->ok());
}

TEST_CASE("a Sentinel member whose master refuses WAIT fails its votes, and says why") {
  Listener sentinel, master;
  std::string asked, received;
  std::thread s = scripted(sentinel, {{"mymaster", master_address(master.port)}}, asked);
  std::thread m = scripted(
      master, {{"ROLE", kInfo + kMasterAlone}, {"WAIT", "+PONG\r\n-ERR unknown command 'WAIT'\r\n"}}, received);
  TransportOptions o;
  o.timeout = 2s;
  o.member_wait = 1;  // asked for, though ROLE lists no replica
  Transport t({parse_server_url("sentinel://127.0.0.1:" + std::to_string(sentinel.port) + "/mymaster")}, o);
  std::optional<Result> out = vote(t);
  s.join();
  m.join();
  REQUIRE(out);
  CHECK(out->failure == Failure::Reply);
  CHECK(out->error.find("WAIT refused") != std::string::npos);
  CHECK(out->error.find("--member-wait 0") != std::string::npos);
}

namespace {

// CLUSTER SLOTS' answer: every slot served by the master at 127.0.0.1:PORT.
std::string all_slots_at(int port) {
  return "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n" + bulk("127.0.0.1") + ":" + std::to_string(port) + "\r\n";
}

std::string cluster_url(int seed1, int seed2) {
  return "cluster://127.0.0.1:" + std::to_string(seed1) + ",127.0.0.1:" + std::to_string(seed2);
}

}  // namespace

TEST_CASE("a Cluster member: the map from a seed, the request to its slot's master, a MOVED followed") {
  Listener seed, old_owner, new_owner;
  std::string asked, at_old, at_new;
  // The first seed refuses connections; the second gives the map, then (asked again after the
  // MOVED) the new one.
  std::thread s = scripted(
      seed, {{"SLOTS", kInfo + kMasterAlone + all_slots_at(old_owner.port)}, {"SLOTS", all_slots_at(new_owner.port)}},
      asked);
  std::thread a = scripted(
      old_owner, {{"foo", kInfo + kMasterAlone + "-MOVED 12182 127.0.0.1:" + std::to_string(new_owner.port) + "\r\n"}},
      at_old);
  std::thread b = scripted(new_owner, {{"foo", kInfo + kMasterAlone + bulk("bar")}}, at_new);
  TransportOptions o;
  o.timeout = 2s;
  Transport t({parse_server_url(cluster_url(free_port(), seed.port))}, o);
  std::optional<Result> out;
  t.send(0, Request::command({"GET", "foo"}), [&](Result r) { out = std::move(r); });
  t.run_until([&] { return out.has_value(); }, Clock::now() + 5s);
  s.join();
  a.join();
  b.join();
  REQUIRE(out);
  CHECK(out->ok());
  CHECK(out->reply.str == "bar");
  CHECK(t.resolved(0) == "127.0.0.1:" + std::to_string(new_owner.port));
  CHECK(t.role(0) == "master");
  CHECK(at_new.find("GET") != std::string::npos);
}

TEST_CASE("a Cluster member: an ASK is followed once, after ASKING, and leaves the map as it was") {
  Listener seed, owner, importing;
  std::string asked, at_owner, at_importing;
  std::thread s = scripted(seed, {{"SLOTS", kInfo + kMasterAlone + all_slots_at(owner.port)}}, asked);
  std::thread a =
      scripted(owner,
               {{"foo", kInfo + kMasterAlone + "-ASK 12182 127.0.0.1:" + std::to_string(importing.port) + "\r\n"},
                {"foo", bulk("again")}},
               at_owner);
  std::thread b = scripted(importing, {{"foo", kInfo + kMasterAlone + "+OK\r\n" + bulk("bar")}}, at_importing);
  TransportOptions o;
  o.timeout = 2s;
  Transport t({parse_server_url(cluster_url(seed.port, free_port()))}, o);
  auto get = [&] {
    std::optional<Result> out;
    t.send(0, Request::command({"GET", "foo"}), [&](Result r) { out = std::move(r); });
    t.run_until([&] { return out.has_value(); }, Clock::now() + 5s);
    REQUIRE(out);
    return *out;
  };
  Result first = get();
  CHECK(first.ok());
  CHECK(first.reply.str == "bar");
  CHECK(at_importing.find("ASKING") < at_importing.find("GET"));
  Result second = get();  // the slot is still the owner's
  s.join();
  a.join();
  b.join();
  CHECK(second.reply.str == "again");
}

namespace {

// CLUSTER SLOTS' answer: slots 0 … 8191 at ENDPOINT (a RESP string or NULL):PORT, the others at
// 127.0.0.1:OTHER.
std::string halves(const std::string& endpoint, int port, int other) {
  return "*2\r\n*3\r\n:0\r\n:8191\r\n*2\r\n" + endpoint + ":" + std::to_string(port) +
         "\r\n*3\r\n:8192\r\n:16383\r\n*2\r\n" + bulk("127.0.0.1") + ":" + std::to_string(other) + "\r\n";
}

Result cluster_get(Transport& t, const std::string& key) {
  std::optional<Result> out;
  t.send(0, Request::command({"GET", key}), [&](Result r) { out = std::move(r); });
  t.run_until([&] { return out.has_value(); }, Clock::now() + 5s);
  REQUIRE(out);
  return *out;
}

// CLUSTER SLOTS through member 0 of T, sent to NODE (Request::node), as list and doctor ask it.
Result slots_from(Transport& t, const std::string& node) {
  std::optional<Result> out;
  Request slots = Request::command({"CLUSTER", "SLOTS"});
  slots.node = node;
  t.send(0, std::move(slots), [&](Result r) { out = std::move(r); });
  t.run_until([&] { return out.has_value(); }, Clock::now() + 5s);
  REQUIRE(out);
  return *out;
}

}  // namespace

// Redis names a node by an empty endpoint when it has met no other (it does not know its own
// address), by NULL behind a load balancer (cluster-preferred-endpoint-type unknown-endpoint): the
// host the map was asked of, with the port given.
TEST_CASE("a Cluster member: a node named with an empty or NULL endpoint is at the host that answered") {
  for (const std::string& endpoint : {bulk(""), std::string("$-1\r\n")}) {
    CAPTURE(endpoint);
    Listener seed, owner;
    std::string asked, at_owner;
    // Slot 5061 ("bar") is the owner's, named without a host; the map, asked again through the
    // member as list and doctor ask it, comes back with the host filled in.
    std::thread s = scripted(seed, {{"SLOTS", kInfo + kMasterAlone + halves(endpoint, owner.port, seed.port)}}, asked);
    std::thread a = scripted(
        owner, {{"bar", kInfo + kMasterAlone + bulk("here")}, {"SLOTS", halves(endpoint, owner.port, seed.port)}},
        at_owner);
    TransportOptions o;
    o.timeout = 2s;
    Transport t({parse_server_url(cluster_url(seed.port, free_port()))}, o);
    Result got = cluster_get(t, "bar");
    CHECK(got.ok());
    CHECK(got.reply.str == "here");
    CHECK(t.resolved(0) == "127.0.0.1:" + std::to_string(owner.port));
    Result map = slots_from(t, std::string(kAnyNode));
    s.join();
    a.join();
    REQUIRE(map.ok());
    const auto masters = SlotMap::parse(map.reply).masters();
    REQUIRE(masters.size() == 2);
    CHECK(masters[0].address() == "127.0.0.1:" + std::to_string(owner.port));
  }
}

TEST_CASE("a Cluster member: the slots of a node whose endpoint is unknown (\"?\") fail, and say why") {
  Listener seed, owner;
  std::string asked, at_owner;
  const int nowhere = free_port();
  const std::string map = halves(bulk("?"), nowhere, owner.port);
  std::thread s = scripted(seed, {{"SLOTS", kInfo + kMasterAlone + map}}, asked);
  std::thread a = scripted(owner, {{"foo", kInfo + kMasterAlone + bulk("here")}, {"SLOTS", map}}, at_owner);
  TransportOptions o;
  o.timeout = 2s;
  Transport t({parse_server_url(cluster_url(seed.port, free_port()))}, o);
  Result unknown = cluster_get(t, "bar");  // slot 5061: the unknown node's
  CHECK(unknown.failure == Failure::Connect);
  CHECK(unknown.error.find("slot 5061") != std::string::npos);
  CHECK(unknown.error.find("endpoint is unknown") != std::string::npos);
  Result known = cluster_get(t, "foo");  // slot 12182: the other master's, served
  CHECK(known.ok());
  CHECK(known.reply.str == "here");
  // As list and doctor ask: the map of whichever master can be reached, and the unknown one by name.
  Result any = slots_from(t, std::string(kAnyNode));
  Result named = slots_from(t, "?:" + std::to_string(nowhere));
  s.join();
  a.join();
  CHECK(any.ok());
  CHECK(at_owner.find("SLOTS") != std::string::npos);
  CHECK(named.failure == Failure::Connect);
  CHECK(named.error.find("endpoint is unknown") != std::string::npos);
}

// ROLE lists no replica (its link is cut), but the sentinels know one they could promote: the vote
// still waits for it, down for a while too; not for one down longer than the sentinels would still
// promote it after, nor for an old master not yet turned replica, nor one they never read.
TEST_CASE("a Sentinel member's vote waits for a replica the sentinels could promote, linked or not") {
  const std::vector<std::pair<std::string, bool>> cases = {
      {one_replica("slave"), true},
      {one_replica("s_down,slave,disconnected", "slave", 3000), true},
      // Down for 20 x its down-after: stopped, it comes back with a link that looks fresh.
      {one_replica("s_down,slave,disconnected", "slave", 20000), true},
      {one_replica("slave", "master"), false},
      {one_replica("s_down,slave,disconnected", "slave", 3000, "?"), false}};
  for (const auto& [replicas, waits] : cases) {
    CAPTURE(replicas);
    Listener sentinel, master;
    std::string asked, received;
    std::thread s = scripted(sentinel, {{"GET-MASTER", master_address(master.port, replicas)}}, asked);
    std::thread m = scripted(
        master, {{"ROLE", kInfo + kMasterAlone}, {waits ? "WAIT" : "PING", waits ? "+PONG\r\n:0\r\n" : "+PONG\r\n"}},
        received);
    TransportOptions o;
    o.timeout = 2s;
    Transport t({parse_server_url("sentinel://127.0.0.1:" + std::to_string(sentinel.port) + "/mymaster")}, o);
    std::optional<Result> out = vote(t);
    s.join();
    m.join();
    REQUIRE(out);
    CHECK(asked.find("REPLICAS") < asked.find("GET-MASTER-ADDR-BY-NAME"));
    CHECK(out->ok() == !waits);
    CHECK((received.find("WAIT") != std::string::npos) == waits);
  }
}

TEST_CASE("a subscription's own news is told by kind: a message that reads \"subscribed\" is a message") {
  Listener server;
  std::string received;
  const std::string confirmed = "*3\r\n" + bulk("subscribe") + bulk("wake") + ":1\r\n";
  const std::string published = "*3\r\n" + bulk("message") + bulk("wake") + bulk("subscribed");
  std::thread peer = scripted(server, {{"notes", confirmed + "-NOPERM no channel for you\r\n" + published}}, received);
  Transport t({server.url()}, fast());
  std::vector<std::pair<ChannelEvent::Kind, std::string>> heard;
  t.subscribe_channels({{"wake", "notes"}}, [&](const ChannelEvent& e) {
    heard.emplace_back(e.kind, std::string(e.channel) + " " + std::string(e.text));
  });
  t.run_until([&] { return heard.size() >= 4; }, Clock::now() + 2s);
  peer.join();
  t.run_until([&] { return heard.size() >= 4; }, Clock::now() + 2s);  // the hang-up
  using K = ChannelEvent::Kind;
  const std::vector<std::pair<K, std::string>> told{{K::Subscribed, "wake "},
                                                    {K::Refused, "notes NOPERM no channel for you"},
                                                    {K::Message, "wake subscribed"},
                                                    {K::Unsubscribed, "wake "}};
  CHECK(heard == told);
  CHECK(t.subscribed() == 0);
}
