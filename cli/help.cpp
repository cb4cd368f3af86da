#include "help.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string_view>

namespace redlock::cli {

namespace {

struct Synopsis {
  std::string_view command;
  std::string_view line;  // after "redlock [GLOBAL OPTIONS] "; several separated by '\n'
};

constexpr Synopsis kSynopses[] = {
    {"acquire", "acquire NAME [OPTIONS]"},
    {"extend", "extend NAME --token TOKEN [--ttl DUR]"},
    {"release", "release NAME (--token TOKEN | --force)"},
    {"status", "status NAME"},
    {"run", "run [OPTIONS] NAME [OPTIONS] [--] CMD [ARG...]\nrun [OPTIONS] NAME [OPTIONS] -c STR"},
    {"elect",
     "elect [OPTIONS] NAME [OPTIONS] [--] CMD [ARG...]\nelect [OPTIONS] NAME [OPTIONS] -c STR\n"
     "elect NAME --observe"},
    {"doctor", "doctor [--ttl DUR]"},
    {"list", "list [PATTERN]"},
    {"watch", "watch NAME [--until released|free]"},
    {"completion", "completion bash|zsh"},
};

// COMMAND's synopsis, a line each, added to LINES.
void add_synopsis(std::vector<std::string>& lines, std::string_view command) {
  for (const auto& s : kSynopses) {
    if (s.command != command) continue;
    // completion reads no server: no global option applies to it.
    const std::string head = command == "completion" ? "redlock " : "redlock [GLOBAL OPTIONS] ";
    std::string_view text = s.line;
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
    for (const auto& s : kSynopses) add_synopsis(lines, s.command);
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
  for (const char* name : kCommandNames) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

bool is_command(const std::string& word) {
  for (const char* name : kCommandNames) {
    if (word == name) return true;
  }
  return false;
}

void use_redlock_help(CLI::App& app) {
  app.formatter(std::make_shared<Help>());
}

}  // namespace redlock::cli
