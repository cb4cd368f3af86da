#include "core/util/duration.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/util/error.hpp"

namespace redlock {

namespace {

[[noreturn]] void bad(std::string_view text, std::string_view what, std::string_view why) {
  usage_error(std::string(what) + ": '" + std::string(text) + "' " + std::string(why) +
              " (expected NUMBER[ms|s|m|h|d], or several as in 1m30s or \"1min 30s\"; e.g. 30s, 250ms, 1.5)");
}

// The length of the number at the start of TEXT (digits and at most one point), and whether it had
// a digit.
std::size_t number_length(std::string_view text, bool& digits) {
  std::size_t i = 0;
  bool point = false;
  digits = false;
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
  return i;
}

// Milliseconds per UNIT; 0 for a unit that is not one. Go's and etcd's units, and systemd's words.
double unit_ms(std::string_view unit) {
  constexpr std::pair<std::string_view, double> kUnits[] = {
      {"us", 1e-3},      {"usec", 1e-3},   {"ms", 1.0},        {"msec", 1.0},      {"s", 1e3},       {"sec", 1e3},
      {"second", 1e3},   {"seconds", 1e3}, {"m", 60e3},        {"min", 60e3},      {"minute", 60e3}, {"minutes", 60e3},
      {"h", 3600e3},     {"hr", 3600e3},   {"hour", 3600e3},   {"hours", 3600e3},  {"d", 86400e3},   {"day", 86400e3},
      {"days", 86400e3}, {"w", 604800e3},  {"week", 604800e3}, {"weeks", 604800e3}};
  for (const auto& [name, ms] : kUnits) {
    if (unit == name) return ms;
  }
  return 0;
}

}  // namespace

// NUMBER[UNIT] once, or NUMBER UNIT NUMBER UNIT … as Go and systemd write them (1m30s, 1h30m,
// 1d12h, "1min 30s", "2 hours"); a bare number is seconds, and only alone.
Duration parse_duration(std::string_view text, std::string_view what) {
  const auto first = text.find_first_not_of(' ');
  if (first == std::string_view::npos) bad(text, what, "is empty");
  // "-1s" is negative; "--" (an option where a value was wanted) is no duration at all.
  if (text[first] == '-')
    bad(text, what, text.size() > first + 1 && text[first + 1] == '-' ? "is not a duration" : "is negative");
  auto skip_spaces = [](std::string_view t) { return t.substr(std::min(t.size(), t.find_first_not_of(' '))); };
  double ms = 0;
  for (std::string_view rest = skip_spaces(text); !rest.empty(); rest = skip_spaces(rest)) {
    bool digits = false;
    const std::size_t n = number_length(rest, digits);
    if (!digits) bad(text, what, "is not a duration");
    std::size_t u = n;
    while (u < rest.size() && rest[u] == ' ') ++u;
    const std::size_t unit_start = u;
    while (u < rest.size() && rest[u] >= 'a' && rest[u] <= 'z') ++u;
    const std::string_view unit = rest.substr(unit_start, u - unit_start);
    const bool alone = unit.empty() && skip_spaces(rest.substr(u)).empty() && rest.data() == skip_spaces(text).data();
    const double scale = alone ? 1e3 : unit_ms(unit);
    if (scale == 0) bad(text, what, unit.empty() ? "needs a unit after each number" : "has an unknown unit");
    ms += std::strtod(std::string(rest.substr(0, n)).c_str(), nullptr) * scale;  // HUGE_VAL on overflow
    rest = rest.substr(u);
  }
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
