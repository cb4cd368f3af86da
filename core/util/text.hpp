// Durations as the messages, the JSON and the scripts write them: one home for each form.
// (Prefix tests are std::string::starts_with, C++20's.)
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "core/util/clock.hpp"

namespace redlock {

// D in whole milliseconds, truncated: the *_ms integers and the scripts' PX arguments.
inline std::int64_t whole_ms(Duration d) {
  return std::chrono::duration_cast<Millis>(d).count();
}

// "1500": D as a script's millisecond argument.
inline std::string ms_count(Duration d) {
  return std::to_string(whole_ms(d));
}

// "1500ms": D in whole milliseconds, for a message.
inline std::string ms_text(Duration d) {
  return ms_count(d) + "ms";
}

}  // namespace redlock
