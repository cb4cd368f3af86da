#include <doctest/doctest.h>

#include <algorithm>

#include "core/doctor/doctor.hpp"
#include "core/lock/keys.hpp"
#include "core/net/cluster.hpp"
#include "fake_network.hpp"

using namespace redlock;
using namespace std::chrono_literals;
using redlock::test::FakeNetwork;
using redlock::test::Ids;

namespace {

// A master that answered everything and keeps every write on disk: the checks find nothing.
ServerFacts healthy(std::size_t i) {
  ServerFacts f;
  f.server = "redis://fake:" + std::to_string(7000 + i);
  f.reachable = true;
  f.first_latency = 1ms;
  f.round_trip = 500us;
  f.role = "master";
  f.run_id = "run" + std::to_string(i);
  f.version = "7.0.15";
  f.uptime_s = 3600;
  f.aof = true;
  f.appendfsync = "always";
  f.cluster_enabled = false;
  f.maxmemory_policy = "noeviction";
  f.maxmemory = 0;
  f.clock = ClockSample{1'700'000'000'000'000, TimePoint(10s), 500us};
  f.probed = true;
  f.fence_keys = 0;
  f.fence_scan_complete = true;
  return f;
}

std::vector<ServerFacts> healthy_servers(std::size_t n) {
  std::vector<ServerFacts> servers;
  for (std::size_t i = 0; i < n; ++i) servers.push_back(healthy(i));
  return servers;
}

DoctorOptions options(Duration ttl = 30s) {
  DoctorOptions o;
  o.ttl = ttl;
  o.timeout = 100ms;
  o.probe_key = "redlock-doctor:probe";
  return o;
}

}  // namespace

TEST_CASE("parse_info reads field:value lines, skipping sections, blanks and comments") {
  auto info = parse_info(
      "# Server\r\nredis_version:7.0.15\r\nrun_id:0123abcd\r\nexecutable:/usr/bin/redis-server\r\n"
      "config_file:\r\nuptime_in_seconds:42\r\n\r\n# Persistence\r\naof_enabled:1\r\nnot a field\r\n:no name\r\n");
  CHECK(info.at("redis_version") == "7.0.15");
  CHECK(info.at("run_id") == "0123abcd");
  CHECK(info.at("executable") == "/usr/bin/redis-server");  // only the first ':' separates
  CHECK(info.at("config_file").empty());
  CHECK(info.at("uptime_in_seconds") == "42");
  CHECK(info.at("aof_enabled") == "1");
  CHECK(info.size() == 6);
  CHECK(parse_info("").empty());
  CHECK(parse_info("a:1\nb:2").at("b") == "2");  // bare LF and no final newline
}

TEST_CASE("verdicts are ordered ok < unknown < warn < fail") {
  CHECK(worst(Verdict::Ok, Verdict::Unknown) == Verdict::Unknown);
  CHECK(worst(Verdict::Warn, Verdict::Unknown) == Verdict::Warn);
  CHECK(worst(Verdict::Fail, Verdict::Warn) == Verdict::Fail);
  CHECK(worst(Verdict::Ok, Verdict::Ok) == Verdict::Ok);
  CHECK(verdict_name(Verdict::Unknown) == "unknown");
  CHECK(verdict_name(Verdict::Fail) == "fail");
}

TEST_CASE("clock skew: each clock placed at the middle of its round trip, against the median") {
  const TimePoint t0 = TimePoint(100s);
  const std::int64_t base_us = 1'700'000'000'000'000;
  std::vector<std::optional<ClockSample>> samples(4);
  // Server 0 read its clock 1ms into a 2ms round trip; server 1 is 50ms ahead; server 3, 20ms behind.
  samples[0] = ClockSample{base_us + 1000, t0, 2ms};
  samples[1] = ClockSample{base_us + 50'000 + 1000, t0, 2ms};
  samples[3] = ClockSample{base_us - 20'000 + 3000, t0 + 2ms, 2ms};
  auto skew = measure_skew(samples);
  REQUIRE(skew);
  CHECK(skew->ahead == 1);
  CHECK(skew->behind == 3);
  CHECK(skew->skew == 70ms);
  CHECK(skew->uncertainty == 2ms);
  REQUIRE(skew->offsets.size() == 4);
  CHECK(skew->offsets[0] == 0ms);  // the median of three
  CHECK(skew->offsets[1] == 50ms);
  CHECK_FALSE(skew->offsets[2]);
  CHECK(skew->offsets[3] == -20ms);

  SUBCASE("fewer than two clocks: nothing to compare") {
    CHECK_FALSE(measure_skew({samples[0], std::nullopt}));
    CHECK_FALSE(measure_skew({}));
  }
}

TEST_CASE("reachable: all is ok, a quorum is a warning, less is a failure") {
  auto servers = healthy_servers(5);
  CHECK(check_reachable(servers).verdict == Verdict::Ok);

  servers[4].reachable = false;
  servers[4].error = "timeout: no answer within 100ms";
  servers[3].reachable = false;
  Check two_down = check_reachable(servers);
  CHECK(two_down.verdict == Verdict::Warn);
  CHECK(two_down.summary == "3 of 5 servers answered; a quorum is 3");
  REQUIRE(two_down.notes.size() == 2);
  CHECK(two_down.notes[1].server == 4);
  CHECK(two_down.notes[1].text == "timeout: no answer within 100ms");

  servers[2].reachable = false;
  Check three_down = check_reachable(servers);
  CHECK(three_down.verdict == Verdict::Fail);
  DoctorReport report = assess(servers, options());
  CHECK(report.no_quorum);
  CHECK(report.reachable.yes == 2);
  CHECK(report.verdict == Verdict::Fail);
}

TEST_CASE("assess: with no server that answered, the other checks are unknown, not ok") {
  std::vector<ServerFacts> servers(3);
  for (std::size_t i = 0; i < 3; ++i) {
    servers[i].server = "redis://fake:" + std::to_string(7000 + i);
    servers[i].error = "connect: Connection refused";
  }
  DoctorReport report = assess(servers, options());
  REQUIRE(report.checks.size() == 14);
  CHECK(report.checks[0].name == "reachable");
  CHECK(report.checks[0].verdict == Verdict::Fail);
  // How many servers are listed is known without an answer.
  CHECK(report.checks[1].name == "fault-tolerance");
  CHECK(report.checks[1].verdict == Verdict::Ok);
  // Nor whether a Sentinel member is listed: the sentinels are asked apart from the servers.
  CHECK(report.checks.back().name == "sentinel");
  CHECK(report.checks.back().verdict == Verdict::Ok);
  CHECK(report.checks.back().summary == "no Sentinel member");
  for (std::size_t i = 2; i + 1 < report.checks.size(); ++i) {
    CAPTURE(report.checks[i].name);
    CHECK(report.checks[i].verdict == Verdict::Unknown);
    CHECK(report.checks[i].summary == "no server to ask (none answered, or none let us in)");
  }
  // One server that answered is enough for the checks to say what it told.
  servers[0] = healthy(0);
  DoctorReport one = assess(servers, options());
  CHECK(one.checks[2].name == "master");
  CHECK(one.checks[2].verdict == Verdict::Ok);
}

TEST_CASE("fault-tolerance: one or two servers, or an even number, warn; an odd number from 3 is ok") {
  const struct {
    std::size_t servers;
    Verdict verdict;
    const char* summary;
  } cases[] = {
      {1, Verdict::Warn, "1 server, a quorum of 1: no failed server is tolerated; losing it stops every lock"},
      {2, Verdict::Warn, "2 servers, a quorum of 2: no failed server is tolerated; losing any one stops every lock"},
      {3, Verdict::Ok, "3 servers, a quorum of 2: tolerates 1 failed server"},
      {4, Verdict::Warn, "4 servers, a quorum of 3: tolerates 1 failed server, no more than 3 servers would"},
      {5, Verdict::Ok, "5 servers, a quorum of 3: tolerates 2 failed servers"},
      {6, Verdict::Warn, "6 servers, a quorum of 4: tolerates 2 failed servers, no more than 5 servers would"},
      {7, Verdict::Ok, "7 servers, a quorum of 4: tolerates 3 failed servers"},
  };
  for (const auto& expected : cases) {
    CAPTURE(expected.servers);
    Check c = check_fault_tolerance(expected.servers);
    CHECK(c.name == "fault-tolerance");
    CHECK(c.verdict == expected.verdict);
    CHECK(c.summary == expected.summary);
    CHECK(c.advice.empty() == (expected.verdict == Verdict::Ok));
  }
  // It is judged in assess, and makes the overall verdict a warning.
  DoctorReport even = assess(healthy_servers(4), options());
  CHECK(even.checks[1].name == "fault-tolerance");
  CHECK(even.verdict == Verdict::Warn);
  CHECK(assess(healthy_servers(3), options()).verdict == Verdict::Ok);
}

TEST_CASE("reachable: one server under two URLs is one vote") {
  auto servers = healthy_servers(3);
  servers[2].reachable = false;
  // By address (the transport marks the second URL) or by run_id: either way one vote, not two.
  for (int by_run_id = 0; by_run_id < 2; ++by_run_id) {
    auto listed = servers;
    if (by_run_id) {
      listed[1].run_id = listed[0].run_id;
    } else {
      listed[1].duplicate = true;
    }
    Check c = check_reachable(listed);
    CHECK(c.verdict == Verdict::Fail);
    CHECK(c.summary == "1 of 3 servers answered; a quorum is 2: no lock can be taken");
    DoctorReport report = assess(listed, options());
    CHECK(report.no_quorum);
    CHECK(report.reachable.yes == 1);
  }
}

TEST_CASE("reachable: a replica never counts as a vote") {
  auto servers = healthy_servers(3);
  servers[2].role = "slave";
  Check c = check_reachable(servers);
  CHECK(c.verdict == Verdict::Warn);
  CHECK(c.summary == "2 of 3 servers answered; a quorum is 2");
  REQUIRE(c.notes.size() == 1);
  CHECK(c.notes[0].text == "a replica: it never counts as a vote");
  DoctorReport report = assess(servers, options());
  CHECK(report.reachable.yes == 2);
  CHECK(report.verdict == Verdict::Fail);  // the master check fails it
  servers[1].role = "slave";
  CHECK(assess(servers, options()).no_quorum);
}

TEST_CASE("master: replicas fail, a master with replicas warns, a refused ROLE is unknown") {
  auto servers = healthy_servers(3);
  CHECK(check_master(servers).verdict == Verdict::Ok);
  servers[0].replicas = 1;
  CHECK(check_master(servers).verdict == Verdict::Warn);
  servers[1].role = "slave";
  servers[1].master_of = "10.0.0.1:6379";
  Check c = check_master(servers);
  CHECK(c.verdict == Verdict::Fail);
  CHECK(c.notes.back().text == "a replica of 10.0.0.1:6379");
  CHECK_FALSE(c.advice.empty());

  auto refused = healthy_servers(3);
  refused[2].role.reset();
  refused[2].role_error = "auth: NOPERM";
  CHECK(check_master(refused).verdict == Verdict::Unknown);
  // An unreachable server is the reachable check's business only.
  refused[2].reachable = false;
  CHECK(check_master(refused).verdict == Verdict::Ok);
}

TEST_CASE("distinct: the same run_id twice or a duplicate connection fails; no run_id is unknown") {
  auto servers = healthy_servers(3);
  CHECK(check_distinct(servers).verdict == Verdict::Ok);
  servers[2].run_id = servers[0].run_id;
  Check c = check_distinct(servers);
  CHECK(c.verdict == Verdict::Fail);
  REQUIRE(c.notes.size() == 1);
  CHECK(c.notes[0].server == 2);

  auto dup = healthy_servers(3);
  dup[1] = ServerFacts{};
  dup[1].reachable = dup[1].duplicate = true;
  dup[1].error = "the same Redis server as redis://fake:7000";
  CHECK(check_distinct(dup).verdict == Verdict::Fail);

  auto hidden = healthy_servers(3);
  hidden[0].run_id.reset();
  CHECK(check_distinct(hidden).verdict == Verdict::Unknown);
}

TEST_CASE("persistence: only appendonly with appendfsync always is ok; CONFIG refused is unknown") {
  auto servers = healthy_servers(3);
  CHECK(check_persistence(servers, options()).verdict == Verdict::Ok);

  SUBCASE("appendonly no") {
    servers[0].aof = false;
    Check c = check_persistence(servers, options(30s));
    CHECK(c.verdict == Verdict::Warn);
    CHECK(c.summary == "1 of 3 servers can forget locks in a crash or restart");
    CHECK(c.advice.find("must stay out for the longest TTL (30s)") != std::string::npos);
  }
  SUBCASE("appendfsync everysec") {
    servers[1].appendfsync = "everysec";
    CHECK(check_persistence(servers, options()).verdict == Verdict::Warn);
  }
  SUBCASE("appendonly yes but CONFIG GET refused") {
    servers[2].appendfsync.reset();
    servers[2].config_error = "auth: NOPERM";
    Check c = check_persistence(servers, options());
    CHECK(c.verdict == Verdict::Unknown);
    CHECK(c.notes[0].text.find("appendfsync unknown") != std::string::npos);
  }
  SUBCASE("appendonly no, whatever CONFIG says") {
    servers[2].aof = false;
    servers[2].appendfsync.reset();
    CHECK(check_persistence(servers, options()).verdict == Verdict::Warn);
  }
}

TEST_CASE("clock: a skew beyond the drift allowance warns, one within the measurement error does not") {
  auto servers = healthy_servers(3);
  const TimePoint t0 = servers[0].clock->sent;
  auto skew_of = [](const std::vector<ServerFacts>& s) {
    std::vector<std::optional<ClockSample>> samples;
    for (const auto& f : s) samples.push_back(f.clock);
    return measure_skew(samples);
  };
  CHECK(check_clock(servers, skew_of(servers), options()).verdict == Verdict::Ok);

  // The allowance for 30s at drift 0.01 is 302ms.
  servers[2].clock->server_us += 400'000;
  Check ahead = check_clock(servers, skew_of(servers), options(30s));
  CHECK(ahead.verdict == Verdict::Warn);
  REQUIRE(ahead.notes.size() == 1);
  CHECK(ahead.notes[0].server == 2);
  CHECK(ahead.notes[0].text.find("ahead of") != std::string::npos);
  // A longer TTL allows more.
  CHECK(check_clock(servers, skew_of(servers), options(60s)).verdict == Verdict::Ok);

  // 400ms apart, but with round trips that long it may be nothing at all.
  servers[2].clock->round_trip = 500ms;
  servers[2].clock->sent = t0 - 250ms;
  CHECK(check_clock(servers, skew_of(servers), options(30s)).verdict == Verdict::Ok);

  auto one = healthy_servers(3);
  one[1].clock.reset();
  one[1].clock_error = "auth: NOPERM";
  CHECK(check_clock(one, skew_of(one), options()).verdict == Verdict::Unknown);
}

TEST_CASE("uptime: younger than the longest TTL warns, unless every write is on disk") {
  auto servers = healthy_servers(3);
  servers[0].uptime_s = 5;
  CHECK(check_uptime(servers, options(30s)).verdict == Verdict::Ok);  // appendfsync always
  servers[0].appendfsync = "everysec";
  Check c = check_uptime(servers, options(30s));
  CHECK(c.verdict == Verdict::Warn);
  CHECK(c.notes[0].text == "up for 5s, less than the TTL 30s");
  CHECK(check_uptime(servers, options(5s)).verdict == Verdict::Ok);
  servers[1].uptime_s.reset();
  CHECK(check_uptime(servers, options(1s)).verdict == Verdict::Unknown);
}

TEST_CASE("acl: a refusal fails, an unfinished probe is unknown, a key left behind warns") {
  auto servers = healthy_servers(3);
  CHECK(check_acl(servers, "k").verdict == Verdict::Ok);

  servers[1].denied = {"SUBSCRIBE: NOPERM", "release script: ERR no permission"};
  Check c = check_acl(servers, "k");
  CHECK(c.verdict == Verdict::Fail);
  CHECK(c.notes[0].text == "refused: SUBSCRIBE: NOPERM; release script: ERR no permission");
  servers[1].probe_key_left = true;
  c = check_acl(servers, "k");
  CHECK(c.notes.size() == 2);
  CHECK(c.summary.find("on 1 server ") != std::string::npos);  // one server, two notes

  auto unfinished = healthy_servers(3);
  unfinished[0].probed = false;
  unfinished[0].probe_error = "acquire script: timeout: no answer within 100ms";
  CHECK(check_acl(unfinished, "k").verdict == Verdict::Unknown);
  unfinished[0].probe_key_left = true;
  CHECK(check_acl(unfinished, "k").verdict == Verdict::Warn);
}

TEST_CASE("acl: a replica's READONLY is no ACL refusal") {
  auto servers = healthy_servers(3);
  servers[2].role = "slave";
  servers[2].denied = {"acquire script: READONLY You can't write against a read only replica."};
  Check c = check_acl(servers, "k");
  CHECK(c.verdict == Verdict::Unknown);
  REQUIRE(c.notes.size() == 1);
  CHECK(c.notes[0].text == "a slave refuses writes: the ACL cannot be probed here");
}

TEST_CASE("latency: above half of --timeout warns, connect included") {
  auto servers = healthy_servers(3);
  CHECK(check_latency(servers, options()).verdict == Verdict::Ok);
  servers[1].first_latency = 51ms;
  Check c = check_latency(servers, options());
  CHECK(c.verdict == Verdict::Warn);
  REQUIRE(c.notes.size() == 1);
  CHECK(c.notes[0].server == 1);
  servers[1].first_latency = 50ms;
  CHECK(check_latency(servers, options()).verdict == Verdict::Ok);
  for (auto& f : servers) f.reachable = false;
  CHECK(check_latency(servers, options()).verdict == Verdict::Unknown);
}

TEST_CASE("assess: the overall verdict is the worst check's; unknown alone leaves it fit") {
  auto servers = healthy_servers(5);
  DoctorReport fit = assess(servers, options());
  CHECK(fit.verdict == Verdict::Ok);
  CHECK_FALSE(fit.no_quorum);
  CHECK(fit.checks.size() == 14);

  servers[0].appendfsync.reset();
  CHECK(assess(servers, options()).verdict == Verdict::Unknown);
  servers[1].aof = false;
  CHECK(assess(servers, options()).verdict == Verdict::Warn);
}

TEST_CASE("run_doctor on the fake: frozen servers cost one timeout and are asked nothing more") {
  FakeNetwork net(5, 100ms);
  for (std::size_t i : Ids{0, 2, 4}) net.servers[i].frozen = true;
  DoctorOptions o = options();
  o.probe_key = doctor_probe_key("jobs:");
  TimePoint start = net.now();
  DoctorReport r = run_doctor(net, o);
  CHECK(net.now() - start < 150ms);
  CHECK(r.no_quorum);
  CHECK(r.reachable.yes == 2);
  for (std::size_t i : Ids{0, 2, 4}) {
    CHECK_FALSE(r.servers[i].reachable);
    CHECK(net.servers[i].backlog.size() == 1);  // the PING only
  }
}

TEST_CASE("run_doctor on the fake: the probe runs every script and cleans up after itself") {
  FakeNetwork net(3);
  DoctorOptions o = options();
  o.probe_key = doctor_probe_key("jobs:");
  CHECK(o.probe_key.rfind("jobs:redlock-doctor:", 0) == 0);
  CHECK(o.probe_key.size() == std::string("jobs:redlock-doctor:").size() + 32);
  DoctorReport r = run_doctor(net, o);
  CHECK_FALSE(r.no_quorum);
  const LockKeys keys = derive_keys(o.probe_key);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& data = net.servers[i].data;
    CHECK(data.count(keys.lock) == 0);
    CHECK(data.count(keys.owner) == 0);
    const auto& log = net.servers[i].log;
    for (const char* script : {"acquire", "extend", "status", "fence", "release"}) {
      CHECK(std::find(log.begin(), log.end(), script) != log.end());
    }
    // The fencing counter goes with a plain DEL after the release. The fake runs scripts only, so
    // a counter that taking the lock made stays there: the doctor must say so, and only then.
    auto released = std::find(log.begin(), log.end(), "release");
    CHECK(std::find(released, log.end(), "DEL") != log.end());
    CHECK(r.servers[i].probe_key_left == (data.count(keys.fence) == 1));
    CHECK(data.size() == data.count(keys.fence));
    CHECK(r.servers[i].reachable);
    // The fake knows no SUBSCRIBE: that is reported as refused, and nothing else is.
    REQUIRE(r.servers[i].denied.size() == 1);
    CHECK(r.servers[i].denied[0].rfind("SUBSCRIBE:", 0) == 0);
  }
}

TEST_CASE("fences: the most counted on one server; a refused TIME warns, a refused SCAN is unknown") {
  auto servers = healthy_servers(3);
  servers[0].fence_keys = 12;
  servers[1].fence_keys = 14;
  Check c = check_fences(servers, "jobs:");
  CHECK(c.verdict == Verdict::Ok);
  CHECK(c.summary.rfind("14 fencing counters under the prefix 'jobs:'", 0) == 0);
  servers[2].fence_scan_complete = false;
  CHECK(check_fences(servers, "jobs:").summary.rfind("at least 14 fencing counters", 0) == 0);
  servers[1].fence_keys.reset();
  servers[1].fence_scan_error = "reply: NOPERM scan";
  servers[2].clock.reset();
  servers[2].clock_error = "auth: NOPERM this user has no permissions to run the 'time' command";
  c = check_fences(servers, "jobs:");
  CHECK(c.verdict == Verdict::Warn);
  REQUIRE(c.notes.size() == 2);
  CHECK(c.notes[0].verdict == Verdict::Unknown);
  CHECK(c.notes[1].text == "TIME refused: fencing counters never expire here");
  CHECK(c.advice.find("+time") != std::string::npos);
}

TEST_CASE("fence keys: the pattern escapes the prefix's glob characters, and the keys are sorted out") {
  CHECK(fence_key_pattern("") == "*:redlock:fence");
  CHECK(fence_key_pattern("a*b?[c]\\:") == "*a\\*b\\?\\[c\\]\\\\:*:redlock:fence");
  CHECK(fence_key_under("{jobs:build-1}:redlock:fence", "jobs:"));
  CHECK(fence_key_under("jobs:{tag}x:redlock:fence", "jobs:"));
  CHECK(fence_key_under("{anything}:redlock:fence", ""));
  CHECK_FALSE(fence_key_under("{other:jobs:x}:redlock:fence", "jobs:"));
  CHECK_FALSE(fence_key_under("{jobs:x}:redlock:owner", "jobs:"));
  CHECK_FALSE(fence_key_under("jobs:x", "jobs:"));
}

TEST_CASE("run_doctor on the fake: a Cluster member is asked master by master, and counted once") {
  FakeNetwork net(3);
  auto& cluster = net.servers[0];
  cluster.cluster = true;
  auto node = [](int port) {
    return Reply::array({Reply::string("127.0.0.1"), Reply::number(port), Reply::string("id")});
  };
  Result slots;
  slots.reply = Reply::array({
      Reply::array({Reply::number(0), Reply::number(99), node(7000)}),
      Reply::array({Reply::number(100), Reply::number(16383), node(7001)}),
  });
  cluster.answers["CLUSTER SLOTS"] = slots;
  Result ok, fail;
  ok.reply = Reply::string("cluster_state:ok\r\ncluster_slots_assigned:16384\r\n");
  fail.reply = Reply::string("cluster_state:fail\r\n");
  cluster.answers["@127.0.0.1:7000 CLUSTER INFO"] = ok;
  cluster.answers["@127.0.0.1:7001 CLUSTER INFO"] = fail;
  DoctorOptions o = options();
  o.probe_key = doctor_probe_key("");
  DoctorReport r = run_doctor(net, o);
  REQUIRE(r.servers.size() == 4);
  CHECK(r.reachable.total == 3);
  CHECK(r.reachable.yes == 3);
  CHECK(r.servers[0].node == "127.0.0.1:7000");
  CHECK(r.servers[1].node == "127.0.0.1:7001");
  CHECK(r.servers[0].member == 0u);
  CHECK(r.servers[1].member == 0u);
  CHECK(r.servers[2].member == 1u);
  CHECK(r.servers[3].node.empty());
  CHECK(r.servers[0].cluster_state == "ok");
  CHECK(r.servers[1].cluster_state == "fail");
  CHECK_FALSE(r.servers[2].cluster_state);
  // The probe ran on each master.
  const auto& log = cluster.log;
  const auto probes = std::count(log.begin(), log.end(), "acquire");
  CHECK(probes == 2);
  const auto& cluster_check =
      *std::find_if(r.checks.begin(), r.checks.end(), [](const Check& c) { return c.name == "cluster"; });
  CHECK(cluster_check.verdict == Verdict::Fail);
  // (The fake answers no INFO: the standalone servers' notes are unknown.)
  std::vector<std::size_t> failed;
  for (const auto& note : cluster_check.notes) {
    if (note.verdict == Verdict::Fail) failed.push_back(note.server);
  }
  CHECK(failed == std::vector<std::size_t>{1});
  // The standalone servers were never asked CLUSTER anything.
  for (std::size_t i : Ids{1, 2})
    CHECK(std::count(net.servers[i].log.begin(), net.servers[i].log.end(), "CLUSTER") == 0);
  CHECK(std::count(log.begin(), log.end(), "CLUSTER") == 3);  // SLOTS, then INFO of each master
}

TEST_CASE("run_doctor on the fake: counts the fencing counters under the prefix, and only those") {
  FakeNetwork net(3);
  for (std::size_t i = 0; i < 3; ++i) {
    for (int k = 0; k < 4; ++k) net.set(i, derive_keys("jobs:" + std::to_string(k)).fence, "1", 1h);
    net.set(i, derive_keys("other:1").fence, "1", 1h);
    net.set(i, "jobs:1", "token", 1h);
  }
  DoctorOptions o = options();
  o.prefix = "jobs:";
  o.probe_key = doctor_probe_key(o.prefix);
  DoctorReport r = run_doctor(net, o);
  for (std::size_t i = 0; i < 3; ++i) {
    // The probe's own counter is still there on the fake (see the test above): it is one more.
    const std::size_t probe = r.servers[i].probe_key_left ? 1 : 0;
    CHECK(r.servers[i].fence_keys == 4 + probe);
    CHECK(r.servers[i].fence_scan_complete);
  }
  auto fences = std::find_if(r.checks.begin(), r.checks.end(), [](const Check& c) { return c.name == "fences"; });
  REQUIRE(fences != r.checks.end());
  CHECK(fences->verdict == Verdict::Ok);
}

TEST_CASE("cluster: a cluster node listed as a standalone master fails; INFO refused is unknown") {
  auto servers = healthy_servers(3);
  CHECK(check_cluster(servers).verdict == Verdict::Ok);
  servers[1].cluster_enabled = true;
  Check c = check_cluster(servers);
  CHECK(c.verdict == Verdict::Fail);
  REQUIRE(c.notes.size() == 1);
  CHECK(c.notes[0].server == 1);
  CHECK(c.advice.find("MOVED") != std::string::npos);
  servers[1].cluster_enabled.reset();
  servers[1].cluster_error = "NOPERM";
  CHECK(check_cluster(servers).verdict == Verdict::Unknown);
}

namespace {

// Two standalone servers after a Cluster member of three masters: five entries, three members.
std::vector<ServerFacts> cluster_and_two() {
  auto servers = healthy_servers(5);
  for (std::size_t i = 0; i < 5; ++i) servers[i].member = i < 3 ? 0 : i - 2;
  for (std::size_t i = 0; i < 3; ++i) {
    servers[i].server = "cluster://fake:7000";
    servers[i].cluster_member = true;
    servers[i].node = "fake:" + std::to_string(7000 + i);
    servers[i].cluster_enabled = true;
    servers[i].cluster_state = "ok";
  }
  return servers;
}

}  // namespace

TEST_CASE("cluster: a Cluster member's masters are cluster nodes, and must say cluster_state:ok") {
  auto servers = cluster_and_two();
  Check c = check_cluster(servers);
  CHECK(c.verdict == Verdict::Ok);
  CHECK(c.summary.find("cluster_state:ok") != std::string::npos);
  servers[1].cluster_state = "fail";
  c = check_cluster(servers);
  CHECK(c.verdict == Verdict::Fail);
  REQUIRE(c.notes.size() == 1);
  CHECK(c.notes[0].server == 1);
  CHECK(c.notes[0].text.find("cluster_state:fail") != std::string::npos);
  CHECK(c.advice.find("refuses every command") != std::string::npos);
  CHECK(c.advice.find("MOVED") == std::string::npos);
  servers[1].cluster_state.reset();
  servers[1].cluster_state_error = "NOPERM";
  CHECK(check_cluster(servers).verdict == Verdict::Unknown);
  // A standalone URL of a cluster node still fails, beside the member.
  servers[1].cluster_state = "ok";
  servers[4].cluster_enabled = true;
  c = check_cluster(servers);
  CHECK(c.verdict == Verdict::Fail);
  REQUIRE(c.notes.size() == 1);
  CHECK(c.notes[0].server == 4);
  CHECK(c.summary.find("1 of 2 servers is") != std::string::npos);
}

TEST_CASE("members: a Cluster member's masters count once, and vote only when every one answered") {
  auto servers = cluster_and_two();
  CHECK(count_members(servers) == 3);
  CHECK(member_votes(servers) == std::vector<bool>{true, true, true});
  DoctorReport r = assess(servers, options());
  CHECK(r.reachable.total == 3);
  CHECK(r.reachable.yes == 3);
  CHECK(r.verdict == Verdict::Ok);
  servers[2].reachable = false;
  servers[2].error = "connect: refused";
  CHECK(member_votes(servers) == std::vector<bool>{false, true, true});
  r = assess(servers, options());
  CHECK(r.reachable.yes == 2);
  CHECK_FALSE(r.no_quorum);
  const Check& reachable = r.checks[0];
  CHECK(reachable.verdict == Verdict::Warn);
  CHECK(reachable.summary == "2 of 3 servers answered; a quorum is 2");
  REQUIRE(reachable.notes.size() == 1);
  CHECK(reachable.notes[0].server == 2);
  servers[3].reachable = false;
  CHECK(assess(servers, options()).no_quorum);
  // Entries without a member are members of their own.
  CHECK(count_members(healthy_servers(4)) == 4);
  CHECK(check_fault_tolerance(count_members(cluster_and_two())).verdict == Verdict::Ok);
}

TEST_CASE("master and member-wait: a Cluster master with or without replicas; --member-wait N needs N") {
  auto servers = cluster_and_two();
  servers[0].replicas = 1;
  CHECK(check_master(servers).verdict == Verdict::Ok);
  DoctorOptions o;
  CHECK(check_member_wait(servers, o).verdict == Verdict::Ok);
  o.member_wait_replicas = 1;
  Check c = check_member_wait(servers, o);
  CHECK(c.verdict == Verdict::Fail);
  REQUIRE(c.notes.size() == 2);  // the masters without a replica
  CHECK(c.notes[0].server == 1);
  CHECK(c.notes[0].text.find("fake:7001 has 0 replicas") != std::string::npos);
  o.member_wait_replicas = 0;
  CHECK(check_member_wait(servers, o).verdict == Verdict::Ok);
  o.member_wait_replicas.reset();  // by the masters' replicas: the votes wait for WAIT
  servers[2].wait_error = "ERR unknown command 'WAIT'";
  CHECK(check_member_wait(servers, o).verdict == Verdict::Fail);
}

TEST_CASE("key_in_slots: a probe key that hashes to one of the slots given") {
  const std::string base = "redlock-doctor:probe";
  CHECK(key_in_slots(base, {}) == base);
  for (const auto& slots :
       std::vector<std::vector<std::pair<int, int>>>{{{0, 5460}}, {{16383, 16383}}, {{7, 9}, {100, 100}}}) {
    const std::string key = key_in_slots(base, slots);
    const int slot = key_slot(key);
    CHECK(std::any_of(slots.begin(), slots.end(), [&](const auto& r) { return r.first <= slot && slot <= r.second; }));
    CHECK(key.starts_with(base));
    // Every key the probe touches shares the slot.
    CHECK(key_slot(derive_keys(key).fence) == slot);
  }
  // A base with a hash tag of its own has one slot whatever follows: the base itself.
  const std::string tagged = "{t}redlock-doctor:probe";
  const int own = key_slot(tagged);
  CHECK(key_in_slots(tagged, {{(own + 1) % 16384, (own + 1) % 16384}}) == tagged);
}

TEST_CASE("eviction: any policy but noeviction fails with a maxmemory, warns without one") {
  auto servers = healthy_servers(3);
  CHECK(check_eviction(servers).verdict == Verdict::Ok);
  servers[0].maxmemory_policy = "volatile-lru";
  CHECK(check_eviction(servers).verdict == Verdict::Warn);
  servers[2].maxmemory_policy = "allkeys-lru";
  servers[2].maxmemory = 1 << 20;
  Check c = check_eviction(servers);
  CHECK(c.verdict == Verdict::Fail);
  CHECK(c.notes.size() == 2);
  CHECK(c.advice.find("evicted lock is a lost lock") != std::string::npos);
  servers[1].maxmemory_policy.reset();
  CHECK(check_eviction(servers).verdict == Verdict::Fail);
}

TEST_CASE("member-wait: a Sentinel member refusing WAIT fails, or warns under --member-wait 0") {
  auto servers = healthy_servers(3);
  servers[2].wait_error = "ERR unknown command 'WAIT'";  // a standalone server: never asked to wait
  DoctorOptions options;
  CHECK(check_member_wait(servers, options).verdict == Verdict::Ok);
  servers[1].sentinel_member = true;
  servers[1].wait_error = "ERR unknown command 'WAIT'";
  Check c = check_member_wait(servers, options);
  CHECK(c.verdict == Verdict::Fail);
  REQUIRE(c.notes.size() == 1);
  CHECK(c.notes[0].server == 1);
  CHECK(c.notes[0].text.find("never count") != std::string::npos);
  options.member_wait_replicas = 0;
  CHECK(check_member_wait(servers, options).verdict == Verdict::Warn);
}

TEST_CASE("master: a Sentinel group's master is meant to have replicas; one without any warns") {
  auto servers = healthy_servers(3);
  servers[0].sentinel_member = true;
  servers[0].replicas = 1;
  CHECK(check_master(servers).verdict == Verdict::Ok);
  servers[0].replicas = 0;
  Check c = check_master(servers);
  CHECK(c.verdict == Verdict::Warn);
  REQUIRE(c.notes.size() == 1);
  CHECK(c.notes[0].text.find("without replicas") != std::string::npos);
  servers[1].replicas = 2;  // a standalone master with replicas still warns
  CHECK(check_master(servers).notes.size() == 2);
}

namespace {

// What three seed sentinels that all answered OK, knowing one replica, say.
SentinelFacts sound_sentinels() {
  SentinelFacts s;
  s.listed = 3;
  s.answered = 3;
  s.quorum_ok = 3;
  s.replicas = 1;
  return s;
}

}  // namespace

TEST_CASE("sentinel: without Sentinel members the check is ok and says so") {
  auto servers = healthy_servers(3);
  Check c = check_sentinel(servers);
  CHECK(c.verdict == Verdict::Ok);
  CHECK(c.summary == "no Sentinel member");
  CHECK(c.notes.empty());
}

TEST_CASE("sentinel: one note per member; silent seeds or no replica warn; no answer or no quorum fails") {
  auto servers = healthy_servers(3);
  for (std::size_t i : Ids{0, 1}) {
    servers[i].sentinel_member = true;
    servers[i].sentinels = sound_sentinels();
  }
  Check c = check_sentinel(servers);
  CHECK(c.verdict == Verdict::Ok);
  REQUIRE(c.notes.size() == 2);
  CHECK(c.notes[0].verdict == Verdict::Ok);
  CHECK(c.notes[0].text.rfind("3 of 3 sentinels answered; CKQUORUM OK", 0) == 0);
  CHECK(c.notes[0].text.find("1 replica they could promote") != std::string::npos);
  CHECK(c.summary.find("2 Sentinel members") != std::string::npos);
  CHECK(c.advice.empty());

  SUBCASE("a seed sentinel silent warns, and names it") {
    auto& s = *servers[1].sentinels;
    s.answered = 2;
    s.quorum_ok = 2;
    s.silent = {"127.0.0.1:26381: connect: Connection refused"};
    c = check_sentinel(servers);
    CHECK(c.verdict == Verdict::Warn);
    CHECK(c.notes[0].verdict == Verdict::Ok);
    CHECK(c.notes[1].verdict == Verdict::Warn);
    CHECK(c.notes[1].text.find("2 of 3 sentinels answered (silent: 127.0.0.1:26381") == 0);
    CHECK(c.summary == "1 of 2 Sentinel members short of sentinels or replicas");
    CHECK_FALSE(c.advice.empty());
  }
  SUBCASE("no replica the sentinels could promote warns: a failover loses its locks") {
    servers[0].sentinels->replicas = 0;
    c = check_sentinel(servers);
    CHECK(c.verdict == Verdict::Warn);
    CHECK(c.notes[0].text.find("a failover loses its locks") != std::string::npos);
  }
  SUBCASE("no sentinel answering fails") {
    auto& s = *servers[0].sentinels;
    s.answered = s.quorum_ok = 0;
    s.replicas.reset();
    s.silent = {"a:1: connect: refused", "b:1: connect: refused", "c:1: timeout: no answer within 100ms"};
    c = check_sentinel(servers);
    CHECK(c.verdict == Verdict::Fail);
    CHECK(c.notes[0].verdict == Verdict::Fail);
    CHECK(c.notes[0].text.rfind("no sentinel of 3 answered (a:1: connect: refused;", 0) == 0);
    CHECK(c.summary == "1 of 2 Sentinel members cannot be failed over");
  }
  SUBCASE("CKQUORUM's NOQUORUM from every sentinel that answered fails") {
    auto& s = *servers[0].sentinels;
    s.answered = 1;
    s.quorum_ok = 0;
    s.silent = {"a:1: connect: refused", "b:1: connect: refused"};
    s.no_quorum = {"c:1: NOQUORUM 1 usable Sentinels. Not enough available Sentinels to reach the specified quorum"};
    c = check_sentinel(servers);
    CHECK(c.verdict == Verdict::Fail);
    CHECK(c.notes[0].text.find("no failover possible: c:1: NOQUORUM") != std::string::npos);
  }
  SUBCASE("sentinels that disagree on the quorum warn") {
    auto& s = *servers[0].sentinels;
    s.quorum_ok = 2;
    s.no_quorum = {"c:1: NOQUORUM 1 usable Sentinels."};
    c = check_sentinel(servers);
    CHECK(c.verdict == Verdict::Warn);
    CHECK(c.notes[0].text.find("CKQUORUM OK from 2, not from c:1") != std::string::npos);
  }
  SUBCASE("CKQUORUM refused everywhere is unknown") {
    auto& s = *servers[0].sentinels;
    s.quorum_ok = 0;
    s.refused = {"a:1: NOPERM", "b:1: NOPERM", "c:1: NOPERM"};
    s.replicas.reset();
    c = check_sentinel(servers);
    CHECK(c.verdict == Verdict::Unknown);
    CHECK(c.notes[0].text.find("replicas unknown") != std::string::npos);
  }
  SUBCASE("a member listed twice is noted once") {
    servers[1].duplicate = true;
    CHECK(check_sentinel(servers).notes.size() == 1);
  }
}

TEST_CASE("run_doctor on the fake: every seed sentinel asked CKQUORUM and REPLICAS at once, within the timeout") {
  FakeNetwork net(3);
  FakeNetwork sentinels(3, 100ms);
  // A replica the sentinels have seen replicating, as SENTINEL REPLICAS lists it.
  const Reply replica =
      Reply::array({Reply::string("flags"), Reply::string("slave"), Reply::string("role-reported"),
                    Reply::string("slave"), Reply::string("master-host"), Reply::string("127.0.0.1")});
  Result ok;
  ok.reply = Reply::status("OK 3 usable Sentinels. Quorum and failover authorization can be reached");
  Result replicas;
  replicas.reply = Reply::array({replica});
  Result no_quorum;
  no_quorum.failure = Failure::Reply;
  no_quorum.error = "NOQUORUM 1 usable Sentinels. Not enough available Sentinels to reach the specified quorum";
  for (std::size_t k = 0; k < 3; ++k) {
    // Sentinel 0 and 1 watch m0 (server 0) and m1 (server 1); sentinel 2 watches m1 only.
    sentinels.servers[k].answers["SENTINEL CKQUORUM m0"] = ok;
    sentinels.servers[k].answers["SENTINEL REPLICAS m0"] = replicas;
    sentinels.servers[k].answers["SENTINEL CKQUORUM m1"] = k == 2 ? no_quorum : ok;
    sentinels.servers[k].answers["SENTINEL REPLICAS m1"] = replicas;
  }
  sentinels.servers[1].frozen = true;
  SentinelSeeds seeds{
      sentinels,
      {{"s0:26379", {{0, "m0"}, {1, "m1"}}}, {"s1:26379", {{0, "m0"}, {1, "m1"}}}, {"s2:26379", {{1, "m1"}}}}};
  DoctorOptions o = options();
  o.probe_key = doctor_probe_key("");
  const TimePoint before = sentinels.now();
  DoctorReport r = run_doctor(net, o, &seeds);
  CHECK(sentinels.now() - before < 150ms);  // one timeout for the frozen sentinel, not one per question
  for (std::size_t k : Ids{0, 2}) CHECK(sentinels.servers[k].log.size() == (k == 0 ? 4 : 2));
  REQUIRE(r.servers[0].sentinels);
  REQUIRE(r.servers[1].sentinels);
  CHECK_FALSE(r.servers[2].sentinels);
  const SentinelFacts& m0 = *r.servers[0].sentinels;
  CHECK(m0.listed == 2);
  CHECK(m0.answered == 1);
  CHECK(m0.quorum_ok == 1);
  REQUIRE(m0.silent.size() == 1);
  CHECK(m0.silent[0].rfind("s1:26379: timeout", 0) == 0);
  CHECK(m0.replicas == 1);
  const SentinelFacts& m1 = *r.servers[1].sentinels;
  CHECK(m1.listed == 3);
  CHECK(m1.answered == 2);
  CHECK(m1.quorum_ok == 1);
  REQUIRE(m1.no_quorum.size() == 1);
  CHECK(m1.no_quorum[0].rfind("s2:26379: NOQUORUM", 0) == 0);
  const Check& c = r.checks.back();
  CHECK(c.name == "sentinel");
  CHECK(c.verdict == Verdict::Warn);
  CHECK(c.notes.size() == 2);
}
