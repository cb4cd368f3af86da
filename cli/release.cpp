
#include "commands.hpp"
#include "core/util/error.hpp"
#include "held.hpp"
#include "option_table.hpp"

namespace redlock::cli {

namespace {

struct ReleaseOptions {
  std::string name;
  std::string token;
  std::string token_file;
  bool force = false;
  std::size_t limit = 0;
  int slot = -1;
  bool shared = false;
};

using Rel = ReleaseOptions;

const OptionRow<Rel> kReleaseOptions[] = {
    {.flags = "--token",
     .takes_value = true,
     .help = "the token the lock is held with (else REDLOCK_TOKEN)",
     .target = &Rel::token},
    {.flags = "--token-file",
     .env = "REDLOCK_TOKEN_FILE",
     .takes_value = true,
     .type_name = "FILE",
     .help = "read the token from FILE's first line (as acquire wrote it)",
     .target = &Rel::token_file},
    {.flags = "--force",
     .env = "REDLOCK_FORCE",
     .takes_value = false,
     .help = "delete the lock whoever holds it (never a key that cannot be a lock)",
     .target = &Rel::force},
    limit_row(&Rel::limit),
    slot_row(&Rel::slot),
    shared_row(&Rel::shared),
};

// --force without --limit: the lock NAME. Where there was none and NAME is a semaphore, a usage
// error says how to free its slots, rather than a release that left them held.
ReleaseResult force_release_mutex(Redlock& redlock, const std::string& name, const LockKeys& keys) {
  ReleaseResult r = redlock.release(keys, "", true);
  if (r.released && r.deleted == 0) {
    if (auto limit = stored_limit(redlock, keys)) {
      usage_error(printable(name) + " is a semaphore (limit " + std::to_string(*limit) + "): release --force --limit " +
                  std::to_string(*limit) + " frees its slots");
    }
  }
  return r;
}

ReleaseResult release_lock(Redlock& redlock, const ReleaseOptions& o, const LockKeys& keys, const std::string& token,
                           bool force) {
  // --force with --limit frees every slot and the stored limit; with --slot (and the limit given or
  // stored), that slot alone.
  if (force && o.limit > 0 && o.slot < 0) return force_release_semaphore(redlock, keys, o.limit);
  if (force && o.limit == 0 && o.slot < 0) return force_release_mutex(redlock, o.name, keys);
  const SlotLookup slot = slot_keys(redlock, keys, o.limit, token, o.slot);
  if (slot.keys) return redlock.release(*slot.keys, token, force);
  return no_slot_result<ReleaseResult>(slot);
}

// Where the token comes from (see place), or -1 for none: --token or --token-file,
// REDLOCK_TOKEN_FILE (environment or file), the enclosing run's or REDLOCK_TOKEN (environment).
int token_place(const GlobalOptions& global, const ReleaseOptions& o, const LockKeys& keys) {
  if (given_on_command_line(global, {"--token", "--token-file"})) return kOnCommandLine;
  if (!o.token_file.empty()) return place(global, {"--token-file", "REDLOCK_TOKEN_FILE"});
  return inherited_token(global, keys.lock, o.limit > 0) ? kInEnvironment : -1;
}

// Whether this release forces, and else the token it releases with. The token and --force exclude
// each other: the one given in the stronger place wins (a --force beats the token of an enclosing
// run; REDLOCK_TOKEN beats a REDLOCK_FORCE of the configuration file); in the same place, or
// neither given, a usage error.
std::pair<bool, std::string> force_or_token(const GlobalOptions& global, const ReleaseOptions& o,
                                            const LockKeys& keys) {
  const int by_force = o.force ? place(global, {"--force", "REDLOCK_FORCE"}) : -1;
  // A --force alone on the command line: nothing below it is read (an enclosing run's token).
  if (by_force == kOnCommandLine && !given_on_command_line(global, {"--token", "--token-file"})) return {true, ""};
  const int by_token = token_place(global, o, keys);
  if (by_token == by_force && by_token < kOnCommandLine && by_token >= 0)
    usage_error("a token (REDLOCK_TOKEN or REDLOCK_TOKEN_FILE) and --force exclude each other");
  if (by_token == by_force)
    usage_error("release needs exactly one of --token TOKEN (or --token-file FILE) and --force");
  if (by_force > by_token) return {true, ""};
  return {false, held_token(global, o.token, o.token_file, keys.lock, true, o.limit > 0)};
}

int run_release(const ReleaseOptions& o, const GlobalOptions& global) {
  LockKeys keys = mode_keys(lock_keys(global, o.name), o.shared, o.limit);
  const auto [force, token] = force_or_token(global, o, keys);
  auto transport = connect_servers(global);
  Redlock redlock(*transport, request_timeout(global));
  ReleaseResult r = release_lock(redlock, o, keys, token, force);
  verbose_servers(global, r.servers);
  if (r.released) {
    verbose(global, 1, "released " + printable(o.name) + ": deleted on " + servers_text(r.deleted, r.tally.total));
  }
  const HeldOutcome outcome{"released", r.released, r.no_quorum, r.not_a_lock,
                            r.message,  r.tally,    r.elapsed,   r.servers};
  return answer_held(global, "release", o.name, keys.lock, outcome, [&](Json& j) {
    j["deleted"] = r.deleted;
    j["forced"] = force;
    if (o.shared) j["mode"] = "shared";
    if (o.limit > 0) j["limit"] = o.limit;
  });
}

}  // namespace

void setup_release(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto o = std::make_shared<ReleaseOptions>();
  Subcommand sub(app, "release", "delete the lock if it holds TOKEN (or whoever holds it, --force)");
  sub.argument("NAME", o->name, "the lock's name").rows(*o, std::span<const OptionRow<Rel>>(kReleaseOptions), global);
  sub.on_parsed([o, &global, &action] { action = [o, &global] { return run_release(*o, global); }; });
}

}  // namespace redlock::cli
