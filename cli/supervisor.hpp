// The child of `run`: spawned with the signal mask and dispositions it would have had without us,
// PR_SET_PDEATHSIG so that it dies with us, in its own process group (or, when stdin is a terminal,
// in ours, the terminal's foreground group, so that job control keeps working). In its own group,
// a guard process kills the whole group should we die first, for PR_SET_PDEATHSIG reaches the
// child alone and not what it started.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "signals.hpp"

namespace redlock::cli {

struct ChildSpec {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> set_env;  // added or replaced
  std::vector<std::string> unset_env;
  bool own_group = true;  // false: stay in our process group (stdin is a terminal)
};

class Child {
 public:
  // Forks and execs. When exec fails, the child is reaped here and exec_errno() tells why.
  Child(const ChildSpec& spec, const SignalCatcher& signals);
  // Dismisses the guard: from here on, our end is an ordinary one.
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  int exec_errno() const { return exec_errno_; }
  bool shares_our_group() const { return !own_group_; }

  // Sends SIG to the child's process group (to every process of our group but us when it shares
  // ours), so that `sh -c` cannot swallow it and grandchildren get it too.
  void signal_group(int sig) const;

  // Reaps the child if it has ended; true once it has.
  bool reap();
  bool ended() const { return status_.has_value(); }
  // The shell convention: the exit code, or 128+N when killed by signal N.
  int exit_status() const;
  std::optional<int> exit_code() const;
  std::optional<int> term_signal() const;

 private:
  pid_t pid_ = -1;
  pid_t guard_ = -1;
  int guard_pipe_ = -1;  // our end: while it is open, we are alive
  bool own_group_ = true;
  int exec_errno_ = 0;
  std::optional<int> status_;
};

// "TERM", "SIGTERM", "term" or "15"; throws a usage error otherwise.
int parse_signal(const std::string& text, const char* what);
std::string signal_name(int sig);

}  // namespace redlock::cli
