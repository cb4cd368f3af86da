#include "cli/environment.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

using namespace redlock::cli;

TEST_CASE("RedlockVariables: the REDLOCK_* entries, read as getenv reads them") {
  const char* env[] = {
      "HOME=/root",       "REDLOCK_TTL=5s", "REDLOCK_EMPTY=", "REDLOCK_NOVALUE", "REDLOCK_PREFIX=a=b", "REDLOCK_TTL=9s",
      "XREDLOCK_WAIT=1s", "REDLOCK_=odd",   nullptr};
  const RedlockVariables vars(env);
  SUBCASE("a value, and the first of a name set twice") {
    CHECK(std::string(vars.find("REDLOCK_TTL")) == "5s");
    CHECK(std::string(vars.find("REDLOCK_PREFIX")) == "a=b");
  }
  SUBCASE("set but empty is not unset") {
    REQUIRE(vars.find("REDLOCK_EMPTY") != nullptr);
    CHECK(std::string(vars.find("REDLOCK_EMPTY")).empty());
  }
  SUBCASE("an entry without '=' sets nothing, and a name is matched whole") {
    CHECK(vars.find("REDLOCK_NOVALUE") == nullptr);
    CHECK(vars.find("REDLOCK_TT") == nullptr);
    CHECK(vars.find("REDLOCK_TTL=5s") == nullptr);
    CHECK(vars.find("REDLOCK_WAIT") == nullptr);
    CHECK(std::string(vars.find("REDLOCK_")) == "odd");
  }
  SUBCASE("other names are not kept") {
    CHECK(vars.find("HOME") == nullptr);
  }
}

TEST_CASE("RedlockVariables: an empty environment") {
  const char* env[] = {nullptr};
  CHECK(RedlockVariables(env).find("REDLOCK_TTL") == nullptr);
  CHECK(RedlockVariables(nullptr).find("REDLOCK_TTL") == nullptr);
}

TEST_CASE("environment_variable: this process's environment, and what is set through it") {
  // Left set: no option reads this name.
  const std::string name = "REDLOCK_UNIT_TEST_ENVIRONMENT";
  CHECK(environment_variable(name) == nullptr);
  set_environment_variable(name, "one");
  REQUIRE(environment_variable(name) != nullptr);
  CHECK(std::string(environment_variable(name)) == "one");
  set_environment_variable(name, "two");
  CHECK(std::string(environment_variable(name)) == "two");
  CHECK(std::string(std::getenv(name.c_str())) == "two");
  CHECK(environment_variable("PATH") == std::getenv("PATH"));  // other names are getenv's
}
