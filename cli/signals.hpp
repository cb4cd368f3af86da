// Signals handled the ninja way: blocked all the time, unblocked only while the event loop waits in
// ppoll(), where a handler that does nothing but count them runs. The loop then sees them as data.
#pragma once

#include <signal.h>

#include <vector>

namespace redlock::cli {

class SignalCatcher {
 public:
  // Catches SIGNALS, but those the caller ignores (SIG_IGN), which stay ignored.
  explicit SignalCatcher(const std::vector<int>& signals);
  ~SignalCatcher();  // restores the dispositions; the signals stay blocked until we exit
  SignalCatcher(const SignalCatcher&) = delete;
  SignalCatcher& operator=(const SignalCatcher&) = delete;

  // The mask to wait with: the one we started with, so our signals get through.
  const sigset_t& wait_mask() const { return original_mask_; }

  struct Caught {
    int sig;
  };
  // The signals caught since the last call (each at most once per call, lowest number first).
  std::vector<Caught> take();
  // Whether any of SIGNALS was caught and not yet taken.
  bool pending(const std::vector<int>& signals) const;
  // The first caught signal of SIGNALS, 0 when none.
  int first_caught(const std::vector<int>& signals) const;
  // Whether any signal is waiting to be taken.
  bool any() const;
  // Takes SIG alone: whether it was caught.
  bool take(int sig);
  // Drops SIG, caught or still blocked on its way: one we sent ourselves and have dealt with.
  void discard(int sig);

  // In the child, before exec: the dispositions and mask as they were before us. System calls only
  // (the child shares our memory until it execs).
  void restore_in_child() const;

 private:
  std::vector<int> signals_;
  std::vector<struct sigaction> saved_;
  sigset_t original_mask_{};
};

}  // namespace redlock::cli
