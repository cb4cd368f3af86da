#include "core/lock/grant.hpp"

#include "core/lock/faults.hpp"

namespace redlock {

namespace {

// The index of each request in grant_requests' answers.
enum GrantStep : std::size_t { kReadBefore, kSetTtl, kReadAfter, kReadFence, kOwnerTtl, kSteps };

bool holds(const Result* r, const std::string& token) {
  return r && r->ok() && r->reply.type == Reply::Type::String && r->reply.str == token;
}

}  // namespace

std::vector<Request> grant_requests(const LockKeys& keys, const std::string& ttl_ms) {
  std::vector<Request> steps(kSteps);
  steps[kReadBefore] = Request::command({"GET", keys.lock});
  // redlock-faulty grant-keeps-short-expiry (a negative control): the handed-over expiry is kept,
  // while the validity is still counted from the TTL.
  steps[kSetTtl] = faults::enabled(faults::Fault::GrantKeepsShortExpiry)
                       ? Request::command({"PTTL", keys.lock})
                       : Request::command({"PEXPIRE", keys.lock, ttl_ms, "GT"});
  steps[kReadAfter] = Request::command({"GET", keys.lock});
  steps[kReadFence] = Request::command({"GET", keys.fence});
  // The owner record the release wrote lives as long as the lock (PEXPIRE GT: a later holder's
  // record is only ever kept longer, until that holder writes its own).
  steps[kOwnerTtl] = Request::command({"PEXPIRE", keys.owner, ttl_ms, "GT"});
  return steps;
}

std::optional<std::int64_t> granted_fence(const std::vector<const Result*>& answers, const std::string& token) {
  if (answers.size() < kSteps) return std::nullopt;
  const Result* set_ttl = answers[kSetTtl];
  if (!holds(answers[kReadBefore], token) || !holds(answers[kReadAfter], token) || !set_ttl || !set_ttl->ok() ||
      !set_ttl->reply.as_integer()) {
    return std::nullopt;
  }
  const Result* fence = answers[kReadFence];
  if (!fence || !fence->ok()) return std::nullopt;
  return fence->reply.as_integer();
}

GrantVerdict read_grant(const Fanout& reads, std::size_t server, const std::string& token) {
  GrantVerdict v;
  std::vector<const Result*> answers;
  for (std::size_t k = 0; k < kSteps; ++k) {
    const auto& r = reads.result(server, k);
    if (r && !r->ok()) {
      v.verdict = *r;
      return v;
    }
    if (!r) return v;
    answers.push_back(&*r);
  }
  const auto fence = granted_fence(answers, token);
  Result held = *answers.back();
  held.reply = Reply::number(fence ? 1 : 0);
  v.verdict = held;
  v.fence = fence.value_or(0);
  return v;
}

}  // namespace redlock
