// The child of `run`: spawned with the signal mask and dispositions it would have had without us,
// PR_SET_PDEATHSIG so that it dies with us, in a process group of its own. A guard process in that
// group kills the whole group should we die first, for PR_SET_PDEATHSIG reaches the child alone
// and not what it started. When we are the foreground job of a terminal, the child's group is
// handed the terminal, as a shell hands it to a job, so that ^C and ^Z reach the whole command;
// a ^Z stops us too, so that the shell that started us gets the terminal back.
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
};

class Child {
 public:
  // Forks and execs. When exec fails, the child is reaped here and exec_errno() tells why.
  Child(const ChildSpec& spec, const SignalCatcher& signals);
  // Dismisses the guard: from here on, our end is an ordinary one.
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  int exec_errno() const { return exec_errno_; }

  // Sends SIG to the child's process group, so that `sh -c` cannot swallow it and grandchildren
  // get it too.
  void signal_group(int sig) const;
  // Once the child has been reaped: SIGKILL to what is left of its group (a grandchild that
  // ignores SIGTERM, or shuts down slowly), the guard with it. Only while the guard, the group's
  // leader, keeps its id from being reused; without a guard, nothing.
  void kill_remnants() const;

  // Reaps the child if it has ended; true once it has. The terminal, when the child had it, is
  // taken back.
  bool reap();
  // Whether the child was stopped from the terminal (^Z) since the last resume().
  bool stopped() const { return stopped_; }
  // After a ^Z: takes the terminal back and stops our own process group, as the child's was, so
  // that the shell that started us sees its job stopped. Returns once we are continued.
  void stop_with_child();
  // After a SIGTSTP sent to redlock alone (kill -TSTP): stops the child's process group, then
  // ourselves, so that the command never runs on while its lock cannot be renewed. Returns once
  // we are continued.
  void stop_both();
  // Continues a stopped child, handing it the terminal again when we have it (fg, not bg).
  void resume();
  // The shell convention: the exit code, or 128+N when killed by signal N.
  int exit_status() const;
  std::optional<int> exit_code() const;
  std::optional<int> term_signal() const;

 private:
  pid_t pid_ = -1;
  pid_t group_ = -1;  // the child's process group: the guard's, as a rule
  pid_t guard_ = -1;
  int guard_pipe_ = -1;    // our end: while it is open, we are alive
  bool terminal_ = false;  // the child's group was handed our terminal (stdin)
  bool stopped_ = false;
  int exec_errno_ = 0;
  std::optional<int> status_;
};

// "TERM", "SIGTERM", "term" or "15"; throws a usage error otherwise.
int parse_signal(const std::string& text, const char* what);
std::string signal_name(int sig);

}  // namespace redlock::cli
