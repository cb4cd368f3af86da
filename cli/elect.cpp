// `elect`: a standby loop for a service that must run on one host at a time. Each term waits for the
// lock and runs the command while holding it, as `run` does; when the command ends or the lock is
// lost, the lock goes back and the loop campaigns again. `--observe` only watches who leads.
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "commands.hpp"
#include "core/util/duration.hpp"
#include "core/util/error.hpp"
#include "exit_codes.hpp"
#include "option_table.hpp"
#include "run.hpp"
#include "signals.hpp"
#include "supervisor.hpp"

namespace redlock::cli {

namespace {

struct ElectOptions {
  RunOptions run;
  bool once = false;
  int max_terms = 0;  // 0: no limit
  bool observe = false;
};

using El = ElectOptions;

const OptionRow<El> kElectOptions[] = {
    {.flags = "--once", .env = "REDLOCK_ONCE", .help = "stop after the first term", .target = &El::once},
    {.flags = "--max-terms",
     .env = "REDLOCK_MAX_TERMS",
     .takes_value = true,
     .type_name = "N",
     .help = "stop after N terms",
     .target = &El::max_terms,
     .check = term_count_range},
    {.flags = "--observe",
     .env = "REDLOCK_OBSERVE",
     .help = "print a JSON line at each change of leader, until stopped",
     .target = &El::observe},
};

const std::vector<int> kStop = {SIGHUP, SIGINT, SIGTERM};

// The observer polls at least this often: a leader that dies without a word (SIGKILL) leaves a lock
// that expires without one.
constexpr Duration kObservePoll = std::chrono::seconds(1);

// Whether the loop goes on after a term that ended this way: a command that ran (whatever its
// status) or a lock that was lost. Not after busy (-n, --wait), no quorum or a command that could
// not be started: campaigning again would change nothing.
bool campaign_again(const Json& report) {
  const std::string outcome = report.value("outcome", "");
  return outcome == "child_exited" || outcome == "child_signaled" || outcome == "lost";
}

// The signal, SIGINT or SIGQUIT, that killed the term's command: ^C or ^\ at the terminal, which
// reach the command's group only. It ends the loop as it ends a shell's loop; 0 for none.
int interrupted(const Json& report) {
  if (report.value("outcome", "") != "child_signaled") return 0;
  const std::string signal = report.value("signal", "");
  for (int sig : {SIGINT, SIGQUIT}) {
    if (signal == signal_name(sig)) return sig;
  }
  return 0;
}

// The line that ends a term that began (the lock taken), unless -q: how long it lasted and how it
// ended. A term that never began (busy, no quorum) has said what it is.
void say_term_over(const GlobalOptions& global, const std::string& name, const Json& report) {
  const bool ran = campaign_again(report);
  if (!ran && !(report.value("acquired", false) && report.value("outcome", "") == "error")) return;
  const Json signal = report.value("signal", Json());
  std::string how;
  if (!ran) {
    const bool not_run = report.value("child_exit", Json()).is_number();
    how = std::string(not_run ? "the command could not be run" : "an error") + ", exit " +
          std::to_string(report.value("exit_status", 0));
  } else if (report.value("outcome", "") == "lost") {
    how = "the lock was lost, exit " + std::to_string(report.value("exit_status", 0));
  } else if (signal.is_string()) {
    how = "the command was killed by " + signal.get<std::string>();
  } else {
    how = "the command exited with " + std::to_string(report.value("child_exit", 0));
  }
  const auto held = std::chrono::milliseconds(static_cast<std::int64_t>(report.value("held_ms", 0.0)));
  verbose(global, 0,
          printable(name) + ": term " + std::to_string(report.value("fence", std::int64_t{0})) + " over after " +
              format_duration(held) + ": " + how);
}

// LIMIT: the number of terms after which the loop ends, 0 for none.
int elect_loop(const ElectOptions& o, const GlobalOptions& global, int limit) {
  const std::string& name = o.run.acquire.name;
  Json report = json_head("elect", name, global.prefix + name);
  SignalCatcher signals(run_signals());
  try {
    Terms terms(o.run, global, report, signals);
    terms.connect();
    for (int n = 1;; ++n) {
      report = json_head("elect", name, global.prefix + name);
      report["terms"] = n;
      const int status = terms.term();
      say_term_over(global, name, report);
      write_report(o.run.report, report, global, true);
      if (global.json) print_json_after_command(report);
      // The lock was let go before the term returned.
      if (int sig = terms.stopped_by()) return exit_code::signaled(sig);
      if (int sig = interrupted(report)) return exit_code::signaled(sig);
      if (!campaign_again(report) || (limit > 0 && n >= limit)) return status;
      // A standby woken by our release tries within a round trip: it takes over before we try again.
      if (!terms.rest(terms.retry_delay())) return exit_code::signaled(terms.stopped_by());
    }
  } catch (const Error& e) {
    write_error_report(o.run.report, report, e, global);
    throw;
  }
}

// A leader as the observer prints it: who holds the lock, or that nobody does.
Json leadership(const std::string& name, const std::string& key, const StatusResult& s) {
  const bool held = s.state == LockState::Held;
  Json j = json_head("elect", name, key);
  j["state"] = state_name(s.state);
  j["owner"] = held && s.owner ? Json(*s.owner) : Json(nullptr);
  j["fence"] = s.fence;
  j["since"] = held && s.since_unix_ms ? Json(wall_time(*s.since_unix_ms)) : Json(nullptr);
  return j;
}

// --observe: a line at start and one at each change of leader (a new token) or when the lock is
// free; partial and unknown states (a leader coming or going, servers away) print nothing.
int observe(const ElectOptions& o, const GlobalOptions& global) {
  const std::string& name = o.run.acquire.name;
  const LockKeys keys = lock_keys(global, name);
  bool woken = false;  // a message on the lock's channel: something changed
  auto transport = connect_servers(global);
  Redlock redlock(*transport, request_timeout(global));
  SignalCatcher signals(kStop);
  transport->set_wait_sigmask(&signals.wait_mask());
  transport->subscribe(keys.channel, [&woken](const ChannelEvent&) { woken = true; });
  std::optional<std::string> shown;  // the token of the last line printed, empty for free
  bool short_of_quorum = false;
  while (!signals.pending(kStop)) {
    woken = false;
    const StatusResult s = redlock.status(keys);
    if (s.no_quorum && !short_of_quorum) warn(global, printable(name) + ": no quorum answered; still watching");
    short_of_quorum = s.no_quorum;
    const bool settled = s.state == LockState::Held || s.state == LockState::Free;
    const std::string leader = s.state == LockState::Held && s.token ? *s.token : std::string();
    if (settled && shown != leader) {
      shown = leader;
      if (!print_json(leadership(name, keys.lock, s))) {
        return report_error(nullptr, exit_code::kConfig, std::string("stdout: ") + std::strerror(errno));
      }
    }
    TimePoint next = Clock::now() + kObservePoll;
    // A leader that stops renewing is gone when its TTL runs out, which nothing announces.
    if (s.state == LockState::Held && s.ttl_ms >= 0)
      next = std::min(next, Clock::now() + std::chrono::milliseconds(s.ttl_ms + 1));
    transport->run_until([&] { return woken || signals.any(); }, next);
  }
  return exit_code::signaled(signals.first_caught(kStop));
}

// Whether to observe: --observe and a command exclude each other, and the one given nearer wins
// (a flag over the environment), as -n does over REDLOCK_WAIT. CMD's words are on the command line.
bool observes(const ElectOptions& o, const GlobalOptions& global) {
  const bool words = command_words_given(o.run, global);
  if (!o.observe || (!words && o.run.command.empty())) return o.observe;
  const Placed observe = placed(*find_row(std::span<const OptionRow<El>>(kElectOptions), "--observe"));
  if (words) {
    if (place(global, observe) == kOnCommandLine) usage_error("--observe takes no command: it only watches who leads");
    return false;
  }
  return beats(global, observe, command_option(), "--observe and --command exclude each other");
}

// A candidate's options mean nothing to an observer, who never campaigns: given with --observe on
// the command line, they are a mistake, not something to ignore while it watches for ever.
void refuse_candidate_options(const GlobalOptions& global) {
  for (const std::string_view flag : {"--once", "--max-terms", "-n", "--nonblock", "-w", "--wait"}) {
    if (given_on_command_line(global, {flag}))
      usage_error(std::string(flag) + " is a candidate's: --observe only watches who leads");
  }
}

int run_elect(const ElectOptions& o, const GlobalOptions& global) {
  // A leader is alone: readers, or the holders of a semaphore's slots, would all lead at once.
  if (o.run.acquire.shared) usage_error("elect takes no --shared: a leader holds the lock alone");
  if (o.run.acquire.limit > 0) usage_error("elect takes no --limit: a leader holds the lock alone");
  if (observes(o, global)) {
    refuse_candidate_options(global);
    return observe(o, global);
  }
  if (!command_words_given(o.run, global) && o.run.command.empty())
    usage_error("elect needs a command: -- CMD [ARG...] or -c 'SHELL COMMAND' (or --observe)");
  bool once = o.once;
  if (once && o.max_terms > 0) {
    const std::span<const OptionRow<El>> rows(kElectOptions);
    once = beats(global, placed(*find_row(rows, "--once")), placed(*find_row(rows, "--max-terms")),
                 "--once and --max-terms exclude each other (--once is --max-terms 1)");
  }
  return elect_loop(o, global, once ? 1 : o.max_terms);
}

}  // namespace

void setup_elect(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto o = std::make_shared<ElectOptions>();
  Subcommand sub(app, "elect", "run a command on one host at a time, campaigning again when it ends");
  add_run_options(sub, o->run, global);
  sub.rows(*o, std::span<const OptionRow<ElectOptions>>(kElectOptions), global);
  sub.on_parsed([o, sub, &global, &action] {
    o->run.kill_after_given = kill_after_given(sub);
    action = [o, &global] { return run_elect(*o, global); };
  });
}

}  // namespace redlock::cli
