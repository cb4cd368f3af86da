// What every subcommand shares: the global options, the servers they name, and how results are
// printed (plain for scripts, one JSON object with --json).
#pragma once

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"
#include "core/lock/keys.hpp"
#include "core/lock/redlock.hpp"
#include "core/net/server_url.hpp"
#include "core/net/transport.hpp"
#include "core/util/clock.hpp"
#include "core/util/fd.hpp"

namespace CLI {
class App;
}

namespace redlock::cli {

// JSON objects keep the order their keys were added in: version and command first.
using Json = nlohmann::ordered_json;

struct GlobalOptions {
  std::vector<std::string> servers;
  std::string timeout = "100ms";
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
  ConfigFile config;
};

// Whether one of NAMES ("-w", "--wait") is on the command line itself, not only in the
// environment: where two options exclude each other, a flag beats the environment.
bool given_on_command_line(const GlobalOptions& options, std::initializer_list<std::string_view> names);

// Binds the global options (and their REDLOCK_* variables) to APP.
void setup_global_options(CLI::App& app, GlobalOptions& options);
// Every REDLOCK_* variable that an option of APP (and of its subcommands) reads, and those read
// without CLI11 (REDLOCK_SERVERS, REDLOCK_PASSWORD): what a configuration file may set.
std::set<std::string> option_variables(const CLI::App& app);

// The servers from --servers, else REDLOCK_SERVERS (also from the configuration file), else
// redis://127.0.0.1:6379; checked for duplicate addresses. Throws configuration errors.
std::vector<ServerUrl> configured_servers(const GlobalOptions& options);

// The configured servers with their passwords, and the user and password of those whose URL names
// none. A server's password: its URL's, else that of the enclosing run's URL for the same address
// (REDLOCK_PASSWORD_FD). Else --password-file, REDLOCK_PASSWORD, the enclosing run's password
// (REDLOCK_PASSWORD_FD), the configuration file's REDLOCK_PASSWORD, in this order.
struct Credentials {
  std::vector<ServerUrl> servers;
  std::optional<std::string> user;
  std::optional<std::string> password;
};
Credentials resolve_credentials(const GlobalOptions& options);

// The transport for the configured servers, with credentials and TLS settings resolved (password
// file permissions checked, REDLOCK_PASSWORD read). Warns once about --tls-insecure, and that no
// servers are configured when none are (unless -q).
std::unique_ptr<Transport> connect_servers(const GlobalOptions& options);

// For `run`'s child: a sealed memfd holding the passwords of CREDENTIALS, not closed on exec, whose
// number goes into the child's REDLOCK_PASSWORD_FD, so that a nested redlock authenticates as
// this one does with no secret in the environment or on a command line. Invalid without passwords.
Fd password_descriptor(const Credentials& credentials);

// Where the settings that reach the servers came from (servers, password, user, timeout, prefix):
// the command line, the environment, the configuration file (PATH:LINE) or the default; a line each.
std::vector<std::string> setting_origins(const GlobalOptions& options);

Duration request_timeout(const GlobalOptions& options);

// The Redis key for NAME (prefix + NAME) and its helper keys; NAME must not be empty.
LockKeys lock_keys(const GlobalOptions& options, const std::string& name);

// The token to use for lock KEY when no --token was given: inside `run`'s child, the token of the
// enclosing run whose lock KEY is on these servers (never another lock's: sibling workers that
// take a second lock must exclude each other); outside any run, REDLOCK_TOKEN. nullopt when none.
std::optional<std::string> inherited_token(const GlobalOptions& options, const std::string& key);
// A --token given empty on the command line is a usage error: a script's unset variable
// (--token "$T") must not fall back to REDLOCK_TOKEN or to a new token.
void refuse_empty_token(const GlobalOptions& global, const std::string& token);
// The token of a held lock KEY for extend and release: --token, else the first line of
// --token-file (as acquire --token-file writes it: a token need never be in argv, where ps shows
// it), else, when INHERIT, inherited_token. Empty when there is none. Both options on the command
// line are a usage error; a file that cannot be read or holds no token is a configuration error.
std::string held_token(const GlobalOptions& global, const std::string& token, const std::string& token_file,
                       const std::string& key, bool inherit);

// Parses a duration option; ALLOW_ZERO false makes 0 a usage error too.
Duration duration_option(const std::string& text, const char* what, bool allow_zero);
// A TTL in whole milliseconds, at least 1 ms.
Duration ttl_option(const std::string& text, const char* what);

// NAME as it may appear in a one-line message: control characters escaped, long names cut.
std::string printable(const std::string& text);

// A lock's TTL as status and list show it: "29.5s", "no expiry" (−1), "-" (none).
std::string ttl_text(std::int64_t ttl_ms);
// UNIX_MS as an ISO 8601 UTC time to the second ("2024-05-01T12:00:00Z").
std::string wall_time(std::int64_t unix_ms);

// Diagnostics on stderr: warnings unless -q, verbose lines with -v.
void warn(const GlobalOptions& options, const std::string& message);
void verbose(const GlobalOptions& options, int level, const std::string& message);
// With -vv: what each server answered, and how fast, a line each. Whatever the verbosity (-q
// too), a warning line for each server that is a replica: it never counts as a vote.
void verbose_servers(const GlobalOptions& options, const std::vector<ServerReport>& servers);
// An error: one line on stderr, "redlock: error: LINE", whatever the format, and in ANSWER (when
// given: the command's JSON object) the "error" every error's JSON carries. Returns CODE.
int report_error(Json* answer, int code, const std::string& line);
// Too few servers answered for NAME (69): report_error with "NAME: WHAT".
int no_quorum(Json* answer, const std::string& name, const std::string& what);

// The JSON skeleton every command prints: version, command, name, key.
Json json_head(const std::string& command, const std::string& name, const std::string& key);
Json json_servers(const std::vector<ServerReport>& servers);
Json json_quorum(const Tally& tally);
// "2 of 3 servers (1 not waited for)": the servers that said yes, and those not waited for.
std::string votes_text(const Tally& tally);
double json_ms(Duration d);
// A Unix time in milliseconds as UTC, to the second: "2026-01-02T03:04:05Z".
std::string wall_time(std::int64_t unix_ms);
// Writes CONTENT to PATH, mode 0600 from the first byte whatever the umask: a new temporary file
// of a name nobody can guess in the same directory (O_EXCL: no file or link planted there is
// followed), renamed over PATH. Returns 0, or the errno of what failed.
int write_private_file(const std::string& path, const std::string& content);
// That write_private_file(PATH) can work, found out before a lock is taken for nothing: makes and
// removes such a temporary file, and PATH must not be a directory. Else a configuration error
// that names OPTION. Nothing to check when PATH is empty.
void require_private_file(const std::string& path, const std::string& option);

// OBJECT as one line of text. Names and values are bytes: what is not valid UTF-8 is written as
// U+FFFD, so that a binary name never breaks the output.
std::string json_text(const Json& object);
// One line on stdout, written out at once; false (errno set) when it could not be (stdout closed,
// a full disk). print_json prints json_text(OBJECT).
bool print_json(const Json& object);
bool print_line(const std::string& line);

// The default --owner: user@host:pid, plus the CI job when a known CI variable is set.
std::string default_owner();

}  // namespace redlock::cli
