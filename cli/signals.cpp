#include "signals.hpp"

#include <csignal>

namespace redlock::cli {

namespace {

volatile sig_atomic_t g_caught[NSIG];
// Which signal arrived first (for the exit status 128+N when a wait is stopped).
volatile sig_atomic_t g_first = 0;

void on_signal(int sig, siginfo_t*, void*) {
  g_caught[sig] = 1;
  if (g_first == 0) g_first = sig;
}

}  // namespace

SignalCatcher::SignalCatcher(const std::vector<int>& signals) {
  // A signal the caller ignores stays ignored (nohup's SIGHUP, the SIGINT of a shell's background
  // job), as the classic idiom has it; the command run inherits the ignore.
  for (int s : signals) {
    struct sigaction now {};
    if (s == SIGCHLD || sigaction(s, nullptr, &now) != 0 || now.sa_handler != SIG_IGN) signals_.push_back(s);
  }
  sigset_t block;
  sigemptyset(&block);
  for (int s : signals_) sigaddset(&block, s);
  sigprocmask(SIG_BLOCK, &block, &original_mask_);
  saved_.resize(signals_.size());
  for (std::size_t i = 0; i < signals_.size(); ++i) {
    g_caught[signals_[i]] = 0;
    struct sigaction sa {};
    sa.sa_sigaction = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO;  // and no SA_RESTART: ppoll must return EINTR
    sigaction(signals_[i], &sa, &saved_[i]);
  }
  g_first = 0;
}

SignalCatcher::~SignalCatcher() {
  // The dispositions are restored, but the signals stay blocked: the catcher lives as long as the
  // command, and one that comes after it (a second TERM while we finish) is too late to change
  // anything. Blocked, it is dropped when we exit with the status already decided, instead of
  // killing us by its default action on the way out.
  for (std::size_t i = 0; i < signals_.size(); ++i) sigaction(signals_[i], &saved_[i], nullptr);
}

void SignalCatcher::restore_in_child() const {
  for (std::size_t i = 0; i < signals_.size(); ++i) sigaction(signals_[i], &saved_[i], nullptr);
  sigprocmask(SIG_SETMASK, &original_mask_, nullptr);
}

bool SignalCatcher::any() const {
  for (int s : signals_) {
    if (g_caught[s]) return true;
  }
  return false;
}

std::vector<SignalCatcher::Caught> SignalCatcher::take() {
  std::vector<Caught> out;
  for (int s : signals_) {
    if (g_caught[s]) {
      g_caught[s] = 0;
      out.push_back({s});
    }
  }
  return out;
}

bool SignalCatcher::take(int sig) {
  const bool caught = g_caught[sig] != 0;
  g_caught[sig] = 0;
  return caught;
}

void SignalCatcher::discard(int sig) {
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  const timespec now{};
  while (sigtimedwait(&one, nullptr, &now) == sig) {
  }
  g_caught[sig] = 0;
}

bool SignalCatcher::pending(const std::vector<int>& signals) const {
  for (int s : signals) {
    if (g_caught[s]) return true;
  }
  return false;
}

int SignalCatcher::first_caught(const std::vector<int>& signals) const {
  int first = g_first;
  for (int s : signals) {
    if (s == first) return s;
  }
  for (int s : signals) {
    if (g_caught[s]) return s;
  }
  return 0;
}

}  // namespace redlock::cli
