#include "option_table.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <type_traits>

#include "cli11.hpp"
#include "core/lock/semaphore.hpp"
#include "help.hpp"

namespace redlock::cli {

namespace {

class Help : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* app, std::string) const override {
    return usage_text(app->get_parent() != nullptr ? app->get_name() : std::string());
  }

  // A command's help lists the global options too (they may come before or after the command),
  // then the words on the configuration file.
  std::string make_footer(const CLI::App* app) const override {
    const CLI::App* top = app->get_parent();
    if (top == nullptr) return CLI::Formatter::make_footer(app);
    if (app->get_name() == "completion") return {};
    auto globals = top->get_options([top](const CLI::Option* o) {
      return o->nonpositional() && o != top->get_help_ptr() && o != top->get_version_ptr();
    });
    std::string group = make_group("Global options (before or after the command)", false, globals);
    return group.substr(1) + "\n" + CLI::Formatter::make_footer(app);
  }
};

}  // namespace

void use_redlock_help(CLI::App& app) {
  app.formatter(std::make_shared<Help>());
}

bool flag_value(const std::string& text) {
  try {
    return CLI::detail::to_flag_value(text) > 0;
  } catch (const std::exception&) {
    return false;
  }
}

void setup_global_options(CLI::App& app, GlobalOptions& o) {
  add_option_rows(app, o, global_options(), o);
  app.footer(
      "Every Env: variable (and REDLOCK_SERVERS, REDLOCK_PASSWORD) may also be set in the configuration file, "
      "below the environment: $REDLOCK_CONFIG, else $XDG_CONFIG_HOME/redlock/config (~/.config/redlock/config), "
      "else /etc/redlock/config. See redlock(1).");
}

std::set<std::string> option_variables(const CLI::App& app) {
  std::set<std::string> out{std::string(kPasswordVariable)};
  for (const auto& row : global_options()) {
    if (row.env_by_hand) out.emplace(row.env);
  }
  for (const CLI::Option* option : app.get_options()) {
    if (!option->get_envname().empty()) out.insert(option->get_envname());
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    auto more = option_variables(*sub);
    out.insert(more.begin(), more.end());
  }
  return out;
}

namespace {

// A whole number is read in decimal, leading zeros and all: CLI11 reads "010" as 8 and takes
// "0x10", "+0x10" and " 012" (strtoll of any base). What is no number at all is left to the
// conversion, which says so.
CLI::Validator decimal() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::size_t sign = text.starts_with('-') ? 1 : 0;
        const std::string_view digits = std::string_view(text).substr(sign);
        const bool all_digits = !digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos;
        if (!all_digits) {
          char* end = nullptr;
          std::strtoll(text.c_str(), &end, 0);
          const bool a_number_still = !text.empty() && end == text.c_str() + text.size();
          return a_number_still ? "'" + text + "' is not a decimal number" : std::string();
        }
        text.erase(sign, std::min(digits.find_first_not_of('0'), digits.size() - 1));
        return {};
      },
      "", "decimal");
}

}  // namespace

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
  // Each value as written: CLI11 would read "[a,b]" as the list a, b ("-S [::1]" as "::1").
  if (row.repeatable)
    option->type_size(1)->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)->allow_extra_args(false);
  if (!row.env.empty() && !row.env_by_hand) option->envname(std::string(row.env));
  const bool whole_number = std::holds_alternative<int*>(value) || std::holds_alternative<std::size_t*>(value);
  if (whole_number && row.takes_value) option->transform(decimal());
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

CLI::Validator queue_range() {
  return CLI::Range(std::size_t{0}, std::size_t{1000000});
}

CLI::Validator slot_range() {
  return CLI::Range(0, static_cast<int>(kMaxLimit) - 1);
}

CLI::Validator until_values() {
  return CLI::IsMember({"released", "free"});
}

}  // namespace redlock::cli
