#include "help.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iterator>
#include <string_view>

#include "command_table.hpp"

namespace redlock::cli {

namespace {

// COMMAND's synopsis, a line each, added to LINES.
void add_synopsis(std::vector<std::string>& lines, std::string_view command) {
  for (const auto& row : kCommandTable) {
    if (row.name != command) continue;
    // completion reads no server: no global option applies to it.
    const std::string head = command == "completion" ? "redlock " : "redlock [GLOBAL OPTIONS] ";
    std::string_view text = row.synopsis;
    while (!text.empty()) {
      const auto end = std::min(text.find('\n'), text.size());
      lines.push_back(head + std::string(text.substr(0, end)));
      text.remove_prefix(std::min(end + 1, text.size()));
    }
  }
}

std::string usage(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out.append(out.empty() ? "Usage: " : "       ").append(line).append("\n");
  return out;
}

class Help : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* app, std::string) const override {
    std::vector<std::string> lines;
    if (app->get_parent() != nullptr) {
      add_synopsis(lines, app->get_name());
      return usage(lines);
    }
    for (const auto& row : kCommandTable) add_synopsis(lines, row.name);
    lines.emplace_back("redlock help [COMMAND]");
    return usage(lines);
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

std::string command_list() {
  std::string out;
  for (const auto& row : kCommandTable) out.append(out.empty() ? "" : ", ").append(row.name);
  return out;
}

bool is_command(const std::string& word) {
  return std::any_of(std::begin(kCommandTable), std::end(kCommandTable),
                     [&](const CommandRow& row) { return row.name == word; });
}

void use_redlock_help(CLI::App& app) {
  app.formatter(std::make_shared<Help>());
}

}  // namespace redlock::cli
