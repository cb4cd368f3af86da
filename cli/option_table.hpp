// Registers a table of OptionRow (options.hpp) with CLI11: one add_option or add_flag per row.
#pragma once

#include <CLI/CLI.hpp>
#include <span>
#include <string>
#include <type_traits>

#include "options.hpp"

namespace redlock::cli {

template <class Settings>
CLI::Option* add_option_row(CLI::App& app, Settings& settings, const OptionRow<Settings>& row) {
  const std::string flags(row.flags);
  const std::string help(row.help);
  CLI::Option* option = std::visit(
      [&](auto member) -> CLI::Option* {
        auto& value = settings.*member;
        using Value = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<Value, bool>) {
          return app.add_flag(flags, value, help);
        } else if constexpr (std::is_same_v<Value, int>) {
          return row.takes_value ? app.add_option(flags, value, help) : app.add_flag(flags, value, help);
        } else {
          return app.add_option(flags, value, help);
        }
      },
      row.target);
  if (!row.type_name.empty()) option->type_name(std::string(row.type_name));
  if (row.repeatable) option->type_size(1)->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  if (!row.env.empty() && !row.env_by_hand) option->envname(std::string(row.env));
  if (row.check) option->check(row.check());
  if (row.show_default) option->capture_default_str();
  return option;
}

// The rows of ROWS that GLOBAL wants built (see option_wanted).
template <class Settings>
void add_option_rows(CLI::App& app, Settings& settings, std::span<const OptionRow<Settings>> rows,
                     const GlobalOptions& global) {
  for (const auto& row : rows) {
    if (option_wanted(global, row.flags, row.env)) add_option_row(app, settings, row);
  }
}

// The check of an option that is an exit status.
inline CLI::Validator exit_status_range() {
  return CLI::Range(0, 255);
}

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
