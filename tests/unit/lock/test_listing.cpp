#include <doctest/doctest.h>

#include "core/lock/listing.hpp"

using namespace redlock;

TEST_CASE("the scan looks for the locks under the prefix and the fences of free ones") {
  CHECK(scan_patterns("", "*") == std::vector<std::string>{"*"});
  CHECK(scan_patterns("locks:", "*") == std::vector<std::string>{"locks:*", "{locks:*}:redlock:fence"});
  CHECK(scan_patterns("a*[", "job?") == std::vector<std::string>{"a\\*\\[job?", "{a\\*\\[job?}:redlock:fence"});
}

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
