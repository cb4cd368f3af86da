#include <CLI/CLI.hpp>
#include <cstdio>

#include "commands.hpp"
#include "core/util/duration.hpp"
#include "core/util/error.hpp"
#include "exit_codes.hpp"

namespace redlock::cli {

namespace {

// Without --ttl, a lock is extended by the TTL it was taken with (its owner record says) or by what
// it has left, whichever is longer: an extend never shortens a lock it was not told to. This is
// the TTL of a lock whose owner record does not say (taken by another client or an earlier version).
constexpr const char* kFallbackTtl = "30s";

struct ExtendOptions {
  std::string name;
  std::string token;
  std::string token_file;
  std::string ttl;  // empty: none asked for, so the lock keeps its own (see kFallbackTtl)
  std::size_t limit = 0;
};

int run_extend(const ExtendOptions& o, const GlobalOptions& global) {
  LockKeys keys = lock_keys(global, o.name);
  const std::string token = held_token(global, o.token, o.token_file, keys.lock, true);
  if (token.empty()) usage_error("extend needs --token TOKEN or --token-file FILE (or REDLOCK_TOKEN)");
  const bool keep_longer = o.ttl.empty();
  Duration ttl = ttl_option(keep_longer ? kFallbackTtl : o.ttl, "--ttl");
  auto transport = connect_servers(global);
  Redlock redlock(*transport, request_timeout(global));
  const SlotLookup slot = slot_keys(redlock, keys, o.limit, token);
  ExtendResult r;
  if (slot.keys) {
    r = redlock.extend(*slot.keys, token, ttl, 0.01, {}, keep_longer);
  } else {
    r.no_quorum = slot.no_quorum;
    r.message = slot.message;
  }
  verbose_servers(global, r.servers);
  if (r.extended) {
    verbose(global, 1,
            "extended " + printable(o.name) + " on " + votes_text(r.tally) + ", valid for " +
                format_duration(std::chrono::duration_cast<std::chrono::milliseconds>(r.validity)));
  }
  transport->flush(Clock::now() + request_timeout(global));  // to the servers not waited for

  if (global.json) {
    Json j = json_head("extend", o.name, keys.lock);
    j["extended"] = r.extended;
    if (!r.extended) j["reason"] = r.no_quorum ? "no_quorum" : "not_held";
    j["ttl_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(r.extended ? r.ttl : ttl).count();
    j["validity_ms"] = r.extended ? json_ms(r.validity) : 0.0;
    j["elapsed_ms"] = json_ms(r.elapsed);
    j["quorum"] = json_quorum(r.tally);
    if (!r.message.empty()) j["message"] = r.message;
    j["servers"] = json_servers(r.servers);
    if (r.no_quorum) no_quorum(&j, o.name, "no quorum: " + r.message);
    print_json(j);
  } else if (r.no_quorum) {
    no_quorum(nullptr, o.name, "no quorum: " + r.message);
  } else if (!r.extended && !global.quiet) {  // not held is an answer, not an error: -q keeps it quiet
    std::fprintf(stderr, "redlock: %s: %s\n", printable(o.name).c_str(), r.message.c_str());
  }
  if (r.extended) return exit_code::kOk;
  return r.no_quorum ? exit_code::kNoQuorum : exit_code::kNotHeld;
}

}  // namespace

void setup_extend(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto o = std::make_shared<ExtendOptions>();
  auto* sub = app.add_subcommand("extend", "reset the expiry of a lock held with TOKEN");
  sub->add_option("NAME", o->name, "the lock's name")->required();
  sub->add_option("--token", o->token, "the token the lock is held with (else REDLOCK_TOKEN)");
  sub->add_option("--token-file", o->token_file, "read the token from FILE's first line (as acquire wrote it)")
      ->type_name("FILE")
      ->envname("REDLOCK_TOKEN_FILE");
  sub->add_option("--ttl", o->ttl,
                  "new expiry (default: the TTL the lock was taken with, or what it has left if longer; never "
                  "shorter)")
      ->type_name("DUR")
      ->envname("REDLOCK_TTL");
  add_limit_option(*sub, o->limit);
  sub->callback([o, &global, &action] { action = [o, &global] { return run_extend(*o, global); }; });
}

}  // namespace redlock::cli
