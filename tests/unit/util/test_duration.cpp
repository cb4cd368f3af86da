#include <doctest/doctest.h>

#include "core/util/duration.hpp"
#include "core/util/error.hpp"

using namespace redlock;
using namespace std::chrono_literals;

TEST_CASE("durations: every unit, fractions, bare seconds") {
  CHECK(parse_duration("30s", "--ttl") == 30s);
  CHECK(parse_duration("30", "--ttl") == 30s);
  CHECK(parse_duration("250ms", "--ttl") == 250ms);
  CHECK(parse_duration("1.5s", "--ttl") == 1500ms);
  CHECK(parse_duration("0.5", "--ttl") == 500ms);
  CHECK(parse_duration("2m", "--ttl") == 120s);
  CHECK(parse_duration("1h", "--ttl") == 3600s);
  CHECK(parse_duration("0", "--ttl") == 0s);
  CHECK(parse_duration(".25", "--ttl") == 250ms);
  CHECK(parse_duration("1.", "--ttl") == 1s);
  CHECK(parse_duration("2d", "--ttl") == 48h);
}

TEST_CASE("durations: compound forms as Go and systemd write them") {
  CHECK(parse_duration("1m30s", "--ttl") == 90s);
  CHECK(parse_duration("1h30m", "--ttl") == 90min);
  CHECK(parse_duration("1d12h", "--ttl") == 36h);
  CHECK(parse_duration("1s500ms", "--ttl") == 1500ms);
  CHECK(parse_duration("1.5m10s", "--ttl") == 100s);
  // systemd's words and spaces.
  CHECK(parse_duration("1min 30s", "--ttl") == 90s);
  CHECK(parse_duration("1min", "--ttl") == 60s);
  CHECK(parse_duration("30sec", "--ttl") == 30s);
  CHECK(parse_duration("2hr", "--ttl") == 2h);
  CHECK(parse_duration("1h 30m", "--ttl") == 90min);
  CHECK(parse_duration("1m 30s", "--ttl") == 90s);
  CHECK(parse_duration("2 hours", "--ttl") == 2h);
  CHECK(parse_duration("1 s", "--ttl") == 1s);
  CHECK(parse_duration(" 5s ", "--ttl") == 5s);
  CHECK(parse_duration("1w", "--ttl") == 168h);
  CHECK(parse_duration("1day 2msec", "--ttl") == 24h + 2ms);
  CHECK(parse_duration("2500usec", "--ttl") == 2500us);
}

TEST_CASE("durations: bad input is a usage error that names the option") {
  for (const char* bad :
       {"",     "-1",   "-1s",   "abc",    "1x",  "1secs", "s",    "1.2.3", "1 s 2", "ms", ".",          "1e3", "+1",
        "0x10", "1m30", "30 1m", "1m-30s", "1mm", "m1",    "1m.s", "   ",   "1m30x", "1M", "5 minutess", " -1s"}) {
    CAPTURE(bad);
    try {
      parse_duration(bad, "--wait");
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::Usage);
      CHECK(std::string(e.what()).find("--wait") == 0);
    }
  }
  // An option where the value was wanted ("--ttl -- CMD") is no duration, not a negative one.
  auto message = [](std::string_view text) {
    try {
      parse_duration(text, "--ttl");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(message("--").find("is not a duration") != std::string::npos);
  CHECK(message("-1s").find("is negative") != std::string::npos);
}

TEST_CASE("durations: absurdly large values are refused, not overflowed") {
  CHECK_THROWS_AS(parse_duration("87601h", "--ttl"), Error);
  CHECK_THROWS_AS(parse_duration(std::string(400, '9'), "--ttl"), Error);
  CHECK(parse_duration("87600h", "--ttl") == kMaxDuration);
}

TEST_CASE("durations: short forms for messages") {
  CHECK(format_duration(250ms) == "250ms");
  CHECK(format_duration(1500ms) == "1.5s");
  CHECK(format_duration(3min) == "3m");
  CHECK(format_duration(3h) == "3h");
}
