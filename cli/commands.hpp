// The subcommands. Each file binds its options to a subcommand of the parser (setup_*) and does the work
// (run_*), returning the exit status.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "exit_codes.hpp"
#include "option_table.hpp"
#include "options.hpp"
#include "output.hpp"
#include "private_file.hpp"
#include "servers.hpp"

namespace redlock::cli {

// Set by the subcommand that was parsed; main() runs it after parsing.
using Action = std::function<int()>;

// The options of `acquire`, which `run` shares.
struct AcquireOptions {
  std::string name;
  std::string ttl = "30s";
  bool nonblock = false;
  std::string wait;  // empty: wait for ever
  int conflict_exit_code = exit_code::kBusy;
  std::string token;
  std::string token_file;
  std::string retry_delay = "200ms";
  double drift = 0.01;
  std::string owner;
  std::size_t limit = 0;  // --limit: 0 for a mutex
  std::string fence_ttl = "30d";
  bool shared = false;              // --shared: a reader
  bool no_writer_priority = false;  // --no-writer-priority: a reader goes in past waiting writers
  bool fair = false;                // --fair: served in arrival order
  std::size_t max_queue = 0;        // --max-queue: busy at once when this many wait (0: no limit)
};

// What the acquire options come to, checked.
struct AcquirePlan {
  LockSpec spec;
  WaitOptions wait;
  // Inside a `run` child: Enclosing when NAME on these servers is the lock of that run or of a run
  // around it (see enclosing.hpp), which must still be held and is re-entered with its token, not
  // waited for; IfHeld when another lock was given an enclosing run's token explicitly (--token
  // "$REDLOCK_TOKEN"): re-entered when held with it, else taken.
  enum class Reentry { No, Enclosing, IfHeld };
  Reentry reentry = Reentry::No;
  // Set by reentry_status: the enclosing run holds this NAME shared, and this lock is wanted alone.
  bool inside_readers = false;
  std::optional<std::int64_t> enclosing_fence;  // the enclosing run's fence, when Enclosing
  // An enclosing run's lock of the same key on servers named otherwise ("localhost" for
  // "127.0.0.1"): re-entered (Enclosing) when these servers hold its token, else a lock of its own.
  struct Lookalike {
    std::string token;
    std::optional<std::int64_t> fence;
  };
  std::optional<Lookalike> lookalike;
  // --limit: a semaphore of that many slots. Once a slot is taken (or re-entered), spec.keys are
  // the slot's and SLOT says which.
  std::size_t limit = 0;
  std::optional<std::size_t> slot;
};

void add_acquire_options(Subcommand& sub, AcquireOptions& options, const GlobalOptions& global);
// "NAME: busy: …" or "NAME: still busy when the wait ran out: …" on stderr, unless -q or --json.
void say_busy(const GlobalOptions& global, const std::string& name, const AcquireResult& r);
// write_token_file, and when it fails, GIVE_BACK before the configuration error goes on. Nothing
// when PATH is empty.
void write_token_file_or_give_back(const std::string& path, const std::string& token,
                                   const std::function<void()>& give_back);
// --token-file: TOKEN written to PATH with mode 0600 from the first byte (a private temporary file
// in the same directory, renamed over PATH); a configuration error (78) when it cannot be.
void write_token_file(const std::string& path, const std::string& token);
AcquirePlan plan_acquire(const AcquireOptions& options, const GlobalOptions& global);
// The JSON of an acquisition (acquire, and run's report).
void json_acquisition(Json& j, const AcquireResult& r);
// With --limit: "limit" and the "slot" taken (null when none); with --shared: "mode":"shared".
void json_slot(Json& j, const AcquirePlan& plan);
// With --fair: "fairness", "fair", or "degraded" when the hand-off went the unfair way.
void json_fairness(Json& j, const AcquirePlan& plan, const AcquireResult& r);
// A busy lock's holder: {"owner": the owner record's name or null, "ttl_ms": until it could be free, or null}.
Json json_holder(const Holder& holder);
// Whether a nested acquire/run re-enters (see AcquirePlan::reentry): the status that decides it
// (held with the token, or not held by the enclosing run, or no quorum), or nothing when the lock
// is to be taken as usual.
std::optional<StatusResult> reentry_status(Redlock& redlock, AcquirePlan& plan);
// The fence of a re-entered lock: the enclosing run's fence for its own lock; unknown for a lock
// given an enclosing run's token (the highest counter on the servers may be above it).
std::optional<std::int64_t> reentry_fence(const AcquirePlan& plan);
// Why a re-entry that REENTRY_STATUS did not find held is refused, for a one-line message.
const char* reentry_refusal(const StatusResult& s, const AcquirePlan& plan);

// --limit K (REDLOCK_LIMIT): the lock is a semaphore of K slots. One row, in the table of every
// command that takes it.
template <class Settings>
OptionRow<Settings> limit_row(std::size_t Settings::*limit) {
  return {.flags = "--limit",
          .env = "REDLOCK_LIMIT",
          .takes_value = true,
          .type_name = "K",
          .help = "a semaphore: at most K holders at once, each in a slot of its own",
          .target = limit,
          .check = limit_range};
}
// --slot N: the semaphore's slot extend and release act on, as REDLOCK_SLOT names it to a run's
// command (else found from the token, one more read). No variable: a command nested in a run of
// another semaphore would inherit the wrong slot. One row, in extend's and release's tables.
template <class Settings>
OptionRow<Settings> slot_row(int Settings::*slot) {
  return {.flags = "--slot",
          .takes_value = true,
          .type_name = "N",
          .help =
              "the semaphore slot the token holds, as in --slot \"$REDLOCK_SLOT\" in a run's command (else found from "
              "the token)",
          .target = slot,
          .check = slot_range};
}
// --shared (REDLOCK_SHARED): the lock is taken, renewed and released as a reader of the shared
// mode. One row, in the table of every command that takes it.
template <class Settings>
OptionRow<Settings> shared_row(bool Settings::*shared) {
  return {.flags = "--shared",
          .env = "REDLOCK_SHARED",
          .takes_value = false,
          .help = "a reader: held with other readers at once, never with a writer (an exclusive lock of NAME)",
          .target = shared};
}
// KEYS as a reader's with SHARED; --shared with --limit (LIMIT > 0) is a usage error.
LockKeys mode_keys(LockKeys keys, bool shared, std::size_t limit);
// `status NAME --shared`, or a NAME whose lock holds the readers' marker: the writer, the readers
// that hold on a quorum and the writers waiting.
int run_shared_status(Redlock& redlock, const std::string& name, const LockKeys& keys, const GlobalOptions& global);
// Whether the readers of KEYS hold TOKEN on a quorum, as a status (held, with the reader's TTL).
StatusResult reader_status(Redlock& redlock, const LockKeys& keys, const std::string& token);

// Takes PLAN's lock as WAIT says: a slot of the semaphore with --limit, whose keys then become
// PLAN's (and PLAN.slot says which), else the lock itself.
AcquireResult take_lock(Redlock& redlock, AcquirePlan& plan);
// With --limit, the keys of the slot of NAME's semaphore where TOKEN is found (on most servers);
// KEYS unchanged without --limit. Without keys, MESSAGE says why: TOKEN is in no slot, or fewer
// than a quorum answered (NO_QUORUM).
struct SlotLookup {
  std::optional<LockKeys> keys{};
  bool no_quorum = false;
  std::string message{};
  // Where no slot holds the token: what the read of the slots found, for the answer's quorum and
  // servers (ok: none holds it).
  Tally tally{};
  Duration elapsed{};
  std::vector<ServerReport> servers{};
};
// The keys of the slot TOKEN holds in KEYS' semaphore of LIMIT slots (KEYS themselves for a mutex):
// slot SLOT when it is given (>= 0), else the slot found from the token. A SLOT without a LIMIT
// takes the limit stored on a quorum (one more read); none stored there, a SLOT not below the
// limit, or a SLOT with a reader's KEYS is a usage error.
SlotLookup slot_keys(Redlock& redlock, const LockKeys& keys, std::size_t limit, const std::string& token, int slot);
// The answer of extend or release (RESULT: ExtendResult, ReleaseResult) when LOOKUP found no slot.
template <class Result>
Result no_slot_result(const SlotLookup& lookup) {
  Result r;
  r.no_quorum = lookup.no_quorum;
  r.message = lookup.message;
  r.tally = lookup.tally;
  r.elapsed = lookup.elapsed;
  r.servers = lookup.servers;
  return r;
}
// The limit stored for NAME's semaphore, if one is (on most servers that answered).
std::optional<std::size_t> stored_limit(Redlock& redlock, const LockKeys& keys);
// `status NAME --limit K`: every slot's holder.
int run_semaphore_status(Redlock& redlock, const std::string& name, const LockKeys& keys, std::size_t limit,
                         const GlobalOptions& global);
// `release NAME --limit K --force`: every slot and the stored limit.
ReleaseResult force_release_semaphore(Redlock& redlock, const LockKeys& keys, std::size_t limit);

void setup_acquire(CLI::App& app, const GlobalOptions& global, Action& action);
void setup_extend(CLI::App& app, const GlobalOptions& global, Action& action);
void setup_release(CLI::App& app, const GlobalOptions& global, Action& action);
void setup_status(CLI::App& app, const GlobalOptions& global, Action& action);
void setup_run(CLI::App& app, const GlobalOptions& global, Action& action);
void setup_elect(CLI::App& app, const GlobalOptions& global, Action& action);
void setup_doctor(CLI::App& app, const GlobalOptions& global, Action& action);
void setup_list(CLI::App& app, const GlobalOptions& global, Action& action);
void setup_watch(CLI::App& app, const GlobalOptions& global, Action& action);
void setup_completion(CLI::App& app, const GlobalOptions& global, Action& action);

}  // namespace redlock::cli
