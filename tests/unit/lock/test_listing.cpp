#include <doctest/doctest.h>

#include "core/lock/listing.hpp"
#include "fake_network.hpp"

using namespace redlock;
using namespace std::chrono_literals;
using redlock::test::FakeNetwork;

TEST_CASE("the scan looks for the locks under the prefix and their helper keys") {
  CHECK(scan_patterns("", "*") == std::vector<std::string>{"*"});
  CHECK(scan_patterns("locks:", "*") == std::vector<std::string>{"locks:*", "{locks:*}:redlock:*"});
  CHECK(scan_patterns("a*[", "job?") == std::vector<std::string>{"a\\*\\[job?", "{a\\*\\[job?}:redlock:*"});
}

namespace {

std::optional<std::string> listed_lock_key(const std::string& key, const std::string& prefix,
                                           const std::string& pattern) {
  auto found = found_key(key, prefix, pattern);
  if (!found) return std::nullopt;
  CHECK_FALSE(found->semaphore());
  CHECK(found->read == found->lock);
  return found->lock;
}

}  // namespace

TEST_CASE("a key found stands for its lock: helpers never, fences for the lock they count for") {
  CHECK(listed_lock_key("locks:job", "locks:", "*") == "locks:job");
  CHECK(listed_lock_key("{locks:job}:redlock:fence", "locks:", "*") == "locks:job");
  CHECK(listed_lock_key("locks:{eu}:job:redlock:fence", "locks:", "*") == "locks:{eu}:job");
  CHECK_FALSE(listed_lock_key("{locks:job}:redlock:owner", "locks:", "*"));
  CHECK_FALSE(listed_lock_key("locks:{eu}:job:redlock:owner", "locks:", "*"));
  CHECK_FALSE(listed_lock_key("{locks:job}:redlock:readers", "locks:", "*"));
  // Outside the prefix, or a NAME the pattern does not match (a tagged lock's fence matched it).
  CHECK_FALSE(listed_lock_key("{other:job}:redlock:fence", "locks:", "*"));
  CHECK_FALSE(listed_lock_key("locks:", "locks:", "*"));
  CHECK_FALSE(listed_lock_key("locks:{eu}:job:redlock:fence", "locks:", "*fence"));
  CHECK(listed_lock_key("locks:{eu}:job", "locks:", "{eu}*") == "locks:{eu}:job");
}

TEST_CASE("a semaphore's slots, their fences and its limit stand for the semaphore") {
  auto slot = found_key("{locks:batch}:redlock:slot:12", "locks:", "b*");
  REQUIRE(slot);
  CHECK(slot->lock == "locks:batch");
  CHECK(slot->read == "{locks:batch}:redlock:slot:12");
  CHECK(slot->slot == 12u);
  auto fence = found_key("{locks:batch}:redlock:slot:3:redlock:fence", "locks:", "*");
  REQUIRE(fence);
  CHECK(fence->lock == "locks:batch");
  CHECK(fence->read == "{locks:batch}:redlock:slot:3");
  CHECK(fence->slot == 3u);
  auto limit = found_key("{locks:batch}:redlock:limit", "locks:", "*");
  REQUIRE(limit);
  CHECK((limit->limit && !limit->slot && limit->lock == "locks:batch"));
  CHECK_FALSE(found_key("{locks:batch}:redlock:slot:3:redlock:owner", "locks:", "*"));
  CHECK_FALSE(found_key("{locks:batch}:redlock:slot:1", "locks:", "a*"));
}

namespace {

LockReading held(const std::string& token, std::int64_t ttl_ms, std::int64_t fence = 1) {
  return LockReading{"string", token, ttl_ms, std::string("1700000000000/30000 alice@host:1"), fence};
}

}  // namespace

TEST_CASE("the state rule of status and list") {
  const LockReading none;
  SUBCASE("held on a quorum: its token, the quorum's TTL, the owner, servers holding it") {
    auto v = judge_lock({held("t", 900), held("t", 1000, 3), none, held("t", 800), std::nullopt});
    CHECK(v.state == LockState::Held);
    CHECK(v.token == "t");
    CHECK(v.ttl_ms == 800);
    CHECK(v.owner == "alice@host:1");
    CHECK(v.since_unix_ms == 1700000000000);
    CHECK(v.fence == 3);
    CHECK(v.servers_held == 3);
  }
  SUBCASE("held on one of three is partial; nothing on a quorum is free") {
    auto partial = judge_lock({held("t", 900), none, none, std::nullopt, std::nullopt});
    CHECK(partial.state == LockState::Partial);
    CHECK(partial.servers_held == 1);
    CHECK_FALSE(partial.token);
    CHECK(judge_lock({held("t", 900), none, none}).state == LockState::Free);
    CHECK(judge_lock({held("a", 900), held("b", 900), none}).state == LockState::Partial);
  }
  SUBCASE("fewer than a quorum answered: unknown") {
    CHECK(judge_lock({none, std::nullopt, std::nullopt}).state == LockState::Unknown);
  }
}

TEST_CASE("a semaphore's row: its limit, its held slots, the state over all of them") {
  const LockReading none;
  const LockReading limit{"string", std::string("3"), -1, std::nullopt, 0};
  const LockReading other_limit{"string", std::string("2"), -1, std::nullopt, 0};
  SUBCASE("two of three slots held, a free slot with a fence") {
    auto row = judge_semaphore("batch", "batch", {limit, limit, other_limit},
                               {{2, {held("b", 900, 7), held("b", 800, 7), none}},
                                {0, {held("a", 900, 4), held("a", 900, 4), held("a", 900, 4)}},
                                {1, {LockReading{"none", std::nullopt, -2, std::nullopt, 9}, none, none}}});
    CHECK(row.mode == "semaphore");
    CHECK(row.limit == 3u);
    CHECK(row.verdict.state == LockState::Held);
    CHECK(row.verdict.fence == 9);
    REQUIRE(row.holders.size() == 2);
    CHECK(row.holders[0].slot == 0);
    CHECK(row.holders[1].slot == 2);
    CHECK(row.holders[1].verdict.token == "b");
    CHECK(row.holders[1].verdict.ttl_ms == 800);
  }
  SUBCASE("no slot held: free, or partial when a slot is held on a minority") {
    CHECK(judge_semaphore("b", "b", {limit, none, none}, {}).verdict.state == LockState::Free);
    auto partial = judge_semaphore("b", "b", {}, {{0, {held("a", 900), none, held("c", 900)}}});
    CHECK(partial.verdict.state == LockState::Partial);
    CHECK_FALSE(partial.limit);
    CHECK(partial.holders.empty());
  }
}

namespace {

Reply scan_reply(std::vector<std::string> keys) {
  std::vector<Reply> found;
  for (auto& k : keys) found.push_back(Reply::string(std::move(k)));
  return Reply::array({Reply::string("0"), Reply::array(std::move(found))});
}

Result answer(Reply reply) {
  Result r;
  r.reply = std::move(reply);
  return r;
}

Reply cluster_node(const char* host, int port) {
  return Reply::array({Reply::string(host), Reply::number(port), Reply::string("id")});
}

}  // namespace

TEST_CASE("a Cluster member: every master of its map walked, each lock read alone, found once") {
  FakeNetwork net(3);
  for (std::size_t i = 0; i < 3; ++i) {
    for (const char* key : {"job1", "job2"})
      net.servers[i].data[key] = FakeNetwork::Entry{std::string("tok-") + key, "string", net.now() + 30s};
    net.servers[i].answers["SCAN 0 MATCH * COUNT 1000"] = answer(scan_reply({"job1", "job2"}));
  }
  auto& cluster = net.servers[0];
  cluster.cluster = true;
  cluster.answers["CLUSTER SLOTS"] = answer(Reply::array({
      Reply::array({Reply::number(0), Reply::number(8191), cluster_node("127.0.0.1", 7000)}),
      Reply::array({Reply::number(8192), Reply::number(16383), cluster_node("127.0.0.1", 7001)}),
  }));
  // job1 on both masters (one of them does not own its slot): read once all the same.
  cluster.answers["@127.0.0.1:7000 SCAN 0 MATCH * COUNT 1000"] = answer(scan_reply({"job1"}));
  cluster.answers["@127.0.0.1:7001 SCAN 0 MATCH * COUNT 1000"] = answer(scan_reply({"job2", "job1"}));

  ListResult r = list_locks(net, ListOptions{});
  CHECK(r.tally.yes == 3);
  REQUIRE(r.locks.size() == 2);
  for (const auto& lock : r.locks) {
    CHECK(lock.verdict.state == LockState::Held);
    CHECK(lock.verdict.servers_held == 3);
    CHECK(lock.verdict.token == "tok-" + lock.name);
  }
  CHECK(cluster.log == std::vector<std::string>{"CLUSTER", "SCAN", "SCAN", "list", "list"});
  CHECK(cluster.nodes == std::vector<std::string>{"*", "127.0.0.1:7000", "127.0.0.1:7001", "", ""});
  // A standalone server: one walk, one read of both.
  CHECK(net.servers[1].log == std::vector<std::string>{"SCAN", "list"});
  CHECK(net.servers[1].nodes == std::vector<std::string>{"", ""});
}

TEST_CASE("a Cluster member whose map names no master has failed; the others list on") {
  FakeNetwork net(3);
  for (std::size_t i = 0; i < 3; ++i) net.servers[i].answers["SCAN 0 MATCH * COUNT 1000"] = answer(scan_reply({}));
  net.servers[0].cluster = true;
  net.servers[0].answers["CLUSTER SLOTS"] = answer(Reply::array({}));
  ListResult r = list_locks(net, ListOptions{});
  CHECK(r.tally.yes == 2);
  CHECK_FALSE(r.no_quorum);
  REQUIRE(r.servers.size() == 3);
  CHECK_FALSE(r.servers[0].ok);
  CHECK(r.servers[0].error.find("names no master") != std::string::npos);
  CHECK(net.servers[0].log == std::vector<std::string>{"CLUSTER"});
}
