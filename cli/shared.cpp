// --shared: the commands' side of the shared mode (core/lock/shared.hpp).
#include <cstdio>

#include "commands.hpp"
#include "core/lock/shared.hpp"
#include "core/util/duration.hpp"
#include "core/util/error.hpp"
#include "exit_codes.hpp"

namespace redlock::cli {

LockKeys mode_keys(LockKeys keys, bool shared, std::size_t limit) {
  if (shared && limit > 0) usage_error("--shared and --limit exclude each other");
  keys.reader = shared;
  return keys;
}

StatusResult reader_status(Redlock& redlock, const LockKeys& keys, const std::string& token) {
  const SharedStatus s = Shared(redlock, keys.lock).status();
  StatusResult res = s.lock;
  res.no_quorum = res.no_quorum || s.tally.yes < s.tally.needed();
  res.state = res.no_quorum ? LockState::Unknown : LockState::Partial;
  for (const auto& r : s.readers) {
    if (r.token != token || res.no_quorum) continue;
    res.state = LockState::Held;
    res.token = token;
    res.ttl_ms = r.ttl_ms;
  }
  return res;
}

namespace {

Json json_readers(const SharedStatus& s) {
  Json readers = Json::array();
  for (const auto& r : s.readers) {
    readers.push_back({{"owner", r.owner ? Json(*r.owner) : Json(nullptr)}, {"ttl_ms", r.ttl_ms}, {"token", r.token}});
  }
  return readers;
}

Json json_writer(const SharedStatus& s) {
  if (!s.writer) return nullptr;
  return {{"owner", s.lock.owner ? Json(*s.lock.owner) : Json(nullptr)},
          {"ttl_ms", s.lock.ttl_ms},
          {"token", s.lock.token ? Json(*s.lock.token) : Json(nullptr)},
          {"fence", s.lock.fence}};
}

// held: a writer or a reader holds on a quorum; free: nothing is held; unknown: no quorum answered.
LockState shared_state(const SharedStatus& s) {
  if (s.lock.no_quorum || s.tally.yes < s.tally.needed()) return LockState::Unknown;
  if (s.writer || !s.readers.empty()) return LockState::Held;
  return s.lock.state == LockState::Free ? LockState::Free : LockState::Partial;
}

void print_shared(const std::string& name, const SharedStatus& s, LockState state) {
  std::printf("lock     %s (shared)\n", printable(name).c_str());
  std::printf("state    %s\n", std::string(state_name(state)).c_str());
  if (s.writer) {
    std::printf("writer   %s, %s left\n", s.lock.owner ? printable(*s.lock.owner).c_str() : "another client",
                ttl_text(s.lock.ttl_ms).c_str());
  }
  std::printf("readers  %zu\n", s.readers.size());
  for (const auto& r : s.readers) {
    std::printf("  %s, %s left\n", r.owner ? printable(*r.owner).c_str() : printable(r.token).c_str(),
                ttl_text(r.ttl_ms).c_str());
  }
  std::printf("writers waiting  %zu\n", s.writers_waiting);
  if (s.lock.fence > 0) std::printf("fence    %lld\n", static_cast<long long>(s.lock.fence));
}

}  // namespace

int run_shared_status(Redlock& redlock, const std::string& name, const LockKeys& keys, const GlobalOptions& global) {
  const SharedStatus s = Shared(redlock, keys.lock).status();
  verbose_servers(global, s.servers);
  const LockState state = shared_state(s);
  const std::string unanswered = "no quorum: the lock or its readers could not be read on a quorum";
  if (global.json) {
    Json j = json_head("status", name, keys.lock);
    j["mode"] = "shared";
    j["state"] = state_name(state);
    j["writer"] = json_writer(s);
    j["readers"] = json_readers(s);
    j["writers_waiting"] = s.writers_waiting;
    json_no_single_holder(j);
    j["fence"] = s.lock.fence;
    j["elapsed_ms"] = json_ms(s.lock.elapsed);
    j["quorum"] = json_quorum(s.tally);
    j["servers"] = json_servers(s.servers);
    if (state == LockState::Unknown) no_quorum(&j, name, unanswered);
    print_json(j);
  } else {
    print_shared(name, s, state);
    if (state == LockState::Unknown) no_quorum(nullptr, name, unanswered);
  }
  if (state == LockState::Unknown) return exit_code::kNoQuorum;
  return state == LockState::Held ? exit_code::kOk : exit_code::kNotHeld;
}

}  // namespace redlock::cli
