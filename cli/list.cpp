#include "core/lock/listing.hpp"

#include <cstdio>

#include "commands.hpp"
#include "exit_codes.hpp"

namespace redlock::cli {

namespace {

struct ListCliOptions {
  std::string pattern = "*";
};

// One ps-like row: every column padded to its width but the last.
void print_row(const std::vector<std::string>& cells, const std::vector<std::size_t>& widths) {
  std::string line;
  for (std::size_t c = 0; c < cells.size(); ++c) {
    line += cells[c];
    if (c + 1 < cells.size()) line.append(widths[c] - std::min(widths[c], cells[c].size()) + 2, ' ');
  }
  std::printf("%s\n", line.c_str());
}

std::vector<std::string> lock_row(const std::string& name, const LockVerdict& v, std::size_t servers) {
  const bool held = v.state == LockState::Held;
  return {printable(name),
          std::string(state_name(v.state)),
          v.owner ? printable(*v.owner) : "-",
          v.since_unix_ms ? wall_time(*v.since_unix_ms) : "-",
          held ? ttl_text(v.ttl_ms) : "-",
          v.fence > 0 ? std::to_string(v.fence) : "-",
          std::to_string(v.servers_held) + "/" + std::to_string(servers)};
}

// A semaphore: its own row ("2 of 3 slots" where a mutex has its owner), then one per held slot,
// named NAME[SLOT].
void semaphore_rows(const ListedLock& lock, std::size_t servers, std::vector<std::vector<std::string>>& rows) {
  auto& row = rows.emplace_back(lock_row(lock.name, lock.verdict, servers));
  row[2] = std::to_string(lock.holders.size()) + " of " + (lock.limit ? std::to_string(*lock.limit) : "?") + " slots";
  for (const auto& holder : lock.holders) {
    rows.push_back(lock_row(lock.name + "[" + std::to_string(holder.slot) + "]", holder.verdict, servers));
  }
}

void print_table(const ListResult& r) {
  std::vector<std::vector<std::string>> rows{{"NAME", "STATE", "OWNER", "SINCE", "TTL", "FENCE", "SERVERS"}};
  for (const auto& lock : r.locks) {
    if (lock.mode == "semaphore") {
      semaphore_rows(lock, r.tally.total, rows);
    } else {
      rows.push_back(lock_row(lock.name, lock.verdict, r.tally.total));
      if (lock.mode == "shared") rows.back()[2] = "readers";
    }
  }
  std::vector<std::size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (const auto& row : rows) print_row(row, widths);
}

// The fields a lock and a semaphore's held slot share.
Json json_verdict(const LockVerdict& v) {
  Json j;
  j["state"] = state_name(v.state);
  j["token"] = v.token ? Json(*v.token) : Json(nullptr);
  j["owner"] = v.owner ? Json(*v.owner) : Json(nullptr);
  j["since"] = v.since_unix_ms ? Json(wall_time(*v.since_unix_ms)) : Json(nullptr);
  j["ttl_ms"] = v.state == LockState::Held ? Json(v.ttl_ms) : Json(nullptr);
  j["fence"] = v.fence;
  j["servers_held"] = v.servers_held;
  return j;
}

Json json_lock(const ListedLock& lock) {
  Json j = {{"name", lock.name}, {"key", lock.key}};
  j.update(json_verdict(lock.verdict));
  j["mode"] = lock.mode;
  if (lock.mode != "semaphore") return j;
  // A semaphore has no single holder: its slots' holders say who.
  j["token"] = j["owner"] = j["since"] = j["ttl_ms"] = nullptr;
  j["limit"] = lock.limit ? Json(*lock.limit) : Json(nullptr);
  j["held"] = lock.holders.size();
  j["holders"] = Json::array();
  for (const auto& holder : lock.holders) {
    Json h = json_verdict(holder.verdict);
    h.erase("state");
    h["slot"] = holder.slot;
    j["holders"].push_back(std::move(h));
  }
  return j;
}

int run_list(const ListCliOptions& o, const GlobalOptions& global) {
  auto transport = connect_servers(global);
  ListOptions options;
  options.prefix = global.prefix;
  options.pattern = o.pattern;
  ListResult r = list_locks(*transport, options);
  verbose_servers(global, r.servers);
  for (const auto& s : r.servers) {
    if (!s.ok)
      warn(global, "list: " + s.server + " did not answer (" + std::string(s.result_name()) + ": " + s.error + ")");
  }
  if (r.truncated) warn(global, "list: more locks than can be listed at once; some are missing");
  Json j;
  if (global.json) {
    j["version"] = 1;
    j["command"] = "list";
    j["prefix"] = global.prefix;
    j["pattern"] = o.pattern;
    j["locks"] = Json::array();
    for (const auto& lock : r.locks) j["locks"].push_back(json_lock(lock));
    j["truncated"] = r.truncated;
    j["elapsed_ms"] = json_ms(r.elapsed);
    j["quorum"] = json_quorum(r.tally);
    j["servers"] = json_servers(r.servers);
  } else {
    print_table(r);
  }
  if (r.no_quorum) {
    no_quorum(global.json ? &j : nullptr, "list", unanswered_text(r.tally, r.servers));
  }
  if (global.json) print_json(j);
  if (r.no_quorum) return exit_code::kNoQuorum;
  return r.tally.failed == 0 ? exit_code::kOk : exit_code::kNotHeld;
}

}  // namespace

void setup_list(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto o = std::make_shared<ListCliOptions>();
  Subcommand sub(app, "list", "show every lock under --prefix: who holds what");
  sub.argument("PATTERN", o->pattern, "only the locks whose NAME matches this glob (default: all)", true);
  sub.on_parsed([o, &global, &action] { action = [o, &global] { return run_list(*o, global); }; });
}

}  // namespace redlock::cli
