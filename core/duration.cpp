#include "duration.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "error.hpp"

namespace redlock {

namespace {

[[noreturn]] void bad(std::string_view text, std::string_view what, std::string_view why) {
  usage_error(std::string(what) + ": '" + std::string(text) + "' " + std::string(why) +
              " (expected NUMBER[ms|s|m|h], e.g. 30s, 250ms, 1.5)");
}

}  // namespace

Duration parse_duration(std::string_view text, std::string_view what) {
  std::size_t i = 0;
  bool digits = false;
  bool point = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c >= '0' && c <= '9') {
      digits = true;
    } else if (c == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (text.empty()) bad(text, what, "is empty");
  if (text[0] == '-') bad(text, what, "is negative");
  if (!digits) bad(text, what, "is not a duration");

  std::string_view unit = text.substr(i);
  double scale_ms;
  if (unit.empty() || unit == "s") {
    scale_ms = 1e3;
  } else if (unit == "ms") {
    scale_ms = 1.0;
  } else if (unit == "m") {
    scale_ms = 60e3;
  } else if (unit == "h") {
    scale_ms = 3600e3;
  } else {
    bad(text, what, "has an unknown unit");
  }

  std::string number_text(text.substr(0, i));
  double number = std::strtod(number_text.c_str(), nullptr);  // HUGE_VAL on overflow, caught below
  double ms = number * scale_ms;
  if (!std::isfinite(ms) || ms > to_ms(kMaxDuration)) bad(text, what, "is too large (at most 87600h)");
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::milli>(ms));
}

std::string format_duration(Duration d) {
  double ms = to_ms(d);
  char buf[64];
  if (ms < 1000.0) {
    std::snprintf(buf, sizeof buf, "%gms", ms);
  } else if (ms < 120e3) {
    std::snprintf(buf, sizeof buf, "%gs", ms / 1e3);
  } else if (ms < 7200e3) {
    std::snprintf(buf, sizeof buf, "%gm", ms / 60e3);
  } else {
    std::snprintf(buf, sizeof buf, "%gh", ms / 3600e3);
  }
  return buf;
}

}  // namespace redlock
