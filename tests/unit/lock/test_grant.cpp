#include <doctest/doctest.h>

#include "core/lock/grant.hpp"

using namespace redlock;

namespace {

Result answer(Reply reply) {
  Result r;
  r.reply = std::move(reply);
  return r;
}

// The answers of a server to grant_requests: the two reads, the PEXPIRE, the fence, the owner's PEXPIRE.
std::vector<Result> answers(Reply before, Reply set_ttl, Reply after, Reply fence) {
  return {answer(std::move(before)), answer(std::move(set_ttl)), answer(std::move(after)), answer(std::move(fence)),
          answer(Reply::number(1))};
}

std::optional<std::int64_t> fence_of(const std::vector<Result>& results) {
  std::vector<const Result*> pointers;
  for (const auto& r : results) pointers.push_back(&r);
  return granted_fence(pointers, "tok");
}

}  // namespace

TEST_CASE("a handed-over lock is taken with plain commands: read, PEXPIRE GT to the TTL, read, fence") {
  const auto steps = grant_requests(derive_keys("job"), "30000");
  REQUIRE(steps.size() == 5);
  for (const auto& r : steps) CHECK(r.script == nullptr);
  CHECK(steps[0].argv == std::vector<std::string>{"GET", "job"});
  CHECK(steps[1].argv == std::vector<std::string>{"PEXPIRE", "job", "30000", "GT"});
  CHECK(steps[2].argv == std::vector<std::string>{"GET", "job"});
  CHECK(steps[3].argv == std::vector<std::string>{"GET", "{job}:redlock:fence"});
  CHECK(steps[4].argv == std::vector<std::string>{"PEXPIRE", "{job}:redlock:owner", "30000", "GT"});
}

TEST_CASE("a server is a vote only when both reads found the token around the PEXPIRE") {
  const Reply tok = Reply::string("tok"), other = Reply::string("other");
  CHECK(fence_of(answers(tok, Reply::number(1), tok, Reply::string("41"))) == 41);
  // Already as long (GT changed nothing): still ours, with at least the TTL left.
  CHECK(fence_of(answers(tok, Reply::number(0), tok, Reply::string("41"))) == 41);
  // Handed over only after the first read, or lost before the second: not a vote.
  CHECK(!fence_of(answers(other, Reply::number(1), tok, Reply::string("41"))));
  CHECK(!fence_of(answers(tok, Reply::number(1), other, Reply::string("41"))));
  CHECK(!fence_of(answers(tok, Reply::number(0), Reply::nil(), Reply::string("41"))));
  // A server that refuses GT (before Redis 7), or a fence that is not a number.
  CHECK(!fence_of(answers(tok, Reply::error("ERR syntax error"), tok, Reply::string("41"))));
  CHECK(!fence_of(answers(tok, Reply::number(1), tok, Reply::nil())));
  // Some answers missing.
  std::vector<Result> three = answers(tok, Reply::number(1), tok, Reply::string("41"));
  three.resize(3);
  CHECK(!fence_of(three));
}
