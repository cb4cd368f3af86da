// The options, as tables: one row per option, its flags, its REDLOCK_* variable, whether it takes
// a value, its help, where its value goes and whether `run` hands it on to its command. The rows
// drive CLI11 (option_table.hpp), the pre-scan of main.cpp, the variables a configuration file may
// set, what a nested call inherits, and tests/man/documented_options.py (which reads the
// `.flags = "..."` of every row). Adding an option is adding a row.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config.hpp"
#include "core/lock/keys.hpp"
#include "core/util/clock.hpp"

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace redlock::cli {

// One option of SETTINGS, the struct its value is parsed into.
template <class Settings>
struct OptionRow {
  using Target = std::variant<std::string Settings::*, bool Settings::*, int Settings::*, double Settings::*,
                              std::size_t Settings::*, std::vector<std::string> Settings::*>;
  std::string_view flags;           // CLI11's names: "-w,--wait"
  std::string_view env = {};        // its REDLOCK_* variable; empty when none
  bool takes_value = false;         // else a flag (into an int: counted, -vv)
  std::string_view type_name = {};  // "DUR"; empty: CLI11's own
  std::string_view help = {};
  Target target = {};
  bool to_child = false;      // `run` hands it on to its command as ENV (set, or unset when empty)
  bool show_default = false;  // --help shows the default
  bool repeatable = false;    // one value per occurrence, all kept (-S URL -S URL)
  CLI::Validator (*check)() = nullptr;
  bool env_by_hand = false;  // ENV is read by the code, not by CLI11 (REDLOCK_SERVERS: see configured_servers)
};

// The global options, typed. Durations are kept as given (for messages and for `run`'s child) and
// parsed once, when first needed (request_timeout).
struct GlobalOptions {
  std::vector<std::string> servers;
  std::string timeout = "100ms";
  std::string member_wait;  // empty: by the master's replicas
  std::string password_file;
  std::string user;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_server_name;
  bool tls_insecure = false;
  bool json = false;
  int verbose = 0;
  bool quiet = false;
  std::string prefix;
  // The command line's words up to "--", to tell an option given there from one that came from
  // the environment (see given_on_command_line).
  std::vector<std::string> words;
  // run's and elect's CMD as written: the words after their "--" (see end_run_options). CLI11 would
  // read a word "[a,b]" as the two words a and b.
  std::vector<std::string> command_words;
  ConfigFile config;
  mutable std::optional<Duration> parsed_timeout;  // see request_timeout
  // When set, only the options named in these words or set in their variable are built (see
  // option_wanted); else all of them.
  const std::vector<std::string>* only_named = nullptr;
};

// Whether the option of FLAGS and variable ENV is to be built for this command line. Building an
// option costs more than most commands' work, and one that no word names and no variable sets
// can change nothing, so only those are built, unless GLOBAL.only_named is unset (help lists
// every option, and an error is reported as the whole command line makes it). A word names an
// option as CLI11 could read it: "--wait", "--wait=5s", or a short "-w" in any word of one dash
// ("-nw5s"); naming more is harmless.
bool option_wanted(const GlobalOptions& global, std::string_view flags, std::string_view env);

// The global options' rows, and the variables read without an option (REDLOCK_PASSWORD).
std::span<const OptionRow<GlobalOptions>> global_options();
inline constexpr std::string_view kServersVariable = "REDLOCK_SERVERS";
inline constexpr std::string_view kPasswordVariable = "REDLOCK_PASSWORD";

// What the pre-scan needs to know of WORD without CLI11: whether it is a global option that takes
// a value ("--timeout", "-S"), and whether it is one at all, its value attached or not
// ("--timeout=1s", "-S1.2.3.4:5", "--json=true", "-vq").
bool global_takes_value(std::string_view word);
bool is_global_option(std::string_view word);
// The global flag with long name LONG ("--json"), given as a word of WORDS (before any "--") or
// else in its variable, read as CLI11 reads a flag's value. Known even when parsing fails.
bool global_flag_set(const std::vector<std::string>& words, std::string_view long_name);

// Calls FN(name) for each of FLAGS' names with its dashes: "-w", "--wait".
template <class Fn>
void for_each_flag(std::string_view flags, Fn fn) {
  while (!flags.empty()) {
    const std::size_t comma = std::min(flags.find(','), flags.size());
    fn(flags.substr(0, comma));
    flags.remove_prefix(std::min(comma + 1, flags.size()));
  }
}

// The short options of every command that take no value (-h, -n, -q, -v): others may follow them
// in one word ("-nw5s" is -n -w 5s). A unit test holds this to the option tables.
inline constexpr std::string_view kShortFlagsWithoutValue = "hnqv";

// Whether one of NAMES ("-w", "--wait") is on the command line itself, not only in the
// environment: where two options exclude each other, a flag beats the environment.
bool given_on_command_line(const GlobalOptions& options, std::initializer_list<std::string_view> names);
// Of two options that exclude each other, both set (FLAGS and VARIABLE of each, as their rows in
// the option table give them): whether A beats B. A flag beats the environment, which beats the
// configuration file; both in the same place is a usage error, MESSAGE.
struct Placed {
  std::string_view flags;  // "-w,--wait"
  std::string_view variable;
};
bool beats(const GlobalOptions& options, const Placed& a, const Placed& b, const std::string& message);
// Where an option that is set was given: the higher, the stronger.
inline constexpr int kInConfigFile = 0, kInEnvironment = 1, kOnCommandLine = 2;
int place(const GlobalOptions& options, const Placed& option);
template <class Settings>
Placed placed(const OptionRow<Settings>& row) {
  return {row.flags, row.env};
}

// The environment `run` gives its command for the global options marked to_child: NAME=VALUE
// pairs to set, and names to unset.
void child_settings(const GlobalOptions& options, std::vector<std::pair<std::string, std::string>>& set,
                    std::vector<std::string>& unset);

// --timeout, parsed on first use (a usage error then), once.
Duration request_timeout(const GlobalOptions& options);

// The Redis key for NAME (prefix + NAME) and its helper keys; NAME must not be empty.
LockKeys lock_keys(const GlobalOptions& options, const std::string& name);

// The token to use for lock KEY when no --token was given: inside `run`'s child, the token of the
// enclosing run whose lock KEY is on these servers (never another lock's: sibling workers that
// take a second lock must exclude each other); outside any run, REDLOCK_TOKEN. nullopt when none.
// SEMAPHORE: KEY is a semaphore's (--limit).
std::optional<std::string> inherited_token(const GlobalOptions& options, const std::string& key, bool semaphore);
// A --token given empty on the command line is a usage error: a script's unset variable
// (--token "$T") must not fall back to REDLOCK_TOKEN or to a new token. So is one with a control
// character (a line break): a token is printed on a line of its own.
void refuse_empty_token(const GlobalOptions& global, const std::string& token);
// The readers' marker of the shared mode is never a token, wherever it comes from (SOURCE): used
// as one, a release, an extend or a failed attempt's give-back would end the readers' hold.
void refuse_marker(const std::string& token, std::string_view source);
// A usage error when FLAG was given on the command line with an empty VALUE (a script's unset
// variable), which would read as the option not given at all.
void refuse_empty(const GlobalOptions& global, const std::string& value, std::string_view flag);
// The token of a held lock KEY for extend and release: --token, else the first line of
// --token-file (as acquire --token-file writes it: a token need never be in argv, where ps shows
// it), else, when INHERIT, inherited_token. Empty when there is none. Both options on the command
// line are a usage error; a file that cannot be read or holds no token is a configuration error.
std::string held_token(const GlobalOptions& global, const std::string& token, const std::string& token_file,
                       const std::string& key, bool inherit, bool semaphore);

// Parses a duration option; ALLOW_ZERO false makes 0 a usage error too.
Duration duration_option(const std::string& text, const char* what, bool allow_zero);
// A TTL in whole milliseconds, at least 1 ms.
Duration ttl_option(const std::string& text, const char* what);
// --ttl TEXT, read as TTL: a usage error when the drift allowance (DRIFT) leaves it no validity.
void require_validity(Duration ttl, const std::string& text, double drift);

// The default --owner: user@host:pid, plus the CI job when a known CI variable is set.
std::string default_owner();

}  // namespace redlock::cli
