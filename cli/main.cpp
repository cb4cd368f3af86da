// redlock: a distributed lock for shell scripts, over N independent Redis masters.
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "cli11.hpp"
#include "command_table.hpp"
#include "commands.hpp"
#include "core/lock/faults.hpp"
#include "core/util/error.hpp"
#include "core/util/setting.hpp"
#include "environment.hpp"
#include "exit_codes.hpp"
#include "help.hpp"

using namespace redlock;
using namespace redlock::cli;

namespace {

// The command line's words, argv[0] first.
using Words = std::vector<std::string>;

// Whether the command line (or REDLOCK_JSON) asks for JSON, known even when parsing fails.
bool wants_json(const Words& words) {
  return global_flag_set(words, "--json");
}

// Whether -V or --version comes before any "--": alone, it needs no subcommand built.
bool wants_version(const Words& words) {
  for (std::size_t i = 1; i < words.size() && words[i] != "--"; ++i) {
    if (words[i] == "-V" || words[i] == "--version") return true;
  }
  return false;
}

// The index of the first word that is neither an option nor an option's value: what was meant as
// a command; 0 when there is none.
std::size_t command_index(const Words& words) {
  for (std::size_t i = 1; i < words.size(); ++i) {
    std::string_view a = words[i];
    if (a == "--") return 0;
    if (a.empty() || a[0] != '-') return i;
    if (global_takes_value(a)) ++i;
  }
  return 0;
}

// The command's word (see command_index).
std::string first_word(const Words& words) {
  const std::size_t i = command_index(words);
  return i == 0 ? std::string() : words[i];
}

// "redlock help" is "redlock --help", and "redlock help CMD" is "redlock CMD --help".
Words help_words(Words words) {
  const std::size_t at = command_index(words);
  if (at == 0 || words[at] != "help") return words;
  std::vector<std::size_t> named;  // the words after "help" that are no options
  for (std::size_t i = at + 1; i < words.size() && words[i] != "--"; ++i) {
    if (words[i].empty() || words[i][0] != '-') named.push_back(i);
  }
  if (named.empty() || words[named[0]] == "help") {
    words[at] = "--help";
    if (!named.empty()) words.erase(words.begin() + static_cast<std::ptrdiff_t>(named[0]));
  } else if (named.size() == 1 && is_command(words[named[0]])) {
    words[at] = words[named[0]];
    words[named[0]] = "--help";
  } else {
    // Echoed only right after "help": after an option it may be that option's value.
    const bool shown = named.size() == 1 && named[0] == at + 1;
    usage_error(
        (shown ? "help: unknown command '" + printable(words[named[0]]) + "'" : std::string("help takes one command")) +
        " (commands: " + command_list() + ")");
  }
  return words;
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

// The words after the first "--" that follows the command's word AT.
std::vector<std::string> words_after_dashes(const std::vector<std::string>& words, std::size_t at) {
  const auto dashes = std::find(words.begin() + static_cast<std::ptrdiff_t>(std::min(at, words.size())), words.end(),
                                std::string("--"));
  return dashes == words.end() ? std::vector<std::string>{} : std::vector<std::string>(dashes + 1, words.end());
}

// run's words as CLI11 is to read them, and CMD's.
struct RunWords {
  Words words;
  Words command;
};

// An option of run that takes its value from the next word takes that word whatever it looks like,
// as getopt does: "--owner --" is the owner "--", "-k -1" a kill-after of "-1". Glued to the option
// ("--owner=--", "-k-1"), so that CLI11 reads it neither as an option nor as the end of options.
void glue_value(Words& words, std::size_t option) {
  std::string& w = words[option];
  w += (w.starts_with("--") ? "=" : "") + words[option + 1];
  words.erase(words.begin() + static_cast<std::ptrdiff_t>(option + 1));
}

// "-- NAME CMD" where NAME looks like an option ("-- -job CMD"): NAME stays after the "--", where
// CLI11 takes it for NAME, and CMD is the words after it (after a second "--" too).
RunWords dashed_name(Words words, std::size_t name) {
  const std::size_t from = name + 1 < words.size() && words[name + 1] == "--" ? name + 2 : name + 1;
  Words command(words.begin() + static_cast<std::ptrdiff_t>(std::min(from, words.size())), words.end());
  words.resize(name + 1);
  return {words, command};
}

// run's words are read as flock and timeout read theirs (getopt's "+" mode): options before and
// after NAME, and from the first other word on, everything is CMD's. A "--" is put before that
// word, so that no later step takes one of CMD's words for one of ours. A "--" before NAME ends
// the options as getopt's does: the next word is NAME (moved before it), and CMD follows.
RunWords end_run_options(const CLI::App& run, Words words, std::size_t at) {
  bool named = false;
  for (std::size_t i = at + 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "--" && !named && i + 1 < words.size()) {
      if (words[i + 1].size() > 1 && words[i + 1][0] == '-') return dashed_name(words, i + 1);
      std::swap(words[i], words[i + 1]);  // NAME --
      if (i + 2 < words.size() && words[i + 2] == "--") words.erase(words.begin() + static_cast<std::ptrdiff_t>(i + 2));
      break;
    }
    if (w == "--") break;
    if (w.size() > 1 && w[0] == '-') {
      // A value that looks like an option is glued to it; any other is the next word, skipped.
      if (option_words(run, w) == 2 && i + 1 < words.size()) {
        if (words[i + 1].starts_with("-")) {
          glue_value(words, i);
        } else {
          ++i;
        }
      }
      continue;
    }
    if (named) {
      words.insert(words.begin() + static_cast<std::ptrdiff_t>(i), "--");
      break;
    }
    named = true;
  }
  return {words, words_after_dashes(words, at)};
}

// What a flag's value may be, for a message about one that is none.
constexpr std::string_view kFlagValues = " (a flag is 1, true, yes or on, or 0, false, no or off)";

// What option WORD gives an empty value to, and its kind to APP: "--prefix" of "--prefix=";
// Unknown for any other word.
std::pair<std::string_view, OptionKind> emptied(const CLI::App& app, std::string_view word) {
  if (word.size() <= 3 || !word.starts_with("--") || word.find('=') != word.size() - 1)
    return {{}, OptionKind::Unknown};
  const std::string_view name = word.substr(0, word.size() - 1);
  return {name, option_kind(app, name)};
}

// The first flag of APP's given an empty value ("--json="), which CLI11 would take for "on";
// empty when there is none. Only redlock's own words, before a "--".
std::string empty_flag_value(const CLI::App& app, const Words& words) {
  for (std::size_t i = 1; i < words.size() && words[i] != "--"; ++i) {
    const auto [name, kind] = emptied(app, words[i]);
    if (kind == OptionKind::Flag) return std::string(name);
  }
  return {};
}

// "--prefix=" as "--prefix ''": an empty value, where CLI11 would take the next word for it. Only
// redlock's own words, before a "--", and only options of APP's that take a value: a flag's
// "--json=" stays, to be refused as the value it is.
Words empty_values_apart(const CLI::App& app, const Words& words) {
  Words out;
  bool options = true;
  for (const std::string& w : words) {
    options = options && w != "--";
    const auto [name, kind] = options ? emptied(app, w) : std::pair{std::string_view(), OptionKind::Unknown};
    out.push_back(kind == OptionKind::WithValue ? std::string(name) : w);
    if (kind == OptionKind::WithValue) out.emplace_back();
  }
  return out;
}

// Global options may come after the subcommand (`redlock status -S URL NAME --json`): they are moved
// in front of it, up to a "--" (after which everything is run's command). The pointers are into WORDS.
std::vector<char*> globals_first(Words& words) {
  std::vector<char*> front{words[0].data()};
  std::vector<char*> rest;
  bool seen_command = false;
  for (std::size_t i = 1; i < words.size(); ++i) {
    std::string_view a = words[i];
    if (a == "--") {
      for (; i < words.size(); ++i) rest.push_back(words[i].data());
      break;
    }
    // One that needs a value but ends the line stays where it is, to be reported missing its value
    // there, rather than take the command's name as its value in front.
    if (is_global_option(a) && !(global_takes_value(a) && i + 1 == words.size())) {
      front.push_back(words[i].data());
      if (global_takes_value(a) && i + 1 < words.size()) front.push_back(words[++i].data());
      continue;
    }
    if (!seen_command && !a.empty() && a[0] != '-') seen_command = true;
    (seen_command ? rest : front).push_back(words[i].data());
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

// Adds the commands to APP. Building a command's options costs more than running most commands:
// only the one WORD names is built, none for --version alone (WORD null), and all of them for
// --help or a word that names none.
void add_commands(CLI::App& app, const GlobalOptions& global, Action& action, const std::string* word) {
  const bool named = word != nullptr && is_command(*word);
  for (const auto& row : kCommandTable) {
    if (word != nullptr && (!named || *word == row.name)) row.setup(app, global, action);
  }
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) sub->group("Commands");
}

// An app without the -h/--help flag that CLI11's public constructor always adds (and each
// subcommand added then copies): building one costs as much as any other option.
class AppWithoutHelp : public CLI::App {
 public:
  AppWithoutHelp(std::string description, std::string name)
      : CLI::App(std::move(description), std::move(name), nullptr) {}
};

// The app for the command WORD names (see add_commands), with the global options; of those and
// the command's, only the ones GLOBAL wants (see option_wanted). -h/--help and -V/--version are
// options like the others: built when a word may name them, or when everything is.
std::unique_ptr<CLI::App> make_app(GlobalOptions& global, Action& action, const std::string* word) {
  std::unique_ptr<CLI::App> app = std::make_unique<AppWithoutHelp>(
      "redlock: a distributed lock for shell scripts, over N independent Redis masters", "redlock");
  // The words and place of CLI11's own: the first option.
  if (option_wanted(global, "-h,--help", {})) app->set_help_flag("-h,--help", "Print this help message and exit");
  use_redlock_help(*app);
  if (option_wanted(global, "-V,--version", {})) app->set_version_flag("-V,--version", "redlock " REDLOCK_VERSION);
  app->require_subcommand(1, 1);
  app->fallthrough();
  setup_global_options(*app, global);
  for (CLI::Option* option : app->get_options()) option->group("Global options");
  add_commands(*app, global, action, word);
  return app;
}

// The variables of every option of the command WORD names, or of every command when it names none.
std::set<std::string> variables_of(const std::string& word) {
  GlobalOptions global;
  Action action;
  return option_variables(*make_app(global, action, &word));
}

// What a configuration file may set: the variables of every option of every command, found where
// the options are defined. Those of the command WORD names first: building every command's
// options costs more than most commands, so it is done only for a name that one does not know.
std::function<bool(const std::string&)> option_variable_check(const std::string& word) {
  return [&word, here = std::optional<std::set<std::string>>(),
          all = std::optional<std::set<std::string>>()](const std::string& name) mutable {
    if (!here) here = variables_of(word);
    if (here->count(name)) return true;
    if (!all) all = variables_of("");
    return all->count(name) > 0;
  };
}

// Whether WORDS may ask for help (-h in a cluster of short options too): it lists every option.
bool wants_help(const Words& words) {
  for (std::size_t i = 1; i < words.size() && words[i] != "--"; ++i) {
    const std::string& w = words[i];
    if (w == "--help" || (w.size() > 1 && w[0] == '-' && w[1] != '-' && w.find('h') != std::string::npos)) return true;
  }
  return false;
}

// The name of option word WORD, without a value that may be attached: "--pasword" of
// "--pasword=s3cr3t", "-p" of "-ps3cr3t", and of a cluster of flags ("-vn") its first letter that
// is no global flag.
std::string option_name(std::string_view word) {
  if (word.substr(0, 2) == "--") return std::string(word.substr(0, word.find('=')));
  const std::size_t letter = word.find_first_not_of("vq", 1);
  return std::string("-") + word[letter == std::string_view::npos ? 1 : letter];
}

// The commands that have option NAME ("-n": acquire and run).
std::vector<std::string> commands_with(const std::string& name) {
  CLI::App every;
  GlobalOptions global;
  Action action;
  std::vector<std::string> out;
  for (const auto& row : kCommandTable) {
    row.setup(every, global, action);
    const std::string command(row.name);
    if (option_kind(*every.get_subcommand(command), name) != OptionKind::Unknown) out.push_back(command);
  }
  return out;
}

// An option before the command that is none of the global options: one of a command's, given too
// early ("redlock -n run ..."), or one nobody has. Empty when there is none. Only its name is
// shown: the words after it may be its value (a mistyped --pasword's).
std::string misplaced_option(const Words& words) {
  std::string option;
  std::string command;
  for (std::size_t i = 1; i < words.size() && words[i] != "--" && command.empty(); ++i) {
    const std::string& w = words[i];
    if (is_command(w)) command = w;
    const bool help = w == "-h" || w == "--help" || w == "-V" || w == "--version";
    if (option.empty() && w.size() > 1 && w[0] == '-' && !is_global_option(w) && !help) option = option_name(w);
    if (global_takes_value(w)) ++i;
  }
  if (option.empty()) return {};
  const auto owners = commands_with(option);
  if (owners.empty()) {
    return "unknown option " + option +
           (command.empty() ? " (commands: " + command_list() + ")" : std::string(" (see redlock --help)"));
  }
  std::string list;
  for (const auto& o : owners) list += (list.empty() ? "" : "/") + o;
  const bool has = command.empty() || std::find(owners.begin(), owners.end(), command) != owners.end();
  if (!has)
    return option + " is an option of " + list + ", not of " + command + " (see redlock " + command + " --help)";
  return option + " is an option of " + list + ": put it after the command (redlock " +
         (command.empty() ? owners.front() : command) + " " + option + " ...)";
}

// Words CLI11 found no place for. Each is named, but a word right after an unknown option without
// an attached value is not: it may be that option's value (a mistyped --pasword's).
std::string unexpected_words(const Words& words, const std::vector<std::string>& extras) {
  auto unknown = [&](const std::string& w) {
    const bool bare = w.substr(0, 2) == "--" ? w.find('=') == std::string::npos : w.size() == 2;
    return w.size() > 1 && w[0] == '-' && bare && std::find(extras.begin(), extras.end(), w) != extras.end();
  };
  std::string shown;
  std::size_t count = 0;
  std::vector<std::string> hidden_after;
  std::size_t at = 1;
  for (const auto& extra : extras) {
    if (extra == "--") continue;  // the end of run's options, put there by end_run_options
    const auto i = static_cast<std::size_t>(
        std::find(words.begin() + static_cast<std::ptrdiff_t>(std::min(at, words.size())), words.end(), extra) -
        words.begin());
    at = i + 1;
    const bool option = extra.size() > 1 && extra[0] == '-';
    if (!option && i < words.size() && unknown(words[i - 1])) {
      hidden_after.push_back(words[i - 1]);
      continue;
    }
    shown += (shown.empty() ? "" : " ") + (option ? option_name(extra) : "'" + printable(extra) + "'");
    ++count;
  }
  std::string message = std::string(count == 1 ? "unexpected argument: " : "unexpected arguments: ") + shown;
  if (hidden_after.size() == 1) {
    const std::string option = count == 1 ? "it" : option_name(hidden_after[0]);
    message += " (and the word after " + option + ", not shown: it may be its value)";
  }
  if (hidden_after.size() > 1)
    message += " (and " + std::to_string(hidden_after.size()) + " words after unknown options, not shown)";
  return message;
}

// MESSAGE with FLAG ("--ttl") replaced by NAME ("REDLOCK_TTL") where it stands as a word of its own,
// "NAME=VALUE" where VALUE follows it.
std::string replace_option(std::string message, const std::string& flag, const std::string& name,
                           const std::string& value) {
  for (std::size_t at = message.find(flag); at != std::string::npos; at = message.find(flag, at + 1)) {
    const std::size_t end = at + flag.size();
    if ((at > 0 && message[at - 1] != ' ') || (end < message.size() && std::strchr(" :,)", message[end]) == nullptr))
      continue;
    const std::string with_value = " " + value;
    const bool valued = !value.empty() && message.compare(end, with_value.size(), with_value) == 0 &&
                        (end + with_value.size() == message.size() || message[end + with_value.size()] == ' ');
    message.replace(at, valued ? flag.size() + with_value.size() : flag.size(), valued ? name + "=" + value : name);
  }
  return message;
}

// A message about an option whose value came from its REDLOCK_* variable (the environment, or the
// configuration file) names the variable, not the option nobody typed. A bad value from the
// configuration file is a configuration error (78), not a usage error.
struct Named {
  std::string message;
  bool from_file = false;
};

Named name_variables(std::string message, const CLI::App& app, const GlobalOptions& global) {
  bool from_file = false;
  std::vector<const CLI::Option*> options = app.get_options();
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    auto more = sub->get_options();
    options.insert(options.end(), more.begin(), more.end());
  }
  for (const CLI::Option* o : options) {
    const std::string& variable = o->get_envname();
    const char* value = variable.empty() ? nullptr : environment_variable(variable);
    if (value == nullptr || o->get_lnames().empty()) continue;
    bool given = false;
    for (const auto& n : o->get_lnames()) given = given || given_on_command_line(global, {"--" + n});
    for (const auto& n : o->get_snames()) given = given || given_on_command_line(global, {"-" + n});
    if (given) continue;
    const bool in_file = global.config.applied.count(variable) > 0;
    const std::string name = in_file ? variable + " (" + global.config.where(variable) + ")" : variable;
    std::string replaced = replace_option(message, "--" + o->get_lnames().front(), name, value);
    from_file = from_file || (in_file && replaced != message);
    message = std::move(replaced);
  }
  return {message, from_file};
}

int usage_status(const Named& named) {
  return named.from_file ? exit_code::kConfig : exit_code::kUsage;
}

// A bound of CLI11's range as a person writes it: "0.500000" is 0.5.
std::string bound_text(std::string bound) {
  if (bound.find('.') == std::string::npos) return bound;
  while (bound.ends_with('0')) bound.pop_back();
  if (bound.ends_with('.')) bound.pop_back();
  return bound;
}

// CLI11's "--drift: Value abc not in range 0.000000 to 0.500000", said as what is wrong:
// "--drift: 'abc' is not a number from 0 to 0.5". Any other message as it is.
std::string range_message(const std::string& message) {
  constexpr std::string_view kValue = ": Value ", kRange = " not in range ", kTo = " to ";
  const std::size_t value = message.find(kValue);
  const std::size_t range = message.find(kRange, value == std::string::npos ? 0 : value);
  const std::size_t to = message.find(kTo, range == std::string::npos ? 0 : range + kRange.size());
  if (value == std::string::npos || range == std::string::npos || to == std::string::npos) return message;
  const std::size_t from = range + kRange.size();
  return message.substr(0, value) + ": '" + message.substr(value + kValue.size(), range - value - kValue.size()) +
         "' is not a number from " + bound_text(message.substr(from, to - from)) + " to " +
         bound_text(message.substr(to + kTo.size()));
}

// CLI11's "--ttl: At Most 1 required but received 2": which value was meant cannot be told (the
// first may be a script's unset variable, or one that is not valid at all), so neither is taken.
std::string twice_message(const std::string& message) {
  constexpr std::string_view kMost = ": At Most 1 required but received ";
  const std::size_t at = message.find(kMost);
  if (at == std::string::npos) return range_message(message);
  return message.substr(0, at) + " is given " + message.substr(at + kMost.size()) + " times: give it once";
}

// CLI11's "Could not convert: --json = junk", said as what is wrong.
std::string conversion_message(const CLI::App& app, const std::string& message) {
  constexpr std::string_view kPrefix = "Could not convert: ";
  const std::size_t eq = message.find(" = ");
  if (message.compare(0, kPrefix.size(), kPrefix) != 0 || eq == std::string::npos) return twice_message(message);
  const std::string option = message.substr(kPrefix.size(), eq - kPrefix.size());
  std::string text = option + ": '" + message.substr(eq + 3) + "' is not a valid value";
  if (option_kind(app, option) == OptionKind::Flag) text += kFlagValues;
  return text;
}

// Where a usage error of COMMAND (none: of redlock itself) points: " (see redlock CMD --help)".
std::string see_help(const std::string& command) {
  return " (see redlock " + (command.empty() ? "" : command + " ") + "--help)";
}

// The one line of a command line CLI11 could not read, and its status (64).
int parse_failed(const CLI::App& app, const CLI::ParseError& e, const Words& words, const GlobalOptions& global,
                 bool json) {
  const auto subs = app.get_subcommands();
  const std::string command = subs.empty() ? "" : subs.front()->get_name();
  const std::string see = see_help(command);
  if (auto misplaced = misplaced_option(words); !misplaced.empty())
    return fail(json, command, exit_code::kUsage, misplaced);
  const std::string word = first_word(words);
  if (subs.empty() && !word.empty() && !is_command(word)) {
    return fail(json, command, exit_code::kUsage,
                "unknown command '" + printable(word) + "' (commands: " + command_list() + ")");
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr)
    return fail(json, command, exit_code::kUsage, unexpected_words(words, app.remaining(true)) + see);
  if (subs.empty() && word.empty() && dynamic_cast<const CLI::RequiredError*>(&e) != nullptr)
    return fail(json, command, exit_code::kUsage, "a command is required (commands: " + command_list() + ")");
  const CLI::App& where = subs.empty() ? app : *subs.front();
  const Named named = name_variables(conversion_message(where, e.what()), app, global);
  return fail(json, command, usage_status(named), named.message + (named.from_file ? "" : see));
}

// Runs the command that was parsed. An error it throws is one line on stderr, and its status.
int run_command(const CLI::App& app, const Action& action, const GlobalOptions& global) {
  const std::string command = app.get_subcommands().front()->get_name();
  try {
    int status = action();
    // Not for run and elect, whose status is their command's (and whose stdout is the command's).
    return command == "run" || command == "elect" ? status : checked_stdout(command, status);
  } catch (const Error& e) {
    // A usage or configuration error may be about an option whose value came from its variable.
    if (e.kind() == ErrorKind::Internal) return fail(global.json, command, exit_code::of(e.kind()), e.what());
    const Named named = name_variables(e.what(), app, global);
    const int status = e.kind() == ErrorKind::Usage ? usage_status(named) : exit_code::of(e.kind());
    return fail(global.json, command, status, named.message);
  } catch (const std::exception& e) {
    return fail(global.json, command, exit_code::kInternal, std::string("internal error: ") + e.what());
  }
}

// Core's messages name settings by the options that set them.
std::string flag_name(Setting s) {
  switch (s) {
    case Setting::Ttl:
      return "--ttl";
    case Setting::Timeout:
      return "--timeout";
    case Setting::TlsCa:
      return "--tls-ca";
    case Setting::TlsCert:
      return "--tls-cert";
    case Setting::TlsKey:
      return "--tls-key";
    case Setting::TlsServerName:
      return "--tls-server-name";
  }
  return "an option";
}

// CLI11's answer to a request for help or the version, printed on the standard streams.
int printed_exit(const CLI::App& app, const CLI::Error& e) {
  const StandardStreams streams;
  return app.exit(e);
}

// Parses ARGS with APP. Help, the version and parse errors end here with their status; nullopt
// when the command is to run. A command line that fails to parse with only the options it names
// built (GLOBAL.only_named) is parsed again with all of them, so that its error reads as it
// always has.
std::optional<int> parse(std::unique_ptr<CLI::App>& app, GlobalOptions& global, Action& action, const Words& words,
                         std::vector<char*>& args, bool json) {
  try {
    app->parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::CallForHelp& e) {
    return checked_stdout("", printed_exit(*app, e));
  } catch (const CLI::CallForAllHelp& e) {
    return checked_stdout("", printed_exit(*app, e));
  } catch (const CLI::CallForVersion& e) {
    if (!json) return checked_stdout("", printed_exit(*app, e));
    Json version;
    version["version"] = 1;
    version["redlock"] = REDLOCK_VERSION;
    print_json(version);
    return checked_stdout("", exit_code::kOk);
  } catch (const std::out_of_range&) {
    // CLI11 reads the number of a count flag (--verbose=N, the only one) with std::stoll.
    const CLI::ConversionError e("--verbose: the count is out of range");
    return parse_failed(*app, e, words, global, json);
  } catch (const CLI::ParseError& e) {
    if (global.only_named == nullptr) return parse_failed(*app, e, words, global, json);
    global.only_named = nullptr;
    const std::string word = first_word(words);
    app = make_app(global, action, &word);
    return parse(app, global, action, words, args, json);
  }
  return std::nullopt;
}

// A closed stdin, stdout or stderr becomes /dev/null opened for reading: the connections made
// later never land on them (a token printed into a Redis connection), and a write there fails
// (EBADF) as it would have, so acquire still gives back a lock whose token nobody could see.
void fill_standard_descriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) < 0 && errno == EBADF && open("/dev/null", O_RDONLY) != fd) break;
  }
}

// A command that gives one answer and whose reader went away fails its write (EPIPE) and says so
// (78) instead of being killed unheard, after it may have changed a lock. Not run and elect, whose
// command inherits SIGPIPE as it was, nor watch, which ends as `tail -f` does when its reader goes.
void fail_writes_to_a_closed_pipe(const std::string& word, const Words& words) {
  if ((word == "run" || word == "elect" || word == "watch") && !wants_help(words)) return;
  std::signal(SIGPIPE, SIG_IGN);
}

}  // namespace

int main(int argc, char** argv) {
  redlock::name_settings(flag_name);
  if (const char* chosen = environment_variable("REDLOCK_FAULT")) redlock::faults::choose(chosen);
  fill_standard_descriptors();
  GlobalOptions global;
  Action action;
  Words words(argv, argv + argc);
  try {
    words = help_words(words);
  } catch (const Error& e) {
    return fail(wants_json(words), "", exit_code::kUsage, e.what());
  }
  const std::string word = first_word(words);
  fail_writes_to_a_closed_pipe(word, words);
  const bool version_only = word.empty() && wants_version(words);
  if (!version_only) {
    // Before the options are built and parsed: its settings count as the environment's, below them.
    try {
      global.config = load_config_file(option_variable_check(word));
    } catch (const Error& e) {
      return fail(wants_json(words), is_command(word) ? word : "", exit_code::kConfig, e.what());
    }
  }
  if (is_command(word) && !wants_help(words)) global.only_named = &words;
  auto app = make_app(global, action, version_only ? nullptr : &word);
  if (word == "run" || word == "elect") {
    RunWords run = end_run_options(*app->get_subcommand(word), words, command_index(words));
    words = std::move(run.words);
    global.command_words = std::move(run.command);
  }
  const bool json = wants_json(words);
  for (std::size_t i = 1; i < words.size() && words[i] != "--"; ++i) global.words.push_back(words[i]);
  const CLI::App& scope = is_command(word) ? *app->get_subcommand(word) : *app;
  if (const std::string flag = empty_flag_value(scope, words); !flag.empty()) {
    const std::string command = is_command(word) ? word : "";
    return fail(json, command, exit_code::kUsage,
                flag + ": '' is not a valid value" + std::string(kFlagValues) + see_help(command));
  }
  Words parsed = empty_values_apart(scope, words);
  std::vector<char*> args = globals_first(parsed);
  if (auto status = parse(app, global, action, words, args, json)) return *status;
  return run_command(*app, action, global);
}
