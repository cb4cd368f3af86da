#include <doctest/doctest.h>

#include <CLI/CLI.hpp>

#include "cli/option_table.hpp"

using namespace redlock::cli;

namespace {

struct Settings {
  std::string name;
  std::string wait;
  bool quick = false;
  int level = 0;
};

const OptionRow<Settings> kRows[] = {
    {.flags = "-w,--wait", .env = "REDLOCK_TEST_WAIT", .takes_value = true, .target = &Settings::wait},
    {.flags = "--quick", .target = &Settings::quick},
    {.flags = "--level", .takes_value = true, .target = &Settings::level, .check = exit_status_range},
};

// Parses WORDS (after the program's name) into a subcommand "go" with kRows and an argument NAME.
struct Parsed {
  CLI::App app;
  Settings settings;
  bool ran = false;
  bool wait_given = false;
  explicit Parsed(std::vector<std::string> words, bool optional_name = false) {
    GlobalOptions global;  // only_named unset: every row built
    Subcommand sub(app, "go", "a test");
    sub.argument("NAME", settings.name, "a name", optional_name)
        .rows(settings, std::span<const OptionRow<Settings>>(kRows), global);
    sub.on_parsed([this, sub] {
      ran = true;
      wait_given = sub.given("--wait");
    });
    std::reverse(words.begin(), words.end());
    app.parse(words);
  }
};

}  // namespace

TEST_CASE("a subcommand's rows and argument take their words, and what was given is known") {
  Parsed p({"go", "job", "-w", "5s", "--quick", "--level", "3"});
  CHECK(p.ran);
  CHECK(p.settings.name == "job");
  CHECK(p.settings.wait == "5s");
  CHECK(p.settings.quick);
  CHECK(p.settings.level == 3);
  CHECK(p.wait_given);
  CHECK_FALSE(Parsed({"go", "job"}).wait_given);
}

TEST_CASE("a subcommand's argument is required unless said otherwise; a row's check applies") {
  CHECK_THROWS_AS(Parsed({"go"}), CLI::RequiredError);
  CHECK(Parsed({"go"}, true).ran);
  CHECK_THROWS_AS(Parsed({"go", "job", "--level", "300"}), CLI::ValidationError);
}
