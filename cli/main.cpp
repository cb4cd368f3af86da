// redlock: a distributed lock for shell scripts, over N independent Redis masters.
#include <fcntl.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "error.hpp"
#include "exit_codes.hpp"

using namespace redlock;
using namespace redlock::cli;

namespace {

// A flag's value read as CLI11 reads it ("1", "true", "on", "yes"; "0", "false", "off", "no").
bool flag_value(const std::string& text) {
  try {
    return CLI::detail::to_flag_value(text) > 0;
  } catch (const std::exception&) {
    return false;
  }
}

// Whether the command line (or REDLOCK_JSON) asks for JSON, known even when parsing fails.
bool wants_json(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") break;
    if (a == "--json") return true;
    if (a.substr(0, 7) == "--json=") return flag_value(std::string(a.substr(7)));
  }
  const char* env = std::getenv("REDLOCK_JSON");
  return env && *env && flag_value(env);
}

// Whether -V or --version comes before any "--": alone, it needs no subcommand built.
bool wants_version(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) break;
    if (std::strcmp(argv[i], "-V") == 0 || std::strcmp(argv[i], "--version") == 0) return true;
  }
  return false;
}

// The global options (see setup_global_options) that take a value, and the flags.
constexpr std::string_view kGlobalWithValue[] = {
    "-S",       "--servers",  "--timeout", "--password-file",   "--user",
    "--tls-ca", "--tls-cert", "--tls-key", "--tls-server-name", "--prefix"};
constexpr std::string_view kGlobalFlags[] = {"--json", "--verbose", "--quiet", "--tls-insecure"};

bool takes_value(std::string_view a) {
  for (auto opt : kGlobalWithValue) {
    if (a == opt) return true;
  }
  return false;
}

// "--timeout=1s" or "-S1.2.3.4:5" forms carry their value.
bool is_global(std::string_view a) {
  for (auto opt : kGlobalWithValue) {
    if (a == opt ||
        (a.size() > opt.size() && a.substr(0, opt.size()) == opt && (a[opt.size()] == '=' || opt.size() == 2))) {
      return true;
    }
  }
  for (auto flag : kGlobalFlags) {
    if (a == flag) return true;
  }
  // -v, -vv, -q, -qv …
  return a.size() >= 2 && a[0] == '-' && a[1] != '-' && a.find_first_not_of("vq", 1) == std::string_view::npos;
}

// The index of the first word that is neither an option nor an option's value: what was meant as
// a command; 0 when there is none.
int command_index(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") return 0;
    if (a.empty() || a[0] != '-') return i;
    if (takes_value(a)) ++i;
  }
  return 0;
}

// The command's word (see command_index). AFTER is the word before it when that is an option
// redlock does not know, whose value it may be.
std::string first_word(int argc, char** argv, std::string* after) {
  const int i = command_index(argc, argv);
  if (i == 0) return {};
  if (i > 1 && argv[i - 1][0] == '-' && !is_global(argv[i - 1])) *after = argv[i - 1];
  return argv[i];
}

// What FLAG ("--kill-after", "-k") is to APP's command line, its parents' options included.
enum class OptionKind { Unknown, Flag, WithValue };

OptionKind option_kind(const CLI::App& app, std::string_view flag) {
  const bool is_long = flag.substr(0, 2) == "--";
  const std::string name(flag.substr(is_long ? 2 : 1));
  for (const CLI::App* a = &app; a != nullptr; a = a->get_parent()) {
    for (const CLI::Option* opt : a->get_options()) {
      const auto& names = is_long ? opt->get_lnames() : opt->get_snames();
      if (std::find(names.begin(), names.end(), name) != names.end()) {
        return opt->get_expected_min() > 0 ? OptionKind::WithValue : OptionKind::Flag;
      }
    }
  }
  return OptionKind::Unknown;
}

// How many words option word WORD takes, itself included: 2 when its value is the next word.
int option_words(const CLI::App& app, std::string_view word) {
  if (word.substr(0, 2) == "--") {
    if (word.find('=') != std::string_view::npos) return 1;
    return option_kind(app, word) == OptionKind::WithValue ? 2 : 1;
  }
  // A cluster of short options ("-nv", "-k2", "-nk", "2"): the first that takes a value ends it.
  for (std::size_t c = 1; c < word.size(); ++c) {
    if (option_kind(app, std::string("-") + word[c]) == OptionKind::WithValue) return c + 1 == word.size() ? 2 : 1;
  }
  return 1;
}

// run's words are read as flock and timeout read theirs (getopt's "+" mode): options before and
// after NAME, and from the first other word on, everything is CMD's. A "--" is put before that
// word, so that no later step takes one of CMD's words for one of ours.
std::vector<std::string> end_run_options(const CLI::App& run, std::vector<std::string> words, std::size_t at) {
  bool named = false;
  for (std::size_t i = at + 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "--") break;
    if (w.size() > 1 && w[0] == '-') {
      i += static_cast<std::size_t>(option_words(run, w) - 1);
      continue;
    }
    if (named) {
      words.insert(words.begin() + static_cast<std::ptrdiff_t>(i), "--");
      break;
    }
    named = true;
  }
  return words;
}

// Global options may come after the subcommand (`redlock status -S URL NAME --json`): they are moved
// in front of it, up to a "--" (after which everything is run's command).
std::vector<char*> globals_first(int argc, char** argv) {
  std::vector<char*> front{argv[0]};
  std::vector<char*> rest;
  bool seen_command = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") {
      for (; i < argc; ++i) rest.push_back(argv[i]);
      break;
    }
    // One that needs a value but ends the line stays where it is, to be reported missing its value
    // there, rather than take the command's name as its value in front.
    if (is_global(a) && !(takes_value(a) && i + 1 == argc)) {
      front.push_back(argv[i]);
      if (takes_value(a) && i + 1 < argc) front.push_back(argv[++i]);
      continue;
    }
    if (!seen_command && !a.empty() && a[0] != '-') seen_command = true;
    (seen_command ? rest : front).push_back(argv[i]);
  }
  front.insert(front.end(), rest.begin(), rest.end());
  return front;
}

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

int fail(bool json, const std::string& command, int code, const std::string& message) {
  Json j;
  j["version"] = 1;
  j["command"] = command.empty() ? Json(nullptr) : Json(command);
  report_error(json ? &j : nullptr, code, one_line(message));
  if (json) print_json(j);
  return code;
}

// What was printed must have reached stdout: a full disk or a closed pipe is no success (78), and
// is said on stderr whatever the status.
int checked_stdout(const std::string& command, int status) {
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return status;
  int code = fail(false, command, exit_code::kConfig, std::string("stdout: ") + std::strerror(errno ? errno : EIO));
  return status == exit_code::kOk ? code : status;
}

using Setup = void (*)(CLI::App&, const GlobalOptions&, Action&);
const std::pair<const char*, Setup> kCommands[] = {
    {"acquire", setup_acquire}, {"extend", setup_extend}, {"release", setup_release},      {"status", setup_status},
    {"run", setup_run},         {"doctor", setup_doctor}, {"completion", setup_completion}};

// What a configuration file may set: the variables of every option of every command, found where
// the options are defined. Those of APP (the command being run) first: building every command's
// options costs more than most commands, so it is done only for a name APP does not know.
std::function<bool(const std::string&)> option_variable_check(const CLI::App& app) {
  return [&app, here = std::optional<std::set<std::string>>(),
          all = std::optional<std::set<std::string>>()](const std::string& name) mutable {
    if (!here) here = option_variables(app);
    if (here->count(name)) return true;
    if (!all) {
      CLI::App every;
      GlobalOptions global;
      Action action;
      setup_global_options(every, global);
      for (const auto& [command, setup] : kCommands) setup(every, global, action);
      all = option_variables(every);
    }
    return all->count(name) > 0;
  };
}

}  // namespace

int main(int argc, char** argv) {
  // A closed stdin, stdout or stderr becomes /dev/null opened for reading: the connections made
  // later never land on them (a token printed into a Redis connection), and a write there fails
  // (EBADF) as it would have, so acquire still gives back a lock whose token nobody could see.
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) < 0 && errno == EBADF && open("/dev/null", O_RDONLY) != fd) break;
  }
  GlobalOptions global;
  Action action;
  CLI::App app{"redlock: a distributed lock for shell scripts, over N independent Redis masters", "redlock"};
  app.set_version_flag("-V,--version", "redlock " REDLOCK_VERSION);
  app.require_subcommand(1, 1);
  app.fallthrough();
  setup_global_options(app, global);
  // Building a subcommand's options costs more than running most commands: build only the one
  // named on the command line, none for --version alone, and all of them for --help or a word
  // that names none.
  std::string after_unknown;  // an unknown option just before WORD, whose value WORD may be
  const std::string word = first_word(argc, argv, &after_unknown);
  bool named = false;
  for (const auto& [name, setup] : kCommands) {
    if (word == name) {
      setup(app, global, action);
      named = true;
    }
  }
  if (!named && !(word.empty() && wants_version(argc, argv))) {
    for (const auto& [name, setup] : kCommands) setup(app, global, action);
  }

  if (!(word.empty() && wants_version(argc, argv))) {
    // Before parsing: its settings are read as the environment's are, below them.
    try {
      global.config = load_config_file(option_variable_check(app));
    } catch (const Error& e) {
      return fail(wants_json(argc, argv), named ? word : "", exit_code::kConfig, e.what());
    }
  }
  std::vector<std::string> words(argv, argv + argc);
  if (word == "run")
    words = end_run_options(*app.get_subcommand("run"), words, static_cast<std::size_t>(command_index(argc, argv)));
  std::vector<char*> line;
  for (auto& w : words) line.push_back(w.data());
  const bool json = wants_json(static_cast<int>(line.size()), line.data());
  std::string command;
  std::vector<char*> args = globals_first(static_cast<int>(line.size()), line.data());
  for (std::size_t i = 1; i < words.size() && words[i] != "--"; ++i) global.words.push_back(words[i]);
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::CallForHelp& e) {
    return checked_stdout(command, app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return checked_stdout(command, app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    if (!json) return checked_stdout(command, app.exit(e));
    Json version;
    version["version"] = 1;
    version["redlock"] = REDLOCK_VERSION;
    print_json(version);
    return checked_stdout(command, exit_code::kOk);
  } catch (const CLI::ExtrasError&) {
    // Name the words that look like options; never echo the others (a mistyped --pasword's value).
    std::string options;
    std::size_t others = 0;
    for (const auto& extra : app.remaining(true)) {
      if (extra == "--") continue;  // the end of run's options, put there by end_run_options
      if (!extra.empty() && extra[0] == '-') {
        options += (options.empty() ? "" : " ") + extra;
      } else {
        ++others;
      }
    }
    auto subs = app.get_subcommands();
    if (!subs.empty()) command = subs.front()->get_name();
    std::string message = "unexpected argument" + std::string(options.empty() ? "" : ": " + options);
    if (others > 0)
      message += (options.empty() ? " (" : " (and ") + std::to_string(others) + " other word(s), not shown)";
    return fail(json, command, exit_code::kUsage, message + " (see redlock --help)");
  } catch (const CLI::ParseError& e) {
    auto subs = app.get_subcommands();
    if (!subs.empty()) command = subs.front()->get_name();
    if (subs.empty() && !word.empty()) {
      // After an unknown option the word may be its value (a mistyped --pasword's): not echoed.
      const std::string what = after_unknown.empty() ? "command '" + word + "'" : "option " + one_line(after_unknown);
      return fail(json, command, exit_code::kUsage,
                  "unknown " + what + " (commands: acquire, extend, release, status, run, doctor, completion)");
    }
    return fail(json, command, exit_code::kUsage, std::string(e.what()) + " (see redlock --help)");
  }
  command = app.get_subcommands().front()->get_name();

  try {
    int status = action();
    // Not for run, whose status is its command's (and whose stdout is the command's).
    return command == "run" ? status : checked_stdout(command, status);
  } catch (const Error& e) {
    switch (e.kind()) {
      case ErrorKind::Usage:
        return fail(global.json, command, exit_code::kUsage, e.what());
      case ErrorKind::Config:
        return fail(global.json, command, exit_code::kConfig, e.what());
      case ErrorKind::Internal:
        return fail(global.json, command, exit_code::kInternal, e.what());
    }
  } catch (const std::exception& e) {
    return fail(global.json, command, exit_code::kInternal, std::string("internal error: ") + e.what());
  }
  return exit_code::kInternal;
}
