#include <CLI/CLI.hpp>
#include <cstdio>

#include "commands.hpp"
#include "core/util/error.hpp"
#include "exit_codes.hpp"

namespace redlock::cli {

namespace {

struct ReleaseOptions {
  std::string name;
  std::string token;
  std::string token_file;
  bool force = false;
  std::size_t limit = 0;
};

ReleaseResult release_lock(Redlock& redlock, const ReleaseOptions& o, const LockKeys& keys, const std::string& token,
                           bool force) {
  if (force && o.limit > 0) return force_release_semaphore(redlock, keys, o.limit);
  const SlotLookup slot = force ? SlotLookup{keys, false, {}} : slot_keys(redlock, keys, o.limit, token);
  if (slot.keys) return redlock.release(*slot.keys, token, force);
  ReleaseResult r;
  r.no_quorum = slot.no_quorum;
  r.message = slot.message;
  return r;
}

int run_release(const ReleaseOptions& o, const GlobalOptions& global) {
  LockKeys keys = lock_keys(global, o.name);
  bool force = o.force;
  // REDLOCK_TOKEN stands in for --token, but never turns a --force into a usage error; and a
  // --token on the command line beats a REDLOCK_FORCE (flag, then environment).
  const bool token_given = given_on_command_line(global, {"--token", "--token-file"});
  std::string token = held_token(global, o.token, force && !token_given ? "" : o.token_file, keys.lock, !force);
  if (force && !token.empty() && !given_on_command_line(global, {"--force"})) force = false;
  if (force == !token.empty())
    usage_error("release needs exactly one of --token TOKEN (or --token-file FILE) and --force");
  auto transport = connect_servers(global);
  Redlock redlock(*transport, request_timeout(global));
  ReleaseResult r = release_lock(redlock, o, keys, token, force);
  verbose_servers(global, r.servers);
  if (r.released) {
    verbose(global, 1, "released " + printable(o.name) + ": deleted on " + servers_text(r.deleted, r.tally.total));
  }

  if (global.json) {
    Json j = json_head("release", o.name, keys.lock);
    j["released"] = r.released;
    if (!r.released) j["reason"] = r.not_a_lock ? "not_a_lock" : r.no_quorum ? "no_quorum" : "not_held";
    j["deleted"] = r.deleted;
    j["forced"] = force;
    j["elapsed_ms"] = json_ms(r.elapsed);
    j["quorum"] = json_quorum(r.tally);
    if (!r.message.empty()) j["message"] = r.message;
    j["servers"] = json_servers(r.servers);
    if (r.no_quorum) no_quorum(&j, o.name, "no quorum: " + r.message);
    if (r.not_a_lock) report_error(&j, exit_code::kNotHeld, printable(o.name) + ": " + r.message);
    print_json(j);
  } else if (r.not_a_lock) {  // data that --force refused to delete: an error, -q or not
    report_error(nullptr, exit_code::kNotHeld, printable(o.name) + ": " + r.message);
  } else if (r.no_quorum) {
    no_quorum(nullptr, o.name, "no quorum: " + r.message);
  } else if (!r.released && !global.quiet) {  // not held is an answer, not an error: -q keeps it quiet
    std::fprintf(stderr, "redlock: %s: %s\n", printable(o.name).c_str(), r.message.c_str());
  }
  if (r.released) return exit_code::kOk;
  return r.no_quorum ? exit_code::kNoQuorum : exit_code::kNotHeld;
}

}  // namespace

void setup_release(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto o = std::make_shared<ReleaseOptions>();
  auto* sub = app.add_subcommand("release", "delete the lock if it holds TOKEN (or whoever holds it, --force)");
  sub->add_option("NAME", o->name, "the lock's name")->required();
  sub->add_option("--token", o->token, "the token the lock is held with (else REDLOCK_TOKEN)");
  sub->add_option("--token-file", o->token_file, "read the token from FILE's first line (as acquire wrote it)")
      ->type_name("FILE")
      ->envname("REDLOCK_TOKEN_FILE");
  sub->add_flag("--force", o->force, "delete the lock whoever holds it (never a key that cannot be a lock)")
      ->envname("REDLOCK_FORCE");
  add_limit_option(*sub, o->limit);
  sub->callback([o, &global, &action] { action = [o, &global] { return run_release(*o, global); }; });
}

}  // namespace redlock::cli
