// `run`'s options and its way of holding a lock while a command runs (renewal, the command stopped
// before the lock can be lost, signals forwarded, the report), which `elect` repeats once per term.
#pragma once

#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "core/util/error.hpp"
#include "exit_codes.hpp"

namespace redlock::cli {

class SignalCatcher;

struct RunOptions {
  AcquireOptions acquire;
  std::string command;
  std::vector<std::string> argv;
  std::string renew;
  std::string signal = "TERM";
  std::string kill_after = "5s";
  bool kill_after_given = false;
  int lost_exit_code = exit_code::kLost;
  std::string report;
  std::string min_hold;
  std::string max_hold;
};

// What run's options come to, checked before anything touches a server.
struct RunPlan {
  AcquirePlan acquire;
  std::vector<std::string> argv;
  Duration renew{};
  int signal = SIGTERM;
  Duration kill_after{};
  std::optional<Duration> min_hold;
  std::optional<Duration> max_hold;
};
// Throws the usage error of options that cannot work together (a --renew not shorter than --ttl, a
// --ttl too short to renew before the command must be stopped, -c with -- CMD…).
RunPlan plan_run(const RunOptions& o, const GlobalOptions& global);

// Binds run's options (acquire's among them, and CMD) to COMMAND, those GLOBAL wants built (see
// option_wanted).
void add_run_options(Subcommand& command, RunOptions& options, const GlobalOptions& global);
// Whether COMMAND's --kill-after was given, on the command line or in its variable: only then is a
// --kill-after cut to the TTL worth a warning.
bool kill_after_given(const Subcommand& command);
// -c/--command and its variable, as option_table rows place them (see beats).
Placed command_option();
// Whether CMD was given as words (always on the command line), not as -c STR.
bool command_words_given(const RunOptions& o, const GlobalOptions& global);

// The signals `run` catches until its report is written (those its caller does not ignore):
// forwarded to the command, TERM, INT and HUP stop a wait for the lock, TSTP stops the command too.
const std::vector<int>& run_signals();

// --report: REPORT written to PATH with mode 0600, replacing it as a whole. A failure is a warning,
// unless WARN_ON_FAILURE is false (the run ends in an error, whose line says enough).
void write_report(const std::string& path, const Json& report, const GlobalOptions& global, bool warn_on_failure);
// --json: REPORT on stdout, on a line of its own after whatever the command wrote there.
void print_json_after_command(const Json& report);
// ERROR, thrown once the report was begun, into REPORT ("outcome": "error"), which goes to PATH.
void write_error_report(const std::string& path, Json& report, const Error& error, const GlobalOptions& global);

class Runner;

// The terms of `elect`: each waits for the lock as `run` does and holds it while the command runs,
// with everything `run` guarantees, and its command has REDLOCK_TERM (the term's fence) too. Each
// term's outcome is written into the report given at construction, which the caller starts afresh.
class Terms {
 public:
  Terms(const RunOptions& o, const GlobalOptions& global, Json& report, SignalCatcher& signals);
  ~Terms();
  Terms(const Terms&) = delete;
  Terms& operator=(const Terms&) = delete;

  // Checks the options and connects; usage and configuration errors are thrown here.
  void connect();
  // One term: waits for the lock with a new token (unless --token) and a new --wait, runs the
  // command while it is held and lets the lock go. Returns what `run` would exit with.
  int term();
  // The first TERM, INT or HUP that came: it ended a wait, reached the command, or is still to be
  // taken; 0 if none.
  int stopped_by() const;
  // Waits FOR, or less when TERM, INT or HUP comes; false when one did.
  bool rest(Duration duration);
  Duration retry_delay() const;

 private:
  std::unique_ptr<Runner> runner_;
};

}  // namespace redlock::cli
