#include "core/lock/watch.hpp"

#include <csignal>
#include <cstdio>
#include <ctime>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "option_table.hpp"
#include "signals.hpp"

namespace redlock::cli {

namespace {

struct WatchOptions {
  std::string name;
  std::string until;  // empty, "released" or "free"
};

// With --until, how often the servers' views are checked for a lock that went free unannounced.
constexpr Duration kFreeCheck = std::chrono::seconds(1);

// The wall clock now, to the millisecond: "2024-05-01T12:00:00.123Z".
std::string now_text() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  std::tm tm{};
  gmtime_r(&ts.tv_sec, &tm);
  char buf[40];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03ldZ", ts.tv_nsec / 1000000);
  return buf;
}

Json json_event(const LockEvent& e, const std::string& name, const std::string& key, Network& network) {
  Json j;
  j["event"] = event_name(e.kind);
  j["name"] = name;
  j["key"] = key;
  j["time"] = now_text();
  // Readers of the shared mode hold the lock with a marker, never a token: they are "readers".
  const bool readers = e.token && *e.token == kSharedMarker;
  j["token"] = e.token && !readers ? Json(*e.token) : Json(nullptr);
  std::optional<OwnerRecord> record;
  if (e.owner_record) record = parse_owner_record(*e.owner_record);
  j["owner"] = readers ? Json("readers") : record ? Json(record->owner) : Json(nullptr);
  j["since"] = record && record->since_unix_ms ? Json(wall_time(*record->since_unix_ms)) : Json(nullptr);
  j["fence"] = e.fence > 0 ? Json(e.fence) : Json(nullptr);
  j["ttl_ms"] = e.ttl_ms ? Json(*e.ttl_ms) : Json(nullptr);
  j["server"] = network.describe(e.server);
  return j;
}

// Whether a status read finds the lock free on a quorum.
bool free_now(Redlock& redlock, const LockKeys& keys) {
  return redlock.status(keys).state == LockState::Free;
}

int run_watch(const WatchOptions& o, const GlobalOptions& global) {
  LockKeys keys = lock_keys(global, o.name);
  auto transport = connect_servers(global);
  SignalCatcher signals({SIGINT, SIGTERM, SIGHUP});
  transport->set_wait_sigmask(&signals.wait_mask());
  auto stopped = [&signals] { return signals.first_caught({SIGINT, SIGTERM, SIGHUP}); };
  Redlock redlock(*transport, request_timeout(global));
  // A semaphore's holders are in its slots, which the events of its NAME do not show: refused,
  // rather than read as free while slots are held.
  if (auto limit = stored_limit(redlock, keys)) {
    usage_error("watch: " + printable(o.name) + " is a semaphore (limit " + std::to_string(*limit) +
                "), whose slots it does not follow; read it with status");
  }
  LockWatch watch(*transport, keys);
  const LockVerdict start = watch.start();
  if (!watch.keyspace_off().empty()) {
    std::string where;
    for (const auto& line : watch.keyspace_off()) where += (where.empty() ? "" : "; ") + line;
    warn(global, "watch: no keyspace notifications from some servers (" + where +
                     "): an expiry there is seen when the lock is read as it should expire");
  }
  if (start.state == LockState::Unknown) warn(global, "watch: fewer than a quorum answered; watching on");
  if (!o.until.empty() && start.state == LockState::Free) return exit_code::kOk;
  const std::size_t needed = quorum_size(transport->size());
  // A release is told at the first server's; the others' may still be on their way: once a quorum
  // of them is heard free, the lock is read again.
  bool recheck = false;
  auto views_free = [&] { return watch.free_servers() >= needed; };
  for (;;) {
    const TimePoint deadline = o.until.empty() ? kNever : transport->now() + kFreeCheck;
    bool ended = false;
    for (const LockEvent& e : watch.next([&] { return stopped() != 0 || (recheck && views_free()); }, deadline)) {
      if (!print_json(json_event(e, o.name, keys.lock, *transport))) return exit_code::kOk;  // checked_stdout says why
      ended = ended || e.kind == LockEventKind::Released || e.kind == LockEventKind::Expired;
    }
    if (int sig = stopped()) return exit_code::signaled(sig);
    if (o.until == "released" && ended) return exit_code::kOk;
    if (o.until.empty() || !(ended || views_free())) continue;
    if (free_now(redlock, keys)) return exit_code::kOk;
    recheck = !views_free();
  }
}

const OptionRow<WatchOptions> kWatchOptions[] = {
    {.flags = "--until",
     .env = "REDLOCK_UNTIL",
     .takes_value = true,
     .type_name = "released|free",
     .help = "exit 0 once the lock is released (or expired), or free on a quorum",
     .target = &WatchOptions::until,
     .check = until_values},
};

}  // namespace

void setup_watch(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto o = std::make_shared<WatchOptions>();
  Subcommand sub(app, "watch", "print the events on a lock as they happen, one JSON line each");
  sub.argument("NAME", o->name, "the lock's name")
      .rows(*o, std::span<const OptionRow<WatchOptions>>(kWatchOptions), global);
  sub.on_parsed([o, &global, &action] { action = [o, &global] { return run_watch(*o, global); }; });
}

}  // namespace redlock::cli
