#include "supervisor.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "core/util/error.hpp"
#include "exit_codes.hpp"

extern char** environ;

namespace redlock::cli {

namespace {

struct SignalName {
  const char* name;
  int number;
};
constexpr SignalName kSignals[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT},   {"KILL", SIGKILL}, {"USR1", SIGUSR1},
    {"USR2", SIGUSR2}, {"TERM", SIGTERM}, {"ALRM", SIGALRM},   {"CONT", SIGCONT}, {"STOP", SIGSTOP},
    {"ABRT", SIGABRT}, {"PIPE", SIGPIPE}, {"WINCH", SIGWINCH},
};

// Makes process group PGID the foreground group of the terminal on stdin. SIGTTOU is blocked
// meanwhile: a process outside the foreground group that sets it would otherwise be stopped. System
// calls only (the child runs it before exec).
void give_terminal(pid_t pgid) {
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  sigprocmask(SIG_BLOCK, &ttou, &old);
  tcsetpgrp(STDIN_FILENO, pgid);
  sigprocmask(SIG_SETMASK, &old, nullptr);
}

// Whether another process shares our process group (`redlock run … | less`: the shell made the
// pipeline one job), read from /proc.
bool group_shared() {
  const pid_t self = getpid(), group = getpgrp();
  DIR* dir = opendir("/proc");
  if (!dir) return true;
  bool shared = false;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == self) continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE* f = std::fopen(path, "re");
    if (!f) continue;
    char line[512];
    const char* close = std::fgets(line, sizeof line, f) ? std::strrchr(line, ')') : nullptr;
    std::fclose(f);
    long group_of = 0;
    char state = 0;
    long ppid = 0;
    if (close && std::sscanf(close + 1, " %c %ld %ld", &state, &ppid, &group_of) == 3 && group_of == group) {
      shared = true;
      break;
    }
  }
  closedir(dir);
  return shared;
}

// Whether we are the foreground job of the terminal on stdin, alone in it: then the child's group
// gets the terminal. Sharing the job with others (a pipeline), the terminal stays theirs and ours,
// and what it sends us (^C) is forwarded to the child like any other signal.
bool foreground_of_terminal() {
  return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp() && !group_shared();
}

// What the child of Child::Child needs; it shares our memory until it execs.
struct Launch {
  bool terminal;
  pid_t group;  // the guard's, or 0 for a group of the child's own
  const SignalCatcher* signals;
  const std::vector<std::string>* candidates;
  char** argv;
  char** shell_argv;  // "sh", a slot for the file, then argv[1...]: for a script without "#!"
  char** envp;
  pid_t parent;
  int exec_errno;  // written by the child when no exec succeeded
};

// Runs in the child on its own stack, sharing our memory: system calls only, no allocation.
int launch_child(void* arg) {
  auto* launch = static_cast<Launch*>(arg);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != launch->parent) _exit(exit_code::kNotFound);  // the parent died before prctl took effect
  if (launch->group == 0 || setpgid(0, launch->group) != 0) setpgid(0, 0);
  // Here as well as in the parent, as shells do: whichever runs first, the command never reads
  // the terminal while it is not yet in the foreground.
  if (launch->terminal) give_terminal(getpgrp());
  launch->signals->restore_in_child();
  int err = ENOENT;
  for (const auto& c : *launch->candidates) {
    execve(c.c_str(), launch->argv, launch->envp);
    if (errno == ENOEXEC) {
      // An executable without "#!" or a known format is a shell script, as execvp and the shell
      // run it (flock and timeout do too).
      launch->shell_argv[1] = const_cast<char*>(c.c_str());
      execve("/bin/sh", launch->shell_argv, launch->envp);
      err = errno == ENOENT ? ENOEXEC : errno;  // no /bin/sh: the file's own failure is the answer
      break;
    }
    // Keep looking on "not there"; any other failure of a found file is the answer.
    if (errno != ENOENT && errno != ENOTDIR) {
      err = errno;
      if (errno != EACCES) break;
    }
  }
  launch->exec_errno = err;
  _exit(err == ENOENT ? exit_code::kNotFound : exit_code::kCannotExecute);
}

// The guard of the child's process group: the leader of a new group, which the child joins, that
// waits until the pipe from us reads end-of-file, which happens only once we are gone, however we
// died (SIGKILL included), and then kills its group, itself with it. Started before the child, it
// covers the child from its first instruction; being a member, it keeps the group's id from being
// reused while it waits. It ignores every signal it can (those sent to the group are
// meant for the command) and keeps no descriptor but its end of the pipe. Returns its pid and our
// end of the pipe, or -1 when it could not be started (the child is then guarded by
// PR_SET_PDEATHSIG alone, as it always is).
pid_t start_guard(int& our_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_NAME, "redlock-guard");
    for (int sig = 1; sig < NSIG; ++sig) {
      if (sig != SIGKILL && sig != SIGSTOP) signal(sig, sig == SIGCHLD ? SIG_DFL : SIG_IGN);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    setpgid(0, 0);
    int in = fds[0];
    if (in != 0) {
      dup2(in, 0);
      in = 0;
    }
    if (close_range(1, ~0U, 0) != 0) {  // before Linux 5.9
      for (int fd = 1; fd < 1024; ++fd) close(fd);
    }
    char c;
    ssize_t n;
    do {
      n = read(in, &c, 1);  // nobody writes: it returns when our end is closed
    } while (n > 0 || (n < 0 && errno == EINTR));
    kill(0, SIGKILL);
    _exit(exit_code::kOk);
  }
  close(fds[0]);
  if (pid < 0) {
    close(fds[1]);
    return -1;
  }
  setpgid(pid, pid);  // also here: the child may join the group before the guard has made it
  our_end = fds[1];
  return pid;
}

// Our environment with SPEC's changes: what the child starts with.
std::vector<std::string> child_environment(const ChildSpec& spec) {
  std::vector<std::string> env_strings;
  std::set<std::string> drop(spec.unset_env.begin(), spec.unset_env.end());
  for (const auto& [k, v] : spec.set_env) drop.insert(k);
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    if (drop.count(entry.substr(0, entry.find('=')))) continue;
    env_strings.push_back(std::move(entry));
  }
  for (const auto& [k, v] : spec.set_env) env_strings.push_back(k + "=" + v);
  return env_strings;
}

// The files to try for command NAME: PATH searched as execvp does it.
std::vector<std::string> exec_candidates(const std::string& name) {
  const char* path_env = std::getenv("PATH");
  std::string path = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  std::vector<std::string> candidates;
  if (name.find('/') != std::string::npos) {
    candidates.push_back(name);
  } else if (!name.empty()) {  // an empty name is not found, as execvp says
    std::size_t start = 0;
    for (;;) {
      auto colon = path.find(':', start);
      std::string dir = path.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      candidates.push_back((dir.empty() ? "." : dir) + "/" + name);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  return candidates;
}

}  // namespace

int parse_signal(const std::string& text, const char* what) {
  std::string t = text;
  for (char& c : t) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (t.starts_with("SIG")) t = t.substr(3);
  for (const auto& s : kSignals) {
    if (t == s.name) return s.number;
  }
  char* end = nullptr;
  long n = std::strtol(t.c_str(), &end, 10);
  if (!t.empty() && *end == '\0' && n > 0 && n < NSIG) return static_cast<int>(n);
  usage_error(std::string(what) + ": unknown signal '" + text + "'");
}

std::string signal_name(int sig) {
  for (const auto& s : kSignals) {
    if (s.number == sig) return std::string("SIG") + s.name;
  }
  return "signal " + std::to_string(sig);
}

Child::Child(const ChildSpec& spec, const SignalCatcher& signals) : terminal_(foreground_of_terminal()) {
  // Everything the child needs is prepared before clone: after it, only system calls.
  std::vector<std::string> env_strings = child_environment(spec);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = spec.argv;
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::string shell_name = "sh";
  std::vector<char*> shell_argv = {shell_name.data(), nullptr};
  shell_argv.insert(shell_argv.end(), argv.begin() + 1, argv.end());
  const std::vector<std::string> candidates = exec_candidates(argv_strings[0]);

  guard_ = start_guard(guard_pipe_);
  Launch launch{
      terminal_, guard_ > 0 ? guard_ : 0, &signals, &candidates, argv.data(), shell_argv.data(), envp.data(), getpid(),
      0};
  // clone(CLONE_VM | CLONE_VFORK), as posix_spawn does it: no page tables copied, and we resume
  // only once the child has exec'd or given up, with its errno in LAUNCH. posix_spawn itself
  // cannot set PR_SET_PDEATHSIG.
  constexpr std::size_t kStackSize = 64 * 1024;
  void* stack = mmap(nullptr, kStackSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) throw Error(ErrorKind::Internal, std::string("mmap: ") + std::strerror(errno));
  pid_ = clone(launch_child, static_cast<char*>(stack) + kStackSize, CLONE_VM | CLONE_VFORK | SIGCHLD, &launch);
  int clone_errno = errno;
  munmap(stack, kStackSize);
  if (pid_ < 0) throw Error(ErrorKind::Internal, std::string("clone: ") + std::strerror(clone_errno));
  // The group the child made or joined before it exec'd (CLONE_VFORK: it has).
  group_ = getpgid(pid_);
  if (group_ <= 0 || group_ == getpgrp()) group_ = pid_;
  if (launch.exec_errno != 0) {
    exec_errno_ = launch.exec_errno;
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    status_ = status;
    if (terminal_) give_terminal(getpgrp());
  }
}

Child::~Child() {
  if (guard_ < 0) return;
  // Killed before our end closes, so that it never reads end-of-file.
  kill(guard_, SIGKILL);
  close(guard_pipe_);
  while (waitpid(guard_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

void Child::signal_group(int sig) const {
  if (status_ && exec_errno_) return;
  kill(-group_, sig);
}

void Child::kill_remnants() const {
  if (guard_ > 0 && group_ == guard_) kill(-group_, SIGKILL);
}

bool Child::reap() {
  if (status_) return true;
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, WNOHANG | (terminal_ ? WUNTRACED : 0));
  } while (r < 0 && errno == EINTR);
  if (r == pid_ && WIFSTOPPED(status)) {
    stopped_ = true;
  } else if (r == pid_) {
    status_ = status;
    if (terminal_ && tcgetpgrp(STDIN_FILENO) == group_) give_terminal(getpgrp());
  }
  return status_.has_value();
}

void Child::stop_with_child() {
  give_terminal(getpgrp());
  // SIGTSTP to our whole group (a pipeline we are part of stops with us), and SIGSTOP to ourselves,
  // who catch SIGTSTP: a shell sees its job stopped only when every member is.
  kill(0, SIGTSTP);
  raise(SIGSTOP);
}

void Child::stop_both() {
  signal_group(SIGSTOP);
  raise(SIGSTOP);
}

void Child::resume() {
  stopped_ = false;
  if (foreground_of_terminal()) give_terminal(group_);
  signal_group(SIGCONT);
}

std::optional<int> Child::exit_code() const {
  if (status_ && WIFEXITED(*status_)) return WEXITSTATUS(*status_);
  return std::nullopt;
}

std::optional<int> Child::term_signal() const {
  if (status_ && WIFSIGNALED(*status_)) return WTERMSIG(*status_);
  return std::nullopt;
}

int Child::exit_status() const {
  if (auto code = exit_code()) return *code;
  if (auto sig = term_signal()) return cli::exit_code::signaled(*sig);
  return cli::exit_code::kOk;
}

}  // namespace redlock::cli
