#include <algorithm>

#include "commands.hpp"
#include "core/util/duration.hpp"
#include "core/util/error.hpp"
#include "held.hpp"
#include "option_table.hpp"

namespace redlock::cli {

namespace {

// Without --ttl, a lock is extended by the TTL it was taken with (its owner record says) or by what
// it has left, whichever is longer: an extend never shortens a lock it was not told to. This is
// the TTL of a lock whose owner record does not say (taken by another client or an earlier version).
constexpr const char* kFallbackTtl = "30s";
// The clock drift factor extend allows for, as acquire's default --drift.
constexpr double kExtendDrift = 0.01;

struct ExtendOptions {
  std::string name;
  std::string token;
  std::string token_file;
  std::string ttl;  // empty: none asked for, so the lock keeps its own (see kFallbackTtl)
  std::size_t limit = 0;
  int slot = -1;
  bool shared = false;
};

using E = ExtendOptions;

const OptionRow<E> kExtendOptions[] = {
    {.flags = "--token",
     .takes_value = true,
     .help = "the token the lock is held with (else REDLOCK_TOKEN)",
     .target = &E::token},
    {.flags = "--token-file",
     .env = "REDLOCK_TOKEN_FILE",
     .takes_value = true,
     .type_name = "FILE",
     .help = "read the token from FILE's first line (as acquire wrote it)",
     .target = &E::token_file},
    {.flags = "--ttl",
     .env = "REDLOCK_TTL",
     .takes_value = true,
     .type_name = "DUR",
     .help = "new expiry (default: the TTL the lock was taken with, or what it has left if longer; never shorter)",
     .target = &E::ttl},
    limit_row(&E::limit),
    slot_row(&E::slot),
    shared_row(&E::shared),
};

int run_extend(const ExtendOptions& o, const GlobalOptions& global) {
  LockKeys keys = mode_keys(lock_keys(global, o.name), o.shared, o.limit);
  const std::string token = held_token(global, o.token, o.token_file, keys.lock, true, o.limit > 0);
  if (token.empty()) usage_error("extend needs --token TOKEN or --token-file FILE (or REDLOCK_TOKEN)");
  const bool keep_longer = o.ttl.empty();
  Duration ttl = ttl_option(keep_longer ? kFallbackTtl : o.ttl, "--ttl");
  if (!keep_longer) require_validity(ttl, o.ttl, kExtendDrift);
  auto transport = connect_servers(global);
  Redlock redlock(*transport, request_timeout(global));
  const SlotLookup slot = slot_keys(redlock, keys, o.limit, token, o.slot);
  const ExtendResult r = slot.keys ? redlock.extend(*slot.keys, token, ttl, kExtendDrift, {}, keep_longer)
                                   : no_slot_result<ExtendResult>(slot);
  verbose_servers(global, r.servers);
  if (r.extended) {
    const auto healed = static_cast<std::size_t>(std::count_if(
        r.servers.begin(), r.servers.end(), [](const ServerReport& s) { return s.result == Answer::Healed; }));
    verbose(global, 1,
            "extended " + printable(o.name) + " on " + votes_text(r.tally) +
                (healed ? ", put back on " + servers_text(healed, r.tally.total) : "") + ", valid for " +
                format_duration(std::chrono::duration_cast<Millis>(r.validity)));
  }
  transport->flush(Clock::now() + request_timeout(global));  // to the servers not waited for
  const HeldOutcome outcome{"extended", r.extended, r.no_quorum, false, r.message, r.tally, r.elapsed, r.servers};
  return answer_held(global, "extend", o.name, keys.lock, outcome, [&](Json& j) {
    j["ttl_ms"] = whole_ms(r.extended ? r.ttl : ttl);
    j["validity_ms"] = r.extended ? json_ms(r.validity) : 0.0;
    if (o.shared) j["mode"] = "shared";
    if (o.limit > 0) j["limit"] = o.limit;
  });
}

}  // namespace

void setup_extend(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto o = std::make_shared<ExtendOptions>();
  Subcommand sub(app, "extend", "reset the expiry of a lock held with TOKEN");
  sub.argument("NAME", o->name, "the lock's name");
  sub.rows(*o, std::span<const OptionRow<E>>(kExtendOptions), global);
  sub.on_parsed([o, &global, &action] { action = [o, &global] { return run_extend(*o, global); }; });
}

}  // namespace redlock::cli
