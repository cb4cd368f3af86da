#include <doctest/doctest.h>

#include "core/util/env_file.hpp"
#include "core/util/error.hpp"

using namespace redlock;

namespace {

std::string error_of(const char* text) {
  try {
    parse_env_file(text, "/etc/redlock/config");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Config);
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("environment files: the lines of a systemd EnvironmentFile=") {
  auto settings = parse_env_file(
      "# servers for every host\n"
      "\n"
      "REDLOCK_SERVERS=r1:6379,r2:6379\n"
      "  ; a comment too\n"
      "REDLOCK_PREFIX = \"locks: \\\"a\\\" \\\\ \\$x\"  \n"
      "REDLOCK_OWNER='it''s $HOME'\r\n"
      "REDLOCK_TIMEOUT=250ms   \n"
      "REDLOCK_USER=\n"
      "REDLOCK_WAIT=a\\ b c\n",
      "f");
  REQUIRE(settings.size() == 6);
  CHECK(settings[0].name == "REDLOCK_SERVERS");
  CHECK(settings[0].value == "r1:6379,r2:6379");
  CHECK(settings[0].line == 3);
  CHECK(settings[1].name == "REDLOCK_PREFIX");
  CHECK(settings[1].value == "locks: \"a\" \\ $x");
  CHECK(settings[1].line == 5);
  CHECK(settings[2].value == "its $HOME");
  CHECK(settings[3].value == "250ms");
  CHECK(settings[4].value.empty());
  CHECK(settings[5].value == "a b c");
  CHECK(parse_env_file("", "f").empty());
  CHECK(parse_env_file("A=1\nA=2", "f").back().value == "2");
}

TEST_CASE("environment files: a malformed line is named, its value never shown") {
  CHECK(error_of("\n\nREDLOCK_SERVERS") == "/etc/redlock/config:3: expected NAME=VALUE");
  CHECK(error_of("export REDLOCK_PASSWORD=hunter2").find("/etc/redlock/config:1: expected NAME=VALUE") == 0);
  CHECK(error_of("1X=2").find(":1: expected NAME=VALUE") != std::string::npos);
  for (const char* bad : {"REDLOCK_PASSWORD=\"hunter2", "REDLOCK_PASSWORD='hunter2", "REDLOCK_PASSWORD=hunter2\\"}) {
    CAPTURE(bad);
    std::string message = error_of(bad);
    CHECK(message.find("/etc/redlock/config:1: REDLOCK_PASSWORD: ") == 0);
    CHECK(message.find("hunter2") == std::string::npos);
  }
}
