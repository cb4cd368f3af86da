// The exit statuses of the command line contract.
#pragma once

#include "core/util/error.hpp"

namespace redlock::cli::exit_code {

inline constexpr int kOk = 0;
inline constexpr int kNotHeld = 1;    // status: free or partial; extend/release: not held with this token
inline constexpr int kWarnings = 1;   // doctor: fit for Redlock, but something deserves a look
inline constexpr int kUsage = 64;     // EX_USAGE
inline constexpr int kNoQuorum = 69;  // EX_UNAVAILABLE: fewer than a quorum of servers answered
inline constexpr int kInternal = 70;  // EX_SOFTWARE: a bug or a failing system call
inline constexpr int kBusy = 75;      // EX_TEMPFAIL: busy, or the wait timed out (-E changes it)
inline constexpr int kConfig = 78;    // EX_CONFIG
inline constexpr int kLost = 79;      // run: the lock was lost while CMD ran
inline constexpr int kCannotExecute = 126;
inline constexpr int kNotFound = 127;

// The status of an error of KIND, whichever command it ends.
constexpr int of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Usage:
      return kUsage;
    case ErrorKind::Config:
      return kConfig;
    case ErrorKind::Internal:
      return kInternal;
  }
  return kInternal;
}

// Ended by signal SIG, as a shell says it: 128+SIG.
constexpr int signaled(int sig) {
  return 128 + sig;
}

}  // namespace redlock::cli::exit_code
