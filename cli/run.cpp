#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "commands.hpp"
#include "core/lock/faults.hpp"
#include "core/lock/lease.hpp"
#include "core/lock/quorum.hpp"
#include "core/lock/semaphore.hpp"
#include "core/util/defer.hpp"
#include "core/util/duration.hpp"
#include "core/util/error.hpp"
#include "core/util/fd.hpp"
#include "enclosing.hpp"
#include "environment.hpp"
#include "exit_codes.hpp"
#include "option_table.hpp"
#include "run.hpp"
#include "signals.hpp"
#include "supervisor.hpp"

namespace redlock::cli {

namespace {

const std::vector<int> kForwarded = {SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGTERM};
const std::vector<int> kStopWaiting = {SIGHUP, SIGINT, SIGTERM};

bool stops_waiting(int sig) {
  return std::find(kStopWaiting.begin(), kStopWaiting.end(), sig) != kStopWaiting.end();
}

// Time left before the child must be dead, so that nothing runs on once the validity can be over.
Duration kill_margin(Duration ttl) {
  return std::clamp<Duration>(ttl / 20, Millis(10), Millis(100));
}

}  // namespace

RunPlan plan_run(const RunOptions& o, const GlobalOptions& global) {
  RunPlan plan;
  plan.acquire = plan_acquire(o.acquire, global);
  // Flag, then environment: a CMD on the command line beats a REDLOCK_COMMAND.
  const bool command_flag = given_on_command_line(global, {"-c", "--command"});
  const std::vector<std::string>& argv = global.command_words.empty() ? o.argv : global.command_words;
  if (command_flag && !argv.empty()) usage_error("give either -c STR or -- CMD [ARG...], not both");
  if (!o.command.empty() && argv.empty()) {
    const char* shell = std::getenv("SHELL");
    plan.argv = {shell && *shell ? shell : "/bin/sh", "-c", o.command};
  } else if (!argv.empty()) {
    plan.argv = argv;
  } else {
    usage_error("run needs a command: -- CMD [ARG...] or -c 'SHELL COMMAND'");
  }
  const Duration ttl = plan.acquire.spec.ttl;
  // Empty from the environment is unset; on the command line (--renew=), a mistake.
  for (const auto& [value, flag] :
       {std::pair{&o.renew, "--renew"}, {&o.min_hold, "--min-hold"}, {&o.max_hold, "--max-hold"}})
    refuse_empty(global, *value, flag);
  plan.renew = o.renew.empty() ? ttl / 3 : duration_option(o.renew, "--renew", false);
  if (plan.renew >= ttl) usage_error("--renew " + o.renew + " must be shorter than --ttl " + o.acquire.ttl);
  plan.signal = parse_signal(o.signal, "--signal");
  plan.kill_after = duration_option(o.kill_after, "--kill-after", true);
  if (plan.kill_after > ttl / 3) {
    // The child must be dead before the validity can run out: TERM, grace, KILL all fit in a third.
    if (o.kill_after_given) {
      warn(global, "--kill-after " + o.kill_after + " is longer than a third of --ttl " + o.acquire.ttl + "; using " +
                       format_duration(ttl / 3));
    }
    plan.kill_after = ttl / 3;
  }
  // The command is stopped --kill-after plus the margin before the validity ends, so a lock taken
  // with no more validity than that is given back; and a TTL whose best validity would stop the
  // command before its first renewal is even sent cannot work at all.
  const Duration margin = kill_margin(ttl);
  plan.acquire.spec.min_validity = plan.kill_after + margin;
  const Duration best = ttl - drift_allowance(ttl, plan.acquire.spec.drift);
  if (best - plan.kill_after - margin <= plan.renew) {
    usage_error("--ttl " + o.acquire.ttl + " is too short for run: the command would be stopped before its first " +
                "renewal (validity at most " + format_duration(best) + "; --renew " + format_duration(plan.renew) +
                ", then --kill-after " + format_duration(plan.kill_after) + " and a " + format_duration(margin) +
                " margin)");
  }
  if (!o.min_hold.empty()) plan.min_hold = duration_option(o.min_hold, "--min-hold", false);
  if (!o.max_hold.empty()) plan.max_hold = duration_option(o.max_hold, "--max-hold", false);
  if (plan.min_hold && plan.max_hold && *plan.max_hold < *plan.min_hold) {
    usage_error("--max-hold " + o.max_hold + " is shorter than --min-hold " + o.min_hold);
  }
  // The report is how a caller learns the outcome: a place it cannot be written is found out
  // before the lock is taken or the command run.
  refuse_empty(global, o.report, "--report");
  require_private_file(o.report, "--report");
  return plan;
}

// Mode 0600: it carries the token.
void write_report(const std::string& path, const Json& report, const GlobalOptions& global, bool warn_on_failure) {
  if (path.empty()) return;
  std::string failed = write_private_file(path, json_text(report) + "\n", "--report");
  if (!failed.empty() && warn_on_failure) warn(global, failed);
}

// A regular file shows its last byte; on a pipe or a terminal it cannot be seen, and a line break
// comes first. A reader gone (`| head -1`) fails the write without killing us (SIGPIPE ignored
// meanwhile, as the command's next term must not have it ignored): the status stays the command's.
void print_json_after_command(const Json& report) {
  struct sigaction ignore {};
  struct sigaction was {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &was);
  const Defer restore([&was] { sigaction(SIGPIPE, &was, nullptr); });
  const std::string outcome = report.value("outcome", "");
  if (outcome == "child_exited" || outcome == "child_signaled" || outcome == "lost") {
    struct stat st {};
    const bool regular = fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode);
    // Where the next write lands: the end of the file when appending (a shell's >>, whose offset
    // stays 0 until the first write), else the offset.
    const int flags = fcntl(STDOUT_FILENO, F_GETFL);
    const off_t end = regular && flags >= 0 && (flags & O_APPEND) ? st.st_size : lseek(STDOUT_FILENO, 0, SEEK_CUR);
    bool fresh_line = end == 0;
    // stdout is often open for writing only (a shell's >): its last byte is read through a file
    // of our own.
    Fd file(regular && end > 0 ? ::open("/proc/self/fd/1", O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK) : -1);
    char last = 0;
    if (file && pread(file.get(), &last, 1, end - 1) == 1) fresh_line = last == '\n';
    if (!fresh_line) print_line("");
  }
  print_json(report);
}

void write_error_report(const std::string& path, Json& report, const Error& e, const GlobalOptions& global) {
  report["outcome"] = "error";
  report["error"] = error_json(exit_code::of(e.kind()), e.what());
  write_report(path, report, global, false);
}

const std::vector<int>& run_signals() {
  // SIGTSTP too: stopped by its default action, redlock would stop while the command ran on.
  static const std::vector<int> signals = {SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGTERM, SIGCHLD, SIGTSTP};
  return signals;
}

class Runner {
 public:
  Runner(const RunOptions& o, const GlobalOptions& global, Json& report, SignalCatcher& signals)
      : o_(o), global_(global), report_(report), signals_(&signals) {
    block_terminal_stops();
  }

  // What we write while CMD's group has the terminal (a -v line, a warning) would stop us under
  // `stty tostop` (SIGTTOU to a background writer), and the renewals with us while CMD runs on.
  // Blocked, the write goes through. The child gets the mask from before the catcher
  // (SignalCatcher::restore_in_child), SIGTTOU unblocked.
  static void block_terminal_stops() {
    sigset_t ttou;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    sigprocmask(SIG_BLOCK, &ttou, nullptr);
  }

  int run() {
    connect();
    if (auto reentered = reentry_status(*redlock_, plan_.acquire)) return run_nested(*reentered);
    return run_locked();
  }

  void connect() {
    plan_ = plan_run(o_, global_);
    report_["key"] = plan_.acquire.spec.keys.lock;
    transport_ = connect_servers(global_);
    redlock_ = std::make_unique<Redlock>(*transport_, request_timeout(global_));
    transport_->set_wait_sigmask(&signals_->wait_mask());
  }

  // elect: a term of its own is taken with a token of its own and waited for as long as --wait
  // says from now, and the command learns its fence as REDLOCK_TERM too. A lock an enclosing run
  // holds is never re-entered: it would be held by that run, not won.
  int term() {
    if (plan_.acquire.reentry != AcquirePlan::Reentry::No) {
      usage_error("elect: " + printable(o_.acquire.name) + " is the lock of an enclosing run, which holds it");
    }
    AcquirePlan fresh = plan_acquire(o_.acquire, global_);
    plan_.acquire.spec.token = fresh.spec.token;
    plan_.acquire.wait.deadline = fresh.wait.deadline;
    plan_.acquire.wait.on_retry = fresh.wait.on_retry;
    elect_ = true;
    return run_locked();
  }

  int stopped_by() const { return stopped_by_ ? stopped_by_ : signals_->first_caught(kStopWaiting); }
  Duration retry_delay() const { return plan_.acquire.wait.retry_delay; }

  bool rest(Duration duration) {
    transport_->run_until(
        [&] {
          stop_if_asked();
          return signals_->pending(kStopWaiting);
        },
        Clock::now() + duration);
    return !signals_->pending(kStopWaiting);
  }

 private:
  // run reports only whether a quorum released, never a server's own answer: it waits for that
  // outcome, not for a frozen or unreachable server's --timeout; the requests are on their way.
  ReleaseResult release(const std::string& token) {
    if (plan_.acquire.slot && faults::enabled(faults::Fault::SemaphoreMajority)) {
      release_majority_places(*redlock_, plan_.acquire.spec.keys, plan_.acquire.limit, token);
    }
    return redlock_->release(plan_.acquire.spec.keys, token, false, Redlock::ReleaseWait::Outcome);
  }

  int finish(const std::string& outcome, int status) {
    report_["outcome"] = outcome;
    report_["exit_status"] = status;
    transport_->flush(Clock::now() + request_timeout(global_));
    return status;
  }

  int run_locked() {
    int stopped_by = 0;
    AcquireResult acq = take_lock(stopped_by);
    if (acq.outcome != AcquireOutcome::Acquired) return refused(acq, stopped_by);
    // A lock nobody can name is given back, and CMD never runs.
    write_token_file_or_give_back(o_.acquire.token_file, acq.token, [&] {
      release(acq.token);
      transport_->flush(Clock::now() + request_timeout(global_));
    });
    report_["token"] = acq.token;
    report_["fence"] = acq.fence;
    if (elect_) {
      // A service's log: each term says when it begins (and elect when it ends), unless -q.
      verbose(global_, 0,
              printable(o_.acquire.name) + ": term " + std::to_string(acq.fence) + " begins, led by " +
                  printable(plan_.acquire.spec.owner));
    } else {
      verbose(global_, 1, "acquired " + printable(o_.acquire.name) + ", fence " + std::to_string(acq.fence));
    }
    return hold(acq);
  }

  // Waits for the lock; STOPPED_BY is the signal that ended the wait, if one did (a lock taken as
  // it came is given back: Interrupted).
  AcquireResult take_lock(int& stopped_by) {
    AcquirePlan& ap = plan_.acquire;
    ap.wait.interrupted = [this] {
      stop_if_asked();
      return signals_->pending(kStopWaiting);
    };
    AcquireResult acq = cli::take_lock(*redlock_, ap);
    verbose_servers(global_, acq.servers);
    report_["acquired"] = acq.outcome == AcquireOutcome::Acquired;
    report_["token"] = nullptr;
    report_["fence"] = nullptr;
    report_["ttl_ms"] = whole_ms(ap.spec.ttl);
    report_["attempts"] = acq.attempts;
    report_["wait_ms"] = json_ms(acq.elapsed);
    report_["quorum"] = json_quorum(acq.tally);
    report_["held_ms"] = 0;
    report_["renewals"] = 0;
    report_["child_exit"] = nullptr;
    report_["signal"] = nullptr;
    json_slot(report_, ap);
    json_fairness(report_, ap, acq);
    // The signals that came while waiting were for redlock: TERM, INT and HUP end the wait, and
    // QUIT, USR1 and USR2 are dropped rather than delivered to the command the moment it starts.
    for (const auto& caught : signals_->take()) {
      if (caught.sig == SIGTSTP) {
        stop_requested_ = true;  // stopped with the command, once it runs
        continue;
      }
      bool stops = stops_waiting(caught.sig);
      if (stops && !stopped_by) stopped_by = caught.sig;
      if (stops && !stopped_by_) stopped_by_ = caught.sig;
      if (!stops && caught.sig != SIGCHLD) verbose(global_, 1, "ignored " + signal_name(caught.sig) + " while waiting");
    }
    if (acq.outcome == AcquireOutcome::Acquired && stopped_by) {
      release(ap.spec.token);
      acq.outcome = AcquireOutcome::Interrupted;
    }
    return acq;
  }

  // A lock not taken: busy, no quorum, or a wait a signal ended.
  int refused(const AcquireResult& acq, int stopped_by) {
    switch (acq.outcome) {
      case AcquireOutcome::NoQuorum:
        no_quorum(&report_, o_.acquire.name, "no quorum: " + acq.message);
        report_["message"] = acq.message;
        report_["servers"] = json_servers(acq.servers);
        return finish("no_quorum", exit_code::kNoQuorum);
      case AcquireOutcome::Interrupted:
        // The contract's outcomes name no signal while waiting: busy, the reason, and which
        // signal ended the wait.
        report_["reason"] = "interrupted";
        report_["interrupted_by"] = signal_name(stopped_by ? stopped_by : SIGTERM);
        return finish("busy", exit_code::signaled(stopped_by ? stopped_by : SIGTERM));
      default:
        say_busy(global_, o_.acquire.name, acq);
        report_["reason"] = outcome_name(acq.outcome);
        report_["message"] = acq.message;
        if (acq.holder) report_["holder"] = json_holder(*acq.holder);
        return finish("busy", o_.acquire.conflict_exit_code);
    }
  }

  // What the command starts with: the lock's REDLOCK_* variables (TOKEN, and FENCE when known: a
  // re-entered lock's may not be), and how this run reached its servers.
  ChildSpec child_spec(const std::string& token, std::optional<std::int64_t> fence) {
    const AcquirePlan& ap = plan_.acquire;
    ChildSpec spec;
    spec.argv = plan_.argv;
    spec.set_env = {{"REDLOCK_NAME", o_.acquire.name},
                    {"REDLOCK_KEY", global_.prefix + o_.acquire.name},
                    {"REDLOCK_TOKEN", token},
                    {"REDLOCK_TTL_MS", std::to_string(whole_ms(ap.spec.ttl))}};
    if (fence) {
      spec.set_env.emplace_back("REDLOCK_FENCE", std::to_string(*fence));
    } else {
      spec.unset_env.emplace_back("REDLOCK_FENCE");
    }
    if (elect_ && fence) spec.set_env.emplace_back("REDLOCK_TERM", std::to_string(*fence));
    // A semaphore's holder: REDLOCK_KEY stays NAME's key (a nested call with --limit finds the slot
    // from the token), and the fence is the slot's own.
    if (ap.slot) {
      spec.set_env.emplace_back("REDLOCK_SLOT", std::to_string(*ap.slot));
    } else {
      spec.unset_env.emplace_back("REDLOCK_SLOT");
    }
    // The locks of the runs around this one, so that a lock of theirs taken again further down is
    // re-entered rather than waited for.
    if (auto outer = enclosing_locks(); !outer.empty()) {
      spec.set_env.emplace_back("REDLOCK_ENCLOSING", enclosing_text(outer));
    } else {
      spec.unset_env.emplace_back("REDLOCK_ENCLOSING");
    }
    connection_for_child(spec);
    return spec;
  }

  // Runs the command while the lock is renewed, and lets the lock go (or reports it lost) after.
  int hold(const AcquireResult& acq) {
    const AcquirePlan& ap = plan_.acquire;
    Child child(child_spec(acq.token, acq.fence), *signals_);
    if (child.exec_errno()) {
      release(acq.token);
      return exec_failed(child);
    }
    Lease lease(*transport_, ap.spec.keys, acq.token, ap.spec.ttl, ap.spec.drift, acq.valid_until, plan_.renew,
                ap.spec.min_validity);
    lease.heal_with({acq.owner_record, acq.fence, ap.spec.fence_ttl});
    std::string lost = supervise(child, lease, acq);
    report_["renewals"] = lease.renewals();
    report_["held_ms"] = json_ms(Clock::now() - acq.taken_at);
    report_child(child);
    if (!lost.empty()) {
      // Ours or not, a compare-and-delete touches only our token.
      release(acq.token);
      report_error(nullptr, o_.lost_exit_code,
                   printable(o_.acquire.name) + ": lock lost while the command ran: " + lost);
      report_["message"] = lost;
      return finish("lost", o_.lost_exit_code);
    }
    let_go(acq);
    return finish(child.term_signal() ? "child_signaled" : "child_exited", child.exit_status());
  }

  void report_child(const Child& child) {
    if (auto code = child.exit_code()) report_["child_exit"] = *code;
    if (auto sig = child.term_signal()) report_["signal"] = signal_name(*sig);
  }

  // The single wait loop: child exit, signals to forward, renewals and the local deadlines.
  // Returns why the lock was lost, empty when it was kept to the end.
  std::string supervise(Child& child, Lease& lease, const AcquireResult& acq) {
    const Duration margin = kill_margin(plan_.acquire.spec.ttl);
    const TimePoint max_hold_at = plan_.max_hold ? acq.taken_at + *plan_.max_hold : kNever;
    std::string lost;
    TimePoint kill_at = kNever;
    bool killed = false;
    for (;;) {
      forward_signals(child);
      if (child.reap()) {
        // Reaped after the validity could have ended (redlock itself was paused, say): nothing
        // shows the command ended in time, so the lock may have been someone else's meanwhile.
        if (lost.empty() && Clock::now() >= lease.valid_until()) {
          lost = "the lock's validity ran out before the command was seen to end (was redlock paused?)";
        }
        // Ended by us (the lock lost, --max-hold) or by a TERM, INT or HUP passed on: nothing of its
        // group outlives the lock, which is given back next. A command that exits by itself may
        // leave what it started, as it would without redlock.
        if (kill_at != kNever || stopped_by_) child.kill_remnants();
        return lost;
      }
      if ((child.stopped() || stop_requested_) && lost.empty()) lost = follow_stop(child, lease);

      switch (lease.poll()) {
        case Lease::Event::Renewed:
          verbose(global_, 2, "renewed, valid for " + format_duration(lease.valid_until() - Clock::now()));
          break;
        case Lease::Event::Failed:
          verbose(global_, 1, "renewal failed: " + lease.last_error());
          break;
        case Lease::Event::Gone:
          if (lost.empty()) lost = "a quorum no longer holds our token (" + lease.last_error() + ")";
          break;
        case Lease::Event::None:
          break;
      }
      TimePoint now = Clock::now();
      const TimePoint signal_at =
          faults::enabled(faults::Fault::NoValidity) ? kNever : lease.valid_until() - plan_.kill_after - margin;
      if (lost.empty() && now >= max_hold_at) lost = "--max-hold " + o_.max_hold + " reached";
      if (lost.empty() && now >= signal_at) {
        lost =
            "no renewal succeeded in time (" + (lease.last_error().empty() ? "servers slow" : lease.last_error()) + ")";
      }
      if (!lost.empty() && kill_at == kNever) {
        verbose(global_, 1, "lost: sending " + signal_name(plan_.signal) + " to the command");
        child.signal_group(plan_.signal);
        kill_at = std::min(now + plan_.kill_after, lease.valid_until() - margin);
      }
      if (!killed && now >= kill_at) {
        child.signal_group(SIGKILL);
        killed = true;
      }
      if (lost.empty() && !lease.renewing() && now >= lease.next_renewal()) lease.start_renewal();

      TimePoint wake = killed ? kNever : kill_at;
      if (lost.empty()) wake = std::min({wake, lease.next_renewal(), signal_at, max_hold_at});
      transport_->run_until([&] { return signals_->any() || lease.decided(); }, wake);
    }
  }

  void forward_signals(const Child& child) {
    for (const auto& caught : signals_->take()) {
      if (caught.sig == SIGTSTP) {
        stop_requested_ = true;
        continue;
      }
      if (caught.sig != SIGCHLD) child.signal_group(caught.sig);
      // A command stopped where we do not follow its stops (a background job that read the
      // terminal: SIGTTIN) would keep a TERM pending for ever, and the lock with it: continued, as
      // a shell's kill continues a stopped job. A stop we follow (^Z) is left to follow_stop.
      if (stops_waiting(caught.sig) && !child.stopped()) child.signal_group(SIGCONT);
      if (stops_waiting(caught.sig) && !stopped_by_) stopped_by_ = caught.sig;
    }
  }

  // While nothing runs: a SIGTSTP stops redlock, as its default action would have.
  void stop_if_asked() {
    if (!signals_->take(SIGTSTP)) return;
    verbose(global_, 1, "stopped (SIGTSTP)");
    raise(SIGSTOP);
  }

  // The command was stopped from the terminal (^Z): we stop with it, so that the shell gets the
  // terminal back; or SIGTSTP came to redlock alone: the command stops with us. Once continued (fg,
  // bg, SIGCONT), the command runs again only if the lock can still be valid; else it is killed
  // before it runs again. Returns why the lock was lost, or empty.
  std::string follow_stop(Child& child, const Lease& lease) {
    if (std::exchange(stop_requested_, false)) {
      verbose(global_, 1, "stopped (SIGTSTP); stopping the command too");
      child.stop_both();
    } else {
      verbose(global_, 1, "the command was stopped; stopping too");
      child.stop_with_child();
    }
    signals_->discard(SIGTSTP);  // what stop_with_child sent our group, ourselves included
    if (Clock::now() < lease.valid_until() - plan_.kill_after - kill_margin(plan_.acquire.spec.ttl)) {
      child.resume();
      return {};
    }
    child.signal_group(SIGKILL);
    return "redlock was stopped (^Z) until the lock's validity could have ended; the command was killed before it "
           "ran again";
  }

  // How this run reaches its servers, for nested calls in the child, as REDLOCK_* variables: the
  // servers without any password, and the global options marked to_child in their table (the
  // prefix, else a nested run of NAME names another key; the timeout, the user and TLS; a password
  // file's path). The passwords go in a sealed memfd named by REDLOCK_PASSWORD_FD; REDLOCK_PASSWORD
  // is removed.
  void connection_for_child(ChildSpec& spec) {
    const Credentials credentials = resolve_credentials(global_);
    std::string list;
    for (const auto& s : credentials.servers) list += (list.empty() ? "" : ",") + s.without_password();
    spec.set_env.emplace_back(kServersVariable, list);
    passwords_ = password_descriptor(credentials);
    if (passwords_) {
      spec.set_env.emplace_back("REDLOCK_PASSWORD_FD", std::to_string(passwords_.get()));
    } else {
      spec.unset_env.emplace_back("REDLOCK_PASSWORD_FD");
    }
    spec.unset_env.emplace_back(kPasswordVariable);
    child_settings(global_, spec.set_env, spec.unset_env);
  }

  // After CMD ended with the lock kept: keep it until --min-hold is over, else release it.
  void let_go(const AcquireResult& acq) {
    const AcquirePlan& ap = plan_.acquire;
    TimePoint now = Clock::now();
    if (plan_.min_hold && acq.taken_at + *plan_.min_hold > now) {
      auto remaining = std::chrono::ceil<Millis>(acq.taken_at + *plan_.min_hold - now);
      ExtendResult r = redlock_->extend(ap.spec.keys, acq.token, remaining, ap.spec.drift);
      report_["min_hold_ms"] = remaining.count();
      report_["released"] = false;
      // A quorum set the expiry: kept. Its validity check does not apply here, since with a few
      // milliseconds left the drift allowance alone exceeds them.
      if (!r.tally.won()) {
        warn(global_, printable(o_.acquire.name) + ": could not keep the lock for --min-hold: " + r.message);
        report_["release_error"] = r.message;
      }
      return;
    }
    ReleaseResult r = release(acq.token);
    report_["released"] = r.released;
    if (!r.released) {
      warn(global_, printable(o_.acquire.name) + ": release failed: " + r.message);
      report_["release_error"] = r.message;
    }
  }

  // CMD could not be started: 127 when not found, else 126, as a shell says it.
  int exec_failed(const Child& child) {
    int status = child.exec_errno() == ENOENT ? exit_code::kNotFound : exit_code::kCannotExecute;
    const std::string& name = plan_.argv[0];
    // A name searched in PATH is "not found"; a path says what the system said of it.
    const bool searched = name.find('/') == std::string::npos;
    std::string message =
        (name.empty() ? "''" : printable(name)) + ": " +
        (status == exit_code::kNotFound && searched ? "command not found" : std::strerror(child.exec_errno()));
    report_error(&report_, status, message);
    report_["message"] = message;
    report_["child_exit"] = status;
    return finish("error", status);
  }

  // Inside a `run` child, on a lock an enclosing run holds with the inherited token: that run
  // renews and releases it.
  int run_nested(const StatusResult& s) {
    report_["nested"] = true;
    // The fields every run reports, as a nested acquire gives them: the check of the lock is the
    // one attempt.
    report_["acquired"] = s.state == LockState::Held;
    report_["ttl_ms"] = whole_ms(plan_.acquire.spec.ttl);
    report_["attempts"] = 1;
    report_["wait_ms"] = json_ms(s.elapsed);
    report_["quorum"] = json_quorum(s.tally);
    report_["held_ms"] = 0;  // until the command has run (the enclosing run renews the lock)
    report_["renewals"] = 0;
    report_["child_exit"] = nullptr;
    report_["signal"] = nullptr;
    report_["token"] = plan_.acquire.spec.token;
    auto fence = reentry_fence(plan_.acquire);
    report_["fence"] = s.state == LockState::Held && fence ? Json(*fence) : Json(nullptr);
    json_slot(report_, plan_.acquire);
    if (s.no_quorum) {
      no_quorum(&report_, o_.acquire.name, reentry_refusal(s, plan_.acquire));
      return finish("no_quorum", exit_code::kNoQuorum);
    }
    if (s.state != LockState::Held) {
      report_error(nullptr, o_.lost_exit_code, printable(o_.acquire.name) + ": " + reentry_refusal(s, plan_.acquire));
      return finish("lost", o_.lost_exit_code);
    }
    write_token_file(o_.acquire.token_file, plan_.acquire.spec.token);
    // The command learns the lock it runs under: the one re-entered, not the run around this one,
    // whose variables it would otherwise inherit (another lock's fence, when that run's is another).
    const TimePoint started = Clock::now();
    Child child(child_spec(plan_.acquire.spec.token, fence), *signals_);
    if (child.exec_errno()) return exec_failed(child);
    while (!child.reap()) {
      forward_signals(child);
      // ^Z at the terminal stops us with the command; a SIGTSTP sent to us alone stops it with us.
      // The enclosing run keeps renewing the lock meanwhile, and follows its own stops.
      if (child.stopped()) {
        child.stop_with_child();
        child.resume();
      }
      if (std::exchange(stop_requested_, false)) {
        child.stop_both();
        child.resume();
      }
      transport_->run_until([&] { return signals_->any(); }, kNever);
    }
    // Ended by a TERM, INT or HUP passed on (the enclosing run's loss, say): nothing of its group
    // outlives it, as in supervise.
    if (stopped_by_) child.kill_remnants();
    report_["held_ms"] = json_ms(Clock::now() - started);
    report_child(child);
    return finish(child.term_signal() ? "child_signaled" : "child_exited", child.exit_status());
  }

  const RunOptions& o_;
  const GlobalOptions& global_;
  Json& report_;
  RunPlan plan_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<Redlock> redlock_;
  SignalCatcher* signals_;
  Fd passwords_;  // the child's REDLOCK_PASSWORD_FD
  bool elect_ = false;
  int stopped_by_ = 0;           // the first TERM, INT or HUP that ended a wait or was forwarded
  bool stop_requested_ = false;  // a SIGTSTP came to redlock alone while it held the lock
};

Terms::Terms(const RunOptions& o, const GlobalOptions& global, Json& report, SignalCatcher& signals)
    : runner_(std::make_unique<Runner>(o, global, report, signals)) {}
Terms::~Terms() = default;
void Terms::connect() {
  runner_->connect();
}
int Terms::term() {
  return runner_->term();
}
int Terms::stopped_by() const {
  return runner_->stopped_by();
}
bool Terms::rest(Duration duration) {
  return runner_->rest(duration);
}
Duration Terms::retry_delay() const {
  return runner_->retry_delay();
}

namespace {

int run_run(const RunOptions& o, const GlobalOptions& global) {
  Json report = json_head("run", o.acquire.name, global.prefix + o.acquire.name);
  // Caught until the report is written: a second TERM must not end us before it is.
  SignalCatcher signals(run_signals());
  int status;
  try {
    Runner runner(o, global, report, signals);
    status = runner.run();
  } catch (const Error& e) {
    write_error_report(o.report, report, e, global);
    throw;
  }
  write_report(o.report, report, global, true);
  if (global.json) print_json_after_command(report);
  return status;
}

}  // namespace

namespace {

using R = RunOptions;

const OptionRow<R> kRunOptions[] = {
    {.flags = "-c,--command",
     .env = "REDLOCK_COMMAND",
     .takes_value = true,
     .type_name = "STR",
     .help = "run STR with $SHELL -c (default /bin/sh)",
     .target = &R::command},
    {.flags = "--renew",
     .env = "REDLOCK_RENEW",
     .takes_value = true,
     .type_name = "DUR",
     .help = "renewal interval (default TTL/3)",
     .target = &R::renew},
    {.flags = "--signal",
     .env = "REDLOCK_SIGNAL",
     .takes_value = true,
     .type_name = "SIG",
     .help = "sent to the command's process group when the lock is lost",
     .target = &R::signal,
     .show_default = true},
    {.flags = "-k,--kill-after",
     .env = "REDLOCK_KILL_AFTER",
     .takes_value = true,
     .type_name = "DUR",
     .help = "then SIGKILL if still running",
     .target = &R::kill_after,
     .show_default = true},
    {.flags = "--lost-exit-code",
     .env = "REDLOCK_LOST_EXIT_CODE",
     .takes_value = true,
     .type_name = "N",
     .help = "exit status when the lock was lost",
     .target = &R::lost_exit_code,
     .show_default = true,
     .check = exit_status_range},
    {.flags = "--report",
     .env = "REDLOCK_REPORT",
     .takes_value = true,
     .type_name = "FILE",
     .help = "write one JSON object there at exit",
     .target = &R::report},
    {.flags = "--min-hold",
     .env = "REDLOCK_MIN_HOLD",
     .takes_value = true,
     .type_name = "DUR",
     .help = "keep the lock at least DUR after it was taken",
     .target = &R::min_hold},
    {.flags = "--max-hold",
     .env = "REDLOCK_MAX_HOLD",
     .takes_value = true,
     .type_name = "DUR",
     .help = "stop renewing after DUR and treat the lock as lost",
     .target = &R::max_hold},
};

}  // namespace

void add_run_options(Subcommand& command, RunOptions& options, const GlobalOptions& global) {
  add_acquire_options(command, options.acquire, global);
  command.arguments("CMD", options.argv,
                    "the command and its arguments: from the first word after NAME that is no option (or after --)");
  command.rows(options, std::span<const OptionRow<R>>(kRunOptions), global);
}

Placed command_option() {
  return placed(*find_row(std::span<const OptionRow<R>>(kRunOptions), "--command"));
}

bool command_words_given(const RunOptions& o, const GlobalOptions& global) {
  return !o.argv.empty() || !global.command_words.empty();
}

bool kill_after_given(const Subcommand& command) {
  const auto* row = find_row(std::span<const OptionRow<R>>(kRunOptions), "--kill-after");
  return command.given("--kill-after") || environment_variable(row->env);
}

void setup_run(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto o = std::make_shared<RunOptions>();
  Subcommand sub(app, "run", "hold the lock for exactly as long as a command runs");
  add_run_options(sub, *o, global);
  sub.on_parsed([o, sub, &global, &action] {
    o->kill_after_given = kill_after_given(sub);
    action = [o, &global] { return run_run(*o, global); };
  });
}

}  // namespace redlock::cli
