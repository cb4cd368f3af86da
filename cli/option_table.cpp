#include "option_table.hpp"

#include <CLI/CLI.hpp>
#include <climits>
#include <type_traits>

#include "core/lock/semaphore.hpp"

namespace redlock::cli {

CLI::Option* add_option_row(CLI::App& app, const RowSpec& row, OptionValue value) {
  const std::string flags(row.flags);
  const std::string help(row.help);
  CLI::Option* option = std::visit(
      [&](auto* target) -> CLI::Option* {
        using Value = std::remove_pointer_t<decltype(target)>;
        if constexpr (std::is_same_v<Value, bool>) {
          return app.add_flag(flags, *target, help);
        } else if constexpr (std::is_same_v<Value, int>) {
          return row.takes_value ? app.add_option(flags, *target, help) : app.add_flag(flags, *target, help);
        } else {
          return app.add_option(flags, *target, help);
        }
      },
      value);
  if (!row.type_name.empty()) option->type_name(std::string(row.type_name));
  if (row.repeatable) option->type_size(1)->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  if (!row.env.empty() && !row.env_by_hand) option->envname(std::string(row.env));
  if (row.check) option->check(row.check());
  if (row.show_default) option->capture_default_str();
  return option;
}

Subcommand::Subcommand(CLI::App& parent, const std::string& name, const std::string& help)
    : app_(parent.add_subcommand(name, help)) {}

Subcommand& Subcommand::argument(const std::string& name, std::string& value, const std::string& help, bool optional,
                                 const std::string& type_name) {
  CLI::Option* option = app_->add_option(name, value, help);
  if (!optional) option->required();
  if (!type_name.empty()) option->type_name(type_name);
  return *this;
}

Subcommand& Subcommand::arguments(const std::string& name, std::vector<std::string>& values, const std::string& help) {
  app_->add_option(name, values, help);
  return *this;
}

void Subcommand::on_parsed(std::function<void()> fn) {
  app_->callback(std::move(fn));
}

bool Subcommand::given(const std::string& name) const {
  const CLI::Option* option = app_->get_option_no_throw(name);
  return option && option->count() > 0;
}

CLI::Validator exit_status_range() {
  return CLI::Range(0, 255);
}

CLI::Validator drift_range() {
  return CLI::Range(0.0, 0.5);
}

CLI::Validator term_count_range() {
  return CLI::Range(1, INT_MAX);
}

CLI::Validator limit_range() {
  return CLI::Range(std::size_t{1}, kMaxLimit);
}

CLI::Validator until_values() {
  return CLI::IsMember({"released", "free"});
}

}  // namespace redlock::cli
