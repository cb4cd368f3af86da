// Registers a table of OptionRow (options.hpp) with the parser: one option or flag per row, and a
// subcommand's own words; and the rest that CLI11 is needed for, apart from main(). CLI11 is
// included by option_table.cpp and main.cpp alone: its header defines validators that every file
// including it builds at start-up and destroys at exit (5,000 instructions a file, each time).
#pragma once

#include <functional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "options.hpp"

namespace CLI {
class App;
class Option;
class Validator;
}  // namespace CLI

namespace redlock::cli {

// A row's value, its settings struct known.
using OptionValue = std::variant<std::string*, bool*, int*, double*, std::size_t*, std::vector<std::string>*>;

// What a row says of its option, apart from where the value goes.
struct RowSpec {
  std::string_view flags;
  std::string_view env;
  bool takes_value = false;
  std::string_view type_name;
  std::string_view help;
  bool show_default = false;
  bool repeatable = false;
  bool env_by_hand = false;
  CLI::Validator (*check)() = nullptr;
};

template <class Settings>
RowSpec row_spec(const OptionRow<Settings>& row) {
  return {row.flags,        row.env,        row.takes_value, row.type_name, row.help,
          row.show_default, row.repeatable, row.env_by_hand, row.check};
}

// Binds the global options (and their REDLOCK_* variables) to APP.
void setup_global_options(CLI::App& app, GlobalOptions& options);
// Every REDLOCK_* variable that an option of APP (and of its subcommands) reads, and those read
// without CLI11 (REDLOCK_SERVERS, REDLOCK_PASSWORD): what a configuration file may set.
std::set<std::string> option_variables(const CLI::App& app);

// A flag's value read as CLI11 reads it ("1", "true", "on", "yes"; "0", "false", "off", "no"); false
// for any other text.
bool flag_value(const std::string& text);

// Makes APP's help, and that of the subcommands added to it afterwards, show the synopses (help.hpp)
// and the global options. Call before adding them.
void use_redlock_help(CLI::App& app);

// Adds the option of ROW to APP, its value going to VALUE.
CLI::Option* add_option_row(CLI::App& app, const RowSpec& row, OptionValue value);

// The rows of ROWS that GLOBAL wants built (see option_wanted), their values going to SETTINGS.
template <class Settings>
void add_option_rows(CLI::App& app, Settings& settings, std::span<const OptionRow<Settings>> rows,
                     const GlobalOptions& global) {
  for (const auto& row : rows) {
    if (!option_wanted(global, row.flags, row.env)) continue;
    add_option_row(app, row_spec(row),
                   std::visit([&](auto member) -> OptionValue { return &(settings.*member); }, row.target));
  }
}

// A subcommand as its setup function builds it: its words, its options' rows, and what is to run
// once a command line has been parsed into it.
class Subcommand {
 public:
  // Adds the subcommand NAME to PARENT.
  Subcommand(CLI::App& parent, const std::string& name, const std::string& help);

  // A word after the options, into VALUE; required unless OPTIONAL.
  Subcommand& argument(const std::string& name, std::string& value, const std::string& help, bool optional = false,
                       const std::string& type_name = {});
  // Every word that is left (run's CMD), into VALUES.
  Subcommand& arguments(const std::string& name, std::vector<std::string>& values, const std::string& help);
  template <class Settings>
  Subcommand& rows(Settings& settings, std::span<const OptionRow<Settings>> rows, const GlobalOptions& global) {
    add_option_rows(*app_, settings, rows, global);
    return *this;
  }
  // Runs FN once a command line has been parsed into this subcommand.
  void on_parsed(std::function<void()> fn);
  // Once parsed: whether the option NAME ("--kill-after") was on the command line (false when it
  // was not built).
  bool given(const std::string& name) const;

 private:
  CLI::App* app_;
};

// The checks of option values.
CLI::Validator exit_status_range();  // 0 to 255
CLI::Validator drift_range();        // 0 to 0.5
CLI::Validator term_count_range();   // 1 or more
CLI::Validator limit_range();        // 1 to kMaxLimit
CLI::Validator queue_range();        // 0 to 1,000,000
CLI::Validator slot_range();         // 0 to kMaxLimit - 1
CLI::Validator until_values();       // released or free

// The row of ROWS whose flags include NAME ("--kill-after"); nullptr when none.
template <class Settings>
const OptionRow<Settings>* find_row(std::span<const OptionRow<Settings>> rows, std::string_view name) {
  for (const auto& row : rows) {
    bool found = false;
    for_each_flag(row.flags, [&](std::string_view flag) { found = found || flag == name; });
    if (found) return &row;
  }
  return nullptr;
}

}  // namespace redlock::cli
