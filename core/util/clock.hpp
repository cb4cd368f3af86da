// Every deadline, validity and renewal runs on the monotonic clock; wall time appears only in output.
#pragma once

#include <chrono>

namespace redlock {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = Clock::duration;
using Millis = std::chrono::milliseconds;

// A time point far enough away to mean "no deadline" without overflowing additions.
inline constexpr TimePoint kNever = TimePoint(Duration(std::chrono::hours(24 * 365 * 100)));

inline double to_ms(Duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

}  // namespace redlock
