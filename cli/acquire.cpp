#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "commands.hpp"
#include "core/lock/faults.hpp"
#include "core/lock/semaphore.hpp"
#include "core/lock/token.hpp"
#include "core/util/duration.hpp"
#include "core/util/error.hpp"
#include "enclosing.hpp"
#include "environment.hpp"
#include "exit_codes.hpp"
#include "option_table.hpp"
#include "signals.hpp"
#include "supervisor.hpp"

namespace redlock::cli {

void write_token_file(const std::string& path, const std::string& token) {
  if (path.empty()) return;
  if (std::string failed = write_private_file(path, token + "\n", "--token-file"); !failed.empty()) {
    config_error(failed);
  }
}

namespace {

using A = AcquireOptions;

const OptionRow<A> kAcquireOptions[] = {
    {.flags = "--ttl",
     .env = "REDLOCK_TTL",
     .takes_value = true,
     .type_name = "DUR",
     .help = "lock expiry",
     .target = &A::ttl,
     .show_default = true},
    {.flags = "-n,--nonblock",
     .env = "REDLOCK_NONBLOCK",
     .takes_value = false,
     .help = "one attempt, no waiting",
     .target = &A::nonblock},
    {.flags = "-w,--wait",
     .env = "REDLOCK_WAIT",
     .takes_value = true,
     .type_name = "DUR",
     .help = "wait at most DUR (default: for ever)",
     .target = &A::wait},
    {.flags = "-E,--conflict-exit-code",
     .env = "REDLOCK_CONFLICT_EXIT_CODE",
     .takes_value = true,
     .type_name = "N",
     .help = "exit status when busy or timed out",
     .target = &A::conflict_exit_code,
     .show_default = true,
     .check = exit_status_range},
    {.flags = "--token",
     .takes_value = true,
     .help = "use this token (re-acquire when already held with it); else REDLOCK_TOKEN",
     .target = &A::token},
    {.flags = "--token-file",
     .env = "REDLOCK_TOKEN_FILE",
     .takes_value = true,
     .type_name = "FILE",
     .help = "also write the token to FILE, mode 0600",
     .target = &A::token_file},
    {.flags = "--retry-delay",
     .env = "REDLOCK_RETRY_DELAY",
     .takes_value = true,
     .type_name = "DUR",
     .help = "base delay between attempts while polling (jittered)",
     .target = &A::retry_delay,
     .show_default = true},
    {.flags = "--drift",
     .env = "REDLOCK_DRIFT",
     .takes_value = true,
     .type_name = "FACTOR",
     .help = "clock drift factor",
     .target = &A::drift,
     .show_default = true,
     .check = drift_range},
    {.flags = "--owner",
     .env = "REDLOCK_OWNER",
     .takes_value = true,
     .type_name = "STR",
     .help = "who holds it, shown by status (default user@host:pid)",
     .target = &A::owner},
    limit_row(&A::limit),
    shared_row(&A::shared),
    {.flags = "--no-writer-priority",
     .env = "REDLOCK_NO_WRITER_PRIORITY",
     .takes_value = false,
     .help = "with --shared: go in past writers waiting for the readers to leave",
     .target = &A::no_writer_priority},
    {.flags = "--fair",
     .env = "REDLOCK_FAIR",
     .takes_value = false,
     .help = "wait in arrival order: while a fair waiter waits, the lock goes to the queue's head alone",
     .target = &A::fair},
    {.flags = "--max-queue",
     .env = "REDLOCK_MAX_QUEUE",
     .takes_value = true,
     .type_name = "N",
     .help = "give up at once, busy, when N waiters are already queued",
     .target = &A::max_queue,
     .check = queue_range},
    {.flags = "--fence-ttl",
     .env = "REDLOCK_FENCE_TTL",
     .takes_value = true,
     .type_name = "DUR",
     .help = "the fencing counter expires after DUR without an acquisition (at least 1h; fences still increase)",
     .target = &A::fence_ttl,
     .show_default = true},
};

}  // namespace

void add_acquire_options(Subcommand& sub, AcquireOptions& o, const GlobalOptions& global) {
  sub.argument("NAME", o.name, "the lock's name").rows(o, std::span<const OptionRow<A>>(kAcquireOptions), global);
}

namespace {

// --token, else the token of the enclosing run whose lock this is (re-entered), else REDLOCK_TOKEN
// outside any run, else a new one.
void plan_token(AcquirePlan& plan, const std::string& token, const GlobalOptions& global) {
  const auto locks = enclosing_locks();
  const EnclosingLock* same = nullptr;
  if (!locks.empty())
    same = find_enclosing(locks, plan.spec.keys.lock, servers_signature(configured_servers(global)), plan.limit > 0);
  if (same && (token.empty() || token == same->token)) {
    refuse_marker(same->token, "REDLOCK_TOKEN");
    plan.spec.token = same->token;
    plan.reentry = AcquirePlan::Reentry::Enclosing;
    plan.enclosing_fence = same->fence;
    return;
  }
  if (!same && token.empty() && plan.limit == 0 && !plan.spec.keys.reader) {
    auto alike = std::find_if(locks.begin(), locks.end(),
                              [&](const EnclosingLock& l) { return l.key == plan.spec.keys.lock && !l.semaphore; });
    if (alike != locks.end()) plan.lookalike = {alike->token, alike->fence};
  }
  const char* shared = environment_variable("REDLOCK_TOKEN");
  if (token.empty() && shared && *shared && faults::enabled(faults::Fault::InheritAnyToken))
    return plan_token(plan, shared, global);
  if (!token.empty()) {
    plan.spec.token = token;
    bool handed_on = std::any_of(locks.begin(), locks.end(), [&](const auto& l) { return l.token == token; });
    if (handed_on) plan.reentry = AcquirePlan::Reentry::IfHeld;
    return;
  }
  auto inherited = locks.empty() ? inherited_token(global, plan.spec.keys.lock, plan.limit > 0) : std::nullopt;
  plan.spec.token = inherited ? *inherited : make_token();
  plan.spec.new_token = !inherited;
}

// -v: a wait that goes on without a quorum says so, once each time it starts to (busy is the
// usual case and says nothing).
std::function<void(const AcquireResult&, TimePoint)> no_quorum_report(const GlobalOptions& global,
                                                                      const std::string& name, TimePoint deadline) {
  auto short_of_quorum = std::make_shared<bool>(false);
  return [&global, name, deadline, short_of_quorum](const AcquireResult& r, TimePoint) {
    bool now_short = r.outcome == AcquireOutcome::NoQuorum;
    if (now_short && !*short_of_quorum) {
      auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
      verbose(global, 1,
              printable(name) + ": no quorum (" + r.message + "); retrying " +
                  (deadline == kNever ? "until it answers" : "until the wait ends in " + format_duration(left)));
    }
    *short_of_quorum = now_short;
  };
}

// -v: a queued waiter's place in line, each time it changes.
void report_place(std::function<void(const AcquireResult&, TimePoint)>& on_retry, const GlobalOptions& global,
                  const std::string& name) {
  auto last = std::make_shared<std::optional<std::int64_t>>();
  on_retry = [&global, name, last, before = std::move(on_retry)](const AcquireResult& r, TimePoint next) {
    if (before) before(r, next);
    if (!r.place || r.place == *last) return;
    *last = r.place;
    verbose(global, 1,
            printable(name) + ": waiting, position " + std::to_string(*r.place) + " in the queue" +
                (r.ticket > 0 ? " (ticket " + std::to_string(r.ticket) + ")" : ""));
  };
}

// The lock's mode and the queue's options, as given.
struct Modes {
  bool shared;
  std::size_t limit;
  bool fair;  // --fair and --max-queue: the queue's order is the mutex's alone
  std::size_t max_queue;
};

// Of two that exclude each other (--shared and --limit; either with --fair or --max-queue), the
// one given nearer wins (the command line over the environment over the configuration file), as
// -n does over REDLOCK_WAIT; given in one place, they are a usage error.
Modes resolve_modes(const AcquireOptions& o, const GlobalOptions& global) {
  Modes m{o.shared, o.limit, o.fair, o.max_queue};
  const std::span<const OptionRow<A>> rows(kAcquireOptions);
  auto first_wins = [&](std::string_view a, std::string_view b) {
    return beats(global, placed(*find_row(rows, a)), placed(*find_row(rows, b)),
                 a == "--shared" ? "--shared and --limit exclude each other"
                                 : std::string(a) + " is for a mutex: not with " + std::string(b));
  };
  if (m.shared && m.limit > 0) {
    if (first_wins("--shared", "--limit")) {
      m.limit = 0;
    } else {
      m.shared = false;
    }
  }
  for (const std::string_view queue : {"--fair", "--max-queue"}) {
    const bool given = queue == "--fair" ? m.fair : m.max_queue > 0;
    if (!given || !(m.shared || m.limit > 0)) continue;
    if (first_wins(queue, m.shared ? "--shared" : "--limit")) {
      m.shared = false;
      m.limit = 0;
    } else if (queue == "--fair") {
      m.fair = false;
    } else {
      m.max_queue = 0;
    }
  }
  return m;
}

}  // namespace

AcquirePlan plan_acquire(const AcquireOptions& o, const GlobalOptions& global) {
  AcquirePlan plan;
  plan.spec.keys = lock_keys(global, o.name);
  plan.spec.ttl = ttl_option(o.ttl, "--ttl");
  // CLI11's range check lets NaN through (every comparison with it is false).
  if (!(o.drift >= 0.0 && o.drift <= 0.5)) usage_error("--drift: must be a number from 0 to 0.5");
  plan.spec.drift = o.drift;
  require_validity(plan.spec.ttl, o.ttl, o.drift);
  plan.spec.owner = o.owner.empty() ? default_owner() : o.owner;
  const Modes modes = resolve_modes(o, global);
  plan.limit = modes.limit;
  plan.spec.keys = mode_keys(plan.spec.keys, modes.shared, modes.limit);
  plan.spec.fair = modes.fair;
  plan.spec.max_queue = modes.max_queue;
  plan.spec.writer_priority = !o.no_writer_priority;
  plan.spec.fence_ttl = ttl_option(o.fence_ttl, "--fence-ttl");
  if (plan.spec.fence_ttl < kMinFenceTtl) {
    usage_error("--fence-ttl: must be at least 1h (the margin for servers whose clocks disagree)");
  }
  refuse_empty_token(global, o.token);
  plan_token(plan, o.token, global);

  // A script's unset variable (-w "$W") is no wait for ever.
  for (const std::string_view flag : {"-w", "--wait"}) refuse_empty(global, o.wait, flag);
  bool nonblock = o.nonblock;
  bool wait = !o.wait.empty();
  if (nonblock && wait) {
    const std::span<const OptionRow<A>> rows(kAcquireOptions);
    const bool nonblock_wins = beats(global, placed(*find_row(rows, "--nonblock")), placed(*find_row(rows, "--wait")),
                                     "--nonblock and --wait exclude each other");
    (nonblock_wins ? wait : nonblock) = false;
  }
  plan.wait.wait = !nonblock;
  plan.wait.retry_delay = duration_option(o.retry_delay, "--retry-delay", false);
  if (wait) plan.wait.deadline = Clock::now() + duration_option(o.wait, "--wait", true);
  if (global.verbose >= 1) plan.wait.on_retry = no_quorum_report(global, o.name, plan.wait.deadline);
  if (global.verbose >= 1) report_place(plan.wait.on_retry, global, o.name);
  plan.spec.report_place = global.verbose >= 1;
  refuse_empty(global, o.token_file, "--token-file");
  require_private_file(o.token_file, "--token-file");
  return plan;
}

void json_slot(Json& j, const AcquirePlan& plan) {
  if (plan.spec.keys.reader) j["mode"] = "shared";
  if (plan.limit == 0) return;
  j["limit"] = plan.limit;
  j["slot"] = plan.slot ? Json(*plan.slot) : Json(nullptr);
}

void json_fairness(Json& j, const AcquirePlan& plan, const AcquireResult& r) {
  if (plan.spec.fair) j["fairness"] = r.barged ? "degraded" : "fair";
}

void json_acquisition(Json& j, const AcquireResult& r) {
  bool acquired = r.outcome == AcquireOutcome::Acquired;
  j["acquired"] = acquired;
  // A wait a signal ended is "interrupted", never a timeout; "interrupted_by" (added by the caller)
  // says which signal.
  if (!acquired) j["reason"] = outcome_name(r.outcome);
  j["token"] = acquired ? Json(r.token) : Json(nullptr);
  j["fence"] = acquired ? Json(r.fence) : Json(nullptr);
  j["ttl_ms"] = whole_ms(r.ttl);
  j["validity_ms"] = acquired ? json_ms(r.validity) : 0.0;
  j["elapsed_ms"] = json_ms(r.elapsed);
  j["attempts"] = r.attempts;
  j["quorum"] = json_quorum(r.tally);
  if (!r.message.empty()) j["message"] = r.message;
  if (r.holder) j["holder"] = json_holder(*r.holder);
  j["servers"] = json_servers(r.servers);
}

Json json_holder(const Holder& holder) {
  return {{"owner", holder.owner ? Json(*holder.owner) : Json(nullptr)},
          {"ttl_ms", holder.ttl ? Json(whole_ms(*holder.ttl)) : Json(nullptr)}};
}

// A lookalike enclosing lock (see AcquirePlan::Lookalike) that these servers hold: re-entered, as
// the enclosing run's own, rather than waited for by the command inside it for ever.
std::optional<StatusResult> lookalike_status(Redlock& redlock, AcquirePlan& plan) {
  if (!plan.lookalike) return std::nullopt;
  StatusResult s = redlock.status(plan.spec.keys);
  if (s.no_quorum || s.state != LockState::Held || s.token != plan.lookalike->token) return std::nullopt;
  refuse_marker(plan.lookalike->token, "REDLOCK_TOKEN");
  plan.spec.token = plan.lookalike->token;
  plan.spec.new_token = false;
  plan.reentry = AcquirePlan::Reentry::Enclosing;
  plan.enclosing_fence = plan.lookalike->fence;
  return s;
}

std::optional<StatusResult> reentry_status(Redlock& redlock, AcquirePlan& plan) {
  if (plan.reentry == AcquirePlan::Reentry::No) return lookalike_status(redlock, plan);
  if (plan.spec.keys.reader) {
    StatusResult s = reader_status(redlock, plan.spec.keys, plan.spec.token);
    // A reader inside the run that holds the lock alone: that lock covers it.
    if (!s.no_quorum && s.state != LockState::Held) {
      StatusResult alone = redlock.status(derive_keys(plan.spec.keys.lock));
      if (alone.no_quorum || (alone.state == LockState::Held && alone.token == plan.spec.token)) s = alone;
    }
    if (s.no_quorum || s.state == LockState::Held || plan.reentry != AcquirePlan::Reentry::IfHeld) return s;
    return std::nullopt;
  }
  if (plan.limit > 0) {
    // A semaphore's holder is the slot that holds the token; in none, the lock is not held.
    Semaphore semaphore(redlock, plan.spec.keys.lock, plan.limit);
    plan.slot = semaphore.find(plan.spec.token);
    plan.spec.keys = semaphore.keys().slots[plan.slot.value_or(0)];
  }
  StatusResult s = redlock.status(plan.spec.keys);
  if (s.no_quorum) return s;
  bool held = s.state == LockState::Held && s.token == plan.spec.token && (plan.limit == 0 || plan.slot);
  if (held) return s;
  // Alone inside the run that holds it as a reader: not re-entered, since other readers may hold
  // it too, nor waited for, since that run's own reading would keep it waiting.
  if (plan.limit == 0 && s.token == kSharedMarker &&
      reader_status(redlock, derive_reader_keys(plan.spec.keys.lock), plan.spec.token).state == LockState::Held)
    plan.inside_readers = true;
  if (plan.reentry == AcquirePlan::Reentry::IfHeld) return std::nullopt;
  s.state = LockState::Partial;
  return s;
}

std::optional<std::int64_t> reentry_fence(const AcquirePlan& plan) {
  if (plan.reentry != AcquirePlan::Reentry::Enclosing) return std::nullopt;
  return plan.enclosing_fence;
}

const char* reentry_refusal(const StatusResult& s, const AcquirePlan& plan) {
  if (s.no_quorum) return "no quorum to check the enclosing run's lock";
  if (plan.inside_readers) return "the enclosing run holds it shared: it cannot be taken alone inside that run";
  return "the enclosing run no longer holds the lock";
}

void say_busy(const GlobalOptions& global, const std::string& name, const AcquireResult& r) {
  say(global, name,
      (r.outcome == AcquireOutcome::TimedOut ? "still busy when the wait ran out: " : "busy: ") + r.message);
}

void write_token_file_or_give_back(const std::string& path, const std::string& token,
                                   const std::function<void()>& give_back) {
  if (path.empty()) return;
  try {
    write_token_file(path, token);
  } catch (const Error&) {
    give_back();  // a lock nobody can name is given back
    throw;
  }
}

namespace {

// The answer of a nested acquire: nothing was taken, and the validity is what the enclosing
// holder's lock has left, as a quorum reported it, less the time since and the drift allowance.
void json_reentry(Json& j, const AcquirePlan& plan, const StatusResult& s) {
  const bool held = s.state == LockState::Held;
  j["acquired"] = held;
  j["nested"] = true;
  if (!held) j["reason"] = s.no_quorum ? "no_quorum" : "busy";
  j["token"] = held ? Json(plan.spec.token) : Json(nullptr);
  auto fence = reentry_fence(plan);
  j["fence"] = held && fence ? Json(*fence) : Json(nullptr);
  j["ttl_ms"] = whole_ms(plan.spec.ttl);
  if (held && s.ttl_ms >= 0) {
    Duration left = Millis(s.ttl_ms) - s.elapsed - drift_allowance(Millis(s.ttl_ms), plan.spec.drift);
    j["validity_ms"] = json_ms(std::max(left, Duration::zero()));
  } else {
    j["validity_ms"] = held ? Json(nullptr) : Json(0.0);
  }
  j["elapsed_ms"] = json_ms(s.elapsed);
  j["attempts"] = 1;
  j["quorum"] = json_quorum(s.tally);
  j["servers"] = json_servers(s.servers);
  json_slot(j, plan);
}

int answer_reentry(const AcquireOptions& o, const GlobalOptions& global, const AcquirePlan& plan, const StatusResult& s,
                   Json& j) {
  const bool held = s.state == LockState::Held;
  if (held) write_token_file(o.token_file, plan.spec.token);
  if (global.json) {
    json_reentry(j, plan, s);
    if (s.no_quorum) no_quorum(&j, o.name, reentry_refusal(s, plan));
    print_json(j);
  } else if (held) {
    print_line(plan.spec.token);
  } else if (s.no_quorum) {
    no_quorum(nullptr, o.name, reentry_refusal(s, plan));
  }
  if (held) return exit_code::kOk;
  if (s.no_quorum) return exit_code::kNoQuorum;
  say(global, o.name, reentry_refusal(s, plan));
  return o.conflict_exit_code;
}

// One acquisition by the acquire command: taken, then given back if it cannot be kept (a signal
// while the last attempt was out, a token file or stdout that cannot be written).
class Acquisition {
 public:
  Acquisition(const AcquireOptions& o, const GlobalOptions& global, AcquirePlan& plan, Transport& transport,
              Redlock& redlock)
      : o_(o), global_(global), plan_(plan), transport_(transport), redlock_(redlock) {}

  int run(Json& j) {
    SignalCatcher signals({SIGINT, SIGTERM, SIGHUP});
    transport_.set_wait_sigmask(&signals.wait_mask());
    plan_.wait.interrupted = [&signals] { return signals.pending({SIGINT, SIGTERM, SIGHUP}); };
    AcquireResult r = take_lock(redlock_, plan_);
    verbose_servers(global_, r.servers);
    const int stopped_by = signals.first_caught({SIGINT, SIGTERM, SIGHUP});
    if (r.outcome == AcquireOutcome::Acquired && stopped_by) {
      give_back();  // stopped while the last attempt was out
      r.outcome = AcquireOutcome::Interrupted;
    }
    if (r.outcome == AcquireOutcome::Acquired)
      write_token_file_or_give_back(o_.token_file, r.token, [this] { give_back(); });
    transport_.flush(Clock::now() + request_timeout(global_));
    deliver(j, r, stopped_by ? stopped_by : SIGTERM);
    return exit_status(r, stopped_by ? stopped_by : SIGTERM);
  }

 private:
  // A lock this command cannot keep goes back rather than to its TTL. As in run, only until a
  // quorum released: a frozen server has its release on the way.
  void give_back() {
    redlock_.release(plan_.spec.keys, plan_.spec.token, false, Redlock::ReleaseWait::Outcome);
    transport_.flush(Clock::now() + request_timeout(global_));
  }

  void deliver(Json& j, const AcquireResult& r, int signal) {
    bool delivered = true;
    if (global_.json) {
      json_acquisition(j, r);
      json_slot(j, plan_);
      json_fairness(j, plan_, r);
      if (r.outcome == AcquireOutcome::Interrupted) j["interrupted_by"] = signal_name(signal);
      if (r.outcome == AcquireOutcome::NoQuorum) no_quorum(&j, o_.name, "no quorum: " + r.message);
      delivered = print_json(j);
    } else if (r.outcome == AcquireOutcome::Acquired) {
      delivered = print_line(r.token);
    }
    if (r.outcome == AcquireOutcome::Acquired && !delivered) {
      // Nobody has seen the token, so nobody could release the lock before its TTL: give it back.
      int err = errno;
      give_back();
      config_error(std::string("stdout: ") + std::strerror(err) + "; the lock was given back");
    }
  }

  int exit_status(const AcquireResult& r, int signal) const {
    switch (r.outcome) {
      case AcquireOutcome::Acquired:
        verbose(global_, 1,
                "acquired " + printable(o_.name) + " on " + votes_text(r.tally) + ", fence " + std::to_string(r.fence));
        return exit_code::kOk;
      case AcquireOutcome::Busy:
      case AcquireOutcome::TimedOut:
        say_busy(global_, o_.name, r);
        return o_.conflict_exit_code;
      case AcquireOutcome::NoQuorum:
        return global_.json ? exit_code::kNoQuorum : no_quorum(nullptr, o_.name, "no quorum: " + r.message);
      case AcquireOutcome::Interrupted:
        return exit_code::signaled(signal);
    }
    return exit_code::kInternal;
  }

  const AcquireOptions& o_;
  const GlobalOptions& global_;
  AcquirePlan& plan_;
  Transport& transport_;
  Redlock& redlock_;
};

int run_acquire(const AcquireOptions& o, const GlobalOptions& global) {
  AcquirePlan plan = plan_acquire(o, global);
  auto transport = connect_servers(global);
  Redlock redlock(*transport, request_timeout(global));
  Json j = json_head("acquire", o.name, plan.spec.keys.lock);
  if (auto reentered = reentry_status(redlock, plan)) return answer_reentry(o, global, plan, *reentered, j);
  return Acquisition(o, global, plan, *transport, redlock).run(j);
}

}  // namespace

void setup_acquire(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto options = std::make_shared<AcquireOptions>();
  Subcommand sub(app, "acquire", "take the lock and print its token");
  add_acquire_options(sub, *options, global);
  sub.on_parsed([options, &global, &action] { action = [options, &global] { return run_acquire(*options, global); }; });
}

}  // namespace redlock::cli
