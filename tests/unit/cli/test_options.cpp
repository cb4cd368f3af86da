#include <doctest/doctest.h>

#include <CLI/CLI.hpp>
#include <set>

#include "cli/command_table.hpp"
#include "cli/option_table.hpp"
#include "cli/options.hpp"
#include "usage_error.hpp"

using namespace redlock;
using namespace redlock::cli;

TEST_CASE("the global options' table: each flag and each variable once, every variable REDLOCK_*") {
  std::set<std::string> flags;
  std::set<std::string> variables;
  for (const auto& row : global_options()) {
    for_each_flag(row.flags, [&](std::string_view flag) {
      CHECK_MESSAGE(flags.insert(std::string(flag)).second, flag);
      CHECK(flag.starts_with("-"));
    });
    if (row.env.empty()) continue;
    CHECK_MESSAGE(variables.insert(std::string(row.env)).second, row.env);
    CHECK(row.env.starts_with("REDLOCK_"));
  }
  CHECK(flags.count("--timeout") == 1);
  CHECK(variables.count("REDLOCK_PREFIX") == 1);
}

TEST_CASE("the pre-scan knows which global options take a value, in every way of writing them") {
  CHECK(global_takes_value("--timeout"));
  CHECK(global_takes_value("-S"));
  CHECK_FALSE(global_takes_value("--json"));
  CHECK_FALSE(global_takes_value("--timeout=1s"));  // its value is attached
  CHECK(is_global_option("--timeout=1s"));
  CHECK(is_global_option("-vq"));
  CHECK_FALSE(is_global_option("--wait"));
  CHECK(global_flag_set({"redlock", "--json=true", "acquire", "job"}, "--json"));
  CHECK_FALSE(global_flag_set({"redlock", "--json=false", "list"}, "--json"));
  CHECK_FALSE(global_flag_set({"redlock", "run", "job", "--", "--json"}, "--json"));
}

TEST_CASE("a flag on the command line, not in the environment: every form of writing it") {
  GlobalOptions global;
  global.words = {"acquire", "--wait=5s", "-n", "job"};
  CHECK(given_on_command_line(global, {"-w", "--wait"}));
  CHECK(given_on_command_line(global, {"-n", "--nonblock"}));
  CHECK_FALSE(given_on_command_line(global, {"--token"}));
  global.words = {"acquire", "-w5s", "job"};
  CHECK(given_on_command_line(global, {"-w", "--wait"}));
  global.words = {"acquire", "--waiting", "job"};
  CHECK_FALSE(given_on_command_line(global, {"--wait"}));
}

TEST_CASE("of two options that exclude each other: flag, then environment, then file") {
  GlobalOptions global;
  const Placed nonblock{"-n,--nonblock", "REDLOCK_NONBLOCK"}, wait{"-w,--wait", "REDLOCK_WAIT"};
  global.words = {"acquire", "-n", "job"};
  CHECK(beats(global, nonblock, wait, "both"));  // a flag over the environment
  global.words = {"acquire", "job"};
  global.config.applied = {"REDLOCK_WAIT"};
  CHECK(beats(global, nonblock, wait, "both"));  // the environment over the file
  CHECK_FALSE(beats(global, wait, nonblock, "both"));
  global.config.applied = {"REDLOCK_WAIT", "REDLOCK_NONBLOCK"};
  CHECK(usage_error_of([&] { beats(global, nonblock, wait, "both"); }) == "both");  // one place
  global.config.applied = {};
  CHECK(usage_error_of([&] { beats(global, nonblock, wait, "both"); }) == "both");
  global.words = {"acquire", "--wait=1s", "-n", "job"};
  CHECK(usage_error_of([&] { beats(global, nonblock, wait, "both"); }) == "both");
}

TEST_CASE("run hands its command the global options marked for it, set or unset") {
  GlobalOptions global;
  global.prefix = "locks:";
  global.timeout = "250ms";
  std::vector<std::pair<std::string, std::string>> set;
  std::vector<std::string> unset;
  child_settings(global, set, unset);
  const std::set<std::pair<std::string, std::string>> given(set.begin(), set.end());
  CHECK(given.count({"REDLOCK_PREFIX", "locks:"}) == 1);
  CHECK(given.count({"REDLOCK_TIMEOUT", "250ms"}) == 1);
  for (const auto& [name, value] : set) CHECK_MESSAGE(name != "REDLOCK_PASSWORD", "a password in the environment");
  const std::set<std::string> cleared(unset.begin(), unset.end());
  CHECK(cleared.count("REDLOCK_USER") == 1);  // no --user here: the command's must not come from elsewhere
}

TEST_CASE("the short flags that take no value are those of the option tables") {
  CLI::App app;
  GlobalOptions global;  // only_named unset: every row built
  Action action;
  setup_global_options(app, global);
  for (const auto& row : kCommandTable) row.setup(app, global, action);
  std::vector<const CLI::App*> apps{&app};
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) apps.push_back(sub);
  std::set<char> without_value, with_value;
  for (const CLI::App* a : apps) {
    for (const CLI::Option* o : a->get_options()) {
      for (const std::string& s : o->get_snames())
        (o->get_items_expected_max() == 0 ? without_value : with_value).insert(s[0]);
    }
  }
  CHECK(without_value == std::set<char>(kShortFlagsWithoutValue.begin(), kShortFlagsWithoutValue.end()));
  for (char c : kShortFlagsWithoutValue) CHECK(with_value.count(c) == 0);
}

TEST_CASE("a short option is found in a bundle after flags that take no value only") {
  GlobalOptions global;
  global.words = {"acquire", "x", "-nw5s"};
  CHECK(given_on_command_line(global, {"-w"}));
  CHECK(given_on_command_line(global, {"-n"}));
  global.words = {"run", "x", "-k5w", "--", "true"};
  CHECK_FALSE(given_on_command_line(global, {"-w"}));
  CHECK(given_on_command_line(global, {"-k"}));
  global.words = {"acquire", "x", "--wait=5s", "-10"};
  CHECK(given_on_command_line(global, {"--wait"}));
  CHECK_FALSE(given_on_command_line(global, {"-n"}));
}
