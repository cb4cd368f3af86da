#include <cstdio>

#include "commands.hpp"
#include "core/util/duration.hpp"
#include "exit_codes.hpp"
#include "option_table.hpp"

namespace redlock::cli {

namespace {

struct StatusOptions {
  std::string name;
  std::size_t limit = 0;
  bool shared = false;
};

// One row of the server table, without the padding that an empty last column would leave at its end.
void print_row(std::size_t width, const std::string& server, const std::string& state, const std::string& ttl,
               const std::string& value) {
  std::string line;
  for (auto [cell, w] : {std::pair{&server, width}, {&state, std::size_t{8}}, {&ttl, std::size_t{10}}}) {
    line += *cell;
    line.append(w > cell->size() ? w - cell->size() : 0, ' ').append(2, ' ');
  }
  if (value.empty()) line.erase(line.find_last_not_of(' ') + 1);  // a value's own spaces stay
  line += value;
  std::printf("%s\n", line.c_str());
}

void print_table(const StatusOptions& o, const StatusResult& r) {
  std::printf("lock   %s\n", printable(o.name).c_str());
  if (r.state == LockState::Held) {
    const auto holding = static_cast<std::size_t>(
        std::count_if(r.servers.begin(), r.servers.end(), [&](const ServerReport& s) { return s.value == r.token; }));
    std::printf("state  held on %s, %s left\n", servers_text(holding, r.tally.total).c_str(),
                ttl_text(r.ttl_ms).c_str());
    std::printf("token  %s\n", printable(*r.token).c_str());
    if (r.owner) {
      std::printf("owner  %s%s\n", printable(*r.owner).c_str(),
                  r.since_unix_ms ? (", since " + wall_time(*r.since_unix_ms)).c_str() : "");
    }
  } else {
    std::printf("state  %s\n", std::string(state_name(r.state)).c_str());
  }
  // The highest counter on any server: the last fence issued, or above it (a failed attempt
  // raises the counters of the servers it took).
  if (r.fence > 0)
    std::printf("fence  %lld (highest counter, at least the last fence)\n", static_cast<long long>(r.fence));
  for (const auto& q : r.queue) {
    std::printf("queue  %zu: %s (ticket %lld)\n", q.position, printable(q.owner).c_str(),
                static_cast<long long>(q.ticket));
  }
  std::size_t width = 6;
  for (const auto& s : r.servers) width = std::max(width, s.server.size());
  std::printf("\n");
  print_row(width, "SERVER", "STATE", "TTL", "VALUE");
  for (const auto& s : r.servers) {
    // A key of another type has no value to show: its type says what holds the name.
    const bool other_type = s.ok && s.type != "none" && s.type != "string";
    std::string value = s.value           ? printable(*s.value)
                        : other_type      ? "(a " + printable(s.type) + ")"
                        : s.error.empty() ? ""
                                          : s.error;
    print_row(width, s.server, std::string(s.result_name()), s.ok ? ttl_text(s.ttl_ms) : "-", value);
  }
}

// The waiters queued, next to be served first: [{"owner":…,"ticket":…,"position":0}, …].
Json json_queue(const std::vector<QueuedPlace>& queue) {
  Json list = Json::array();
  for (const auto& q : queue) list.push_back({{"owner", q.owner}, {"ticket", q.ticket}, {"position", q.position}});
  return list;
}

int run_status(const StatusOptions& o, const GlobalOptions& global) {
  LockKeys keys = mode_keys(lock_keys(global, o.name), o.shared, o.limit);
  auto transport = connect_servers(global);
  Redlock redlock(*transport, request_timeout(global));
  if (o.limit > 0) return run_semaphore_status(redlock, o.name, keys, o.limit, global);
  if (o.shared) return run_shared_status(redlock, o.name, keys, global);
  StatusResult r = redlock.status(keys);
  // Readers keep their marker in the lock: what they hold is in their sorted set.
  const bool marked = std::any_of(r.servers.begin(), r.servers.end(),
                                  [](const ServerReport& s) { return s.value == std::string(kSharedMarker); });
  if (marked) return run_shared_status(redlock, o.name, keys, global);
  // A semaphore leaves NAME's own key free: its stored limit tells it is one (read only then).
  if (r.state == LockState::Free) {
    if (auto limit = stored_limit(redlock, keys)) return run_semaphore_status(redlock, o.name, keys, *limit, global);
  }
  verbose_servers(global, r.servers);
  const std::string unanswered = unanswered_text(r.tally, r.servers);

  if (global.json) {
    Json j = json_head("status", o.name, keys.lock);
    j["state"] = state_name(r.state);
    j["token"] = r.token ? Json(*r.token) : Json(nullptr);
    j["ttl_ms"] = r.state == LockState::Held ? Json(r.ttl_ms) : Json(nullptr);
    j["owner"] = r.owner ? Json(*r.owner) : Json(nullptr);
    j["since"] = r.since_unix_ms ? Json(wall_time(*r.since_unix_ms)) : Json(nullptr);
    j["fence"] = r.fence;
    j["elapsed_ms"] = json_ms(r.elapsed);
    j["quorum"] = json_quorum(r.tally);
    if (r.no_quorum) j["reason"] = "no_quorum";
    auto servers = json_servers(r.servers);
    for (std::size_t i = 0; i < r.servers.size(); ++i) {
      const auto& s = r.servers[i];
      servers[i]["type"] = s.ok ? Json(s.type) : Json(nullptr);
      servers[i]["value"] = s.value ? Json(*s.value) : Json(nullptr);
      servers[i]["ttl_ms"] = s.ok && s.ttl_ms != -2 ? Json(s.ttl_ms) : Json(nullptr);
      servers[i]["owner"] = s.owner ? Json(*s.owner) : Json(nullptr);
    }
    j["servers"] = servers;
    j["queue"] = json_queue(r.queue);
    if (r.no_quorum) no_quorum(&j, o.name, unanswered);
    print_json(j);
  } else {
    print_table(o, r);
    if (r.no_quorum) no_quorum(nullptr, o.name, unanswered);
  }
  if (r.no_quorum) return exit_code::kNoQuorum;
  return r.state == LockState::Held ? exit_code::kOk : exit_code::kNotHeld;
}

const OptionRow<StatusOptions> kStatusOptions[] = {limit_row(&StatusOptions::limit),
                                                   shared_row(&StatusOptions::shared)};

}  // namespace

void setup_status(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto o = std::make_shared<StatusOptions>();
  Subcommand sub(app, "status", "show who holds the lock on each server");
  sub.argument("NAME", o->name, "the lock's name");
  sub.rows(*o, std::span<const OptionRow<StatusOptions>>(kStatusOptions), global);
  sub.on_parsed([o, &global, &action] { action = [o, &global] { return run_status(*o, global); }; });
}

}  // namespace redlock::cli
