#include "options.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/lock/quorum.hpp"
#include "core/lock/token.hpp"
#include "core/util/duration.hpp"
#include "core/util/error.hpp"
#include "core/util/fd.hpp"
#include "enclosing.hpp"
#include "environment.hpp"
#include "option_table.hpp"
#include "output.hpp"
#include "servers.hpp"

namespace redlock::cli {

namespace {

using G = GlobalOptions;

// One value per -S (repeatable), so that `status -S URL NAME` leaves NAME alone.
const OptionRow<G> kGlobalOptions[] = {
    {.flags = "-S,--servers",
     .env = kServersVariable,
     .takes_value = true,
     .type_name = "URL[,URL...]",
     .help = "Redis masters, URL[,URL...] (repeatable; else REDLOCK_SERVERS, else the configuration file)",
     .target = &G::servers,
     .repeatable = true,
     .env_by_hand = true},
    {.flags = "--timeout",
     .env = "REDLOCK_TIMEOUT",
     .takes_value = true,
     .type_name = "DUR",
     .help = "deadline for one request to one server, connect included",
     .target = &G::timeout,
     .to_child = true,
     .show_default = true},
    {.flags = "--member-wait",
     .env = "REDLOCK_MEMBER_WAIT",
     .takes_value = true,
     .type_name = "N",
     .help = "a Sentinel or Cluster member's vote counts once WAIT confirms N replicas (default: 1 if it has any)",
     .target = &G::member_wait,
     .to_child = true},
    {.flags = "--password-file",
     .env = "REDLOCK_PASSWORD_FILE",
     .takes_value = true,
     .type_name = "FILE",
     .help = "read the password from FILE (mode 600)",
     .target = &G::password_file,
     .to_child = true},
    {.flags = "--user",
     .env = "REDLOCK_USER",
     .takes_value = true,
     .help = "ACL user for servers whose URL names none",
     .target = &G::user,
     .to_child = true},
    {.flags = "--tls-ca",
     .env = "REDLOCK_TLS_CA",
     .takes_value = true,
     .type_name = "FILE",
     .help = "CA certificates for rediss:// (default: the system store)",
     .target = &G::tls_ca,
     .to_child = true},
    {.flags = "--tls-cert",
     .env = "REDLOCK_TLS_CERT",
     .takes_value = true,
     .type_name = "FILE",
     .help = "client certificate for rediss://",
     .target = &G::tls_cert,
     .to_child = true},
    {.flags = "--tls-key",
     .env = "REDLOCK_TLS_KEY",
     .takes_value = true,
     .type_name = "FILE",
     .help = "client key for rediss://",
     .target = &G::tls_key,
     .to_child = true},
    {.flags = "--tls-server-name",
     .env = "REDLOCK_TLS_SERVER_NAME",
     .takes_value = true,
     .type_name = "NAME",
     .help = "verify the server certificate against NAME",
     .target = &G::tls_server_name,
     .to_child = true},
    {.flags = "--tls-insecure",
     .env = "REDLOCK_TLS_INSECURE",
     .takes_value = false,
     .help = "do not verify server certificates (warns)",
     .target = &G::tls_insecure,
     .to_child = true},
    {.flags = "--json",
     .env = "REDLOCK_JSON",
     .takes_value = false,
     .help = "print exactly one JSON object on stdout",
     .target = &G::json},
    {.flags = "-v,--verbose",
     .env = "REDLOCK_VERBOSE",
     .takes_value = false,
     .help = "diagnostics on stderr (repeat for more)",
     .target = &G::verbose},
    {.flags = "-q,--quiet",
     .env = "REDLOCK_QUIET",
     .takes_value = false,
     .help = "nothing on stderr but errors",
     .target = &G::quiet},
    {.flags = "--prefix",
     .env = "REDLOCK_PREFIX",
     .takes_value = true,
     .help = "prepended to NAME to form the Redis key",
     .target = &G::prefix,
     .to_child = true},
};

// WORD is FLAG, or FLAG with its value attached: "--timeout=1s", "-S1.2.3.4:5" (a short option
// that takes a value), "--json=true" (a long flag; short flags are read as clusters).
bool names_option(std::string_view word, std::string_view flag, bool takes_value) {
  if (word == flag) return true;
  if (word.size() <= flag.size() || !word.starts_with(flag)) return false;
  if (flag.size() == 2) return takes_value;
  return word[flag.size()] == '=';
}

}  // namespace

std::span<const OptionRow<GlobalOptions>> global_options() {
  return kGlobalOptions;
}

bool global_takes_value(std::string_view word) {
  for (const auto& row : kGlobalOptions) {
    bool found = false;
    for_each_flag(row.flags, [&](std::string_view flag) { found = found || word == flag; });
    if (found) return row.takes_value;
  }
  return false;
}

bool is_global_option(std::string_view word) {
  for (const auto& row : kGlobalOptions) {
    bool found = false;
    for_each_flag(row.flags,
                  [&](std::string_view flag) { found = found || names_option(word, flag, row.takes_value); });
    if (found) return true;
  }
  // -v, -vv, -q, -qv …
  return word.size() >= 2 && word[0] == '-' && word[1] != '-' &&
         word.find_first_not_of("vq", 1) == std::string_view::npos;
}

bool global_flag_set(const std::vector<std::string>& words, std::string_view long_name) {
  const OptionRow<GlobalOptions>* row = find_row(global_options(), long_name);
  for (std::size_t i = 1; i < words.size(); ++i) {
    std::string_view a = words[i];
    if (a == "--") break;
    if (a == long_name) return true;
    if (a.starts_with(long_name) && a.size() > long_name.size() && a[long_name.size()] == '=')
      return flag_value(std::string(a.substr(long_name.size() + 1)));
  }
  const char* env = row && !row->env.empty() ? environment_variable(row->env) : nullptr;
  return env && *env && flag_value(env);
}

bool option_wanted(const GlobalOptions& global, std::string_view flags, std::string_view env) {
  if (global.only_named == nullptr) return true;
  if (!env.empty() && environment_variable(env) != nullptr) return true;
  bool named = false;
  for_each_flag(flags, [&](std::string_view flag) {
    for (std::string_view w : *global.only_named) {
      if (flag.starts_with("--")) {
        named = named || w == flag || (w.size() > flag.size() && w.starts_with(flag) && w[flag.size()] == '=');
      } else if (flag.size() == 2) {
        named = named || (w.size() > 1 && w[0] == '-' && w[1] != '-' && w.find(flag[1], 1) != std::string_view::npos);
      }
    }
  });
  return named;
}

void child_settings(const GlobalOptions& options, std::vector<std::pair<std::string, std::string>>& set,
                    std::vector<std::string>& unset) {
  for (const auto& row : kGlobalOptions) {
    if (!row.to_child) continue;
    std::string value;
    if (auto text = std::get_if<std::string GlobalOptions::*>(&row.target)) value = options.**text;
    if (auto flag = std::get_if<bool GlobalOptions::*>(&row.target)) value = options.**flag ? "1" : "";
    if (value.empty()) {
      unset.emplace_back(row.env);
    } else {
      set.emplace_back(std::string(row.env), std::move(value));
    }
  }
}

namespace {

// Whether the short option NAME ("-w") is in WORD, a bundle of short options such as "-nw5s": after
// flags that take no value only, since a value runs to the end of the word ("-k5w" is -k 5w).
bool in_short_bundle(std::string_view word, std::string_view name) {
  if (name.size() != 2 || word.size() < 3 || word[0] != '-' || word[1] == '-') return false;
  for (std::size_t i = 1; i < word.size(); ++i) {
    if (word[i] == name[1]) return true;
    if (kShortFlagsWithoutValue.find(word[i]) == std::string_view::npos) return false;
  }
  return false;
}

}  // namespace

bool given_on_command_line(const GlobalOptions& options, std::initializer_list<std::string_view> names) {
  for (std::string_view word : options.words) {
    for (std::string_view name : names) {
      if (word == name || in_short_bundle(word, name)) return true;
      // "--wait=5s".
      if (word.size() > name.size() && word.starts_with(name) && word[name.size()] == '=') return true;
    }
  }
  return false;
}

int place(const GlobalOptions& options, const Placed& option) {
  bool flag = false;
  for_each_flag(option.flags, [&](std::string_view name) { flag = flag || given_on_command_line(options, {name}); });
  if (flag) return kOnCommandLine;
  return options.config.applied.count(std::string(option.variable)) ? kInConfigFile : kInEnvironment;
}

bool beats(const GlobalOptions& options, const Placed& a, const Placed& b, const std::string& message) {
  const int pa = place(options, a), pb = place(options, b);
  if (pa == pb) usage_error(message);
  return pa > pb;
}

Duration request_timeout(const GlobalOptions& options) {
  if (!options.parsed_timeout) options.parsed_timeout = duration_option(options.timeout, "--timeout", false);
  return *options.parsed_timeout;
}

namespace {

// A NAME whose braces form no hash tag its helper keys can keep is refused where a cluster serves
// it, before anything is sent: its scripts would be refused there (CROSSSLOT) at every attempt.
// A server list that does not parse says so later, in its own words.
void refuse_cross_slot(const GlobalOptions& options, const std::string& name) {
  std::vector<ServerUrl> servers;
  try {
    servers = configured_servers(options);
  } catch (const Error&) {
    return;
  }
  for (const auto& s : servers) {
    if (!s.is_cluster()) continue;
    usage_error("NAME '" + printable(name) + "' has braces that form no hash tag: its helper keys would fall in " +
                "other slots than the lock on the cluster member " + s.redacted() +
                "; use a NAME without braces, or with a non-empty {tag}");
  }
}

}  // namespace

LockKeys lock_keys(const GlobalOptions& options, const std::string& name) {
  if (name.empty()) usage_error("NAME must not be empty");
  const std::string key = options.prefix + name;
  if (is_helper_key(key)) {
    usage_error(
        "NAME '" + printable(name) + "' ends as redlock's helper keys do (:redlock:fence, :redlock:owner, " +
        ":redlock:wake, :redlock:limit, :redlock:slot:N, :redlock:waiters, :redlock:waiter:ID, :redlock:grant:ID, " +
        ":redlock:readers, :redlock:writers, :redlock:readerowners); another lock's owner record could " +
        "overwrite it");
  }
  if (!keys_share_slot(key)) refuse_cross_slot(options, name);
  return derive_keys(key);
}

Duration duration_option(const std::string& text, const char* what, bool allow_zero) {
  Duration d = parse_duration(text, what);
  if (!allow_zero && d <= Duration::zero()) usage_error(std::string(what) + ": must be more than zero");
  return d;
}

Duration ttl_option(const std::string& text, const char* what) {
  Duration d = duration_option(text, what, false);
  auto ms = std::chrono::duration_cast<Millis>(d);
  if (ms.count() < 1) usage_error(std::string(what) + ": must be at least 1ms");
  return ms;
}

void require_validity(Duration ttl, const std::string& text, double drift) {
  if (validity(ttl, Duration::zero(), drift) <= Duration::zero())
    usage_error("--ttl " + text + " leaves no validity after the drift allowance (TTL·drift + 2ms)");
}

void refuse_empty(const GlobalOptions& global, const std::string& value, std::string_view flag) {
  if (value.empty() && given_on_command_line(global, {flag})) usage_error(std::string(flag) + ": must not be empty");
}

namespace {

// A token is printed alone on a line, and read as one word in the scripts' records.
void refuse_control_characters(const std::string& token, std::string_view from) {
  if (std::any_of(token.begin(), token.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
    usage_error(std::string(from) + ": control characters (a line break, a tab) are not allowed in a token");
}

}  // namespace

void refuse_empty_token(const GlobalOptions& global, const std::string& token) {
  refuse_empty(global, token, "--token");
  refuse_control_characters(token, "--token");
  refuse_marker(token, "--token");
}

void refuse_marker(const std::string& token, std::string_view source) {
  if (token == kSharedMarker)
    usage_error(std::string(source) + ": '" + token + "' is the readers' marker, never a token");
}

namespace {

std::string read_token_file(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd) config_error("--token-file '" + printable(path) + "': " + std::strerror(errno));
  std::string content;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd.get(), buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) config_error("--token-file '" + printable(path) + "': " + std::strerror(errno));
    content.append(buf, static_cast<std::size_t>(n));
    if (content.size() > 64 * 1024) config_error("--token-file '" + printable(path) + "' is too large for a token");
  }
  std::string token = content.substr(0, content.find('\n'));
  if (token.ends_with('\r')) token.pop_back();  // a line ended as on Windows
  const bool unprintable =
      std::any_of(token.begin(), token.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
  if (token.empty() || unprintable) config_error("--token-file '" + printable(path) + "' holds no token");
  refuse_marker(token, "--token-file '" + printable(path) + "'");
  return token;
}

}  // namespace

std::string held_token(const GlobalOptions& global, const std::string& token, const std::string& token_file,
                       const std::string& key, bool inherit, bool semaphore) {
  refuse_empty_token(global, token);
  refuse_empty(global, token_file, "--token-file");
  const bool file_flag = given_on_command_line(global, {"--token-file"});
  if (given_on_command_line(global, {"--token"}) && file_flag) {
    usage_error("give either --token TOKEN or --token-file FILE, not both");
  }
  if (!token.empty() && !file_flag) return token;
  if (!token_file.empty()) return read_token_file(token_file);
  if (!token.empty()) return token;
  return inherit ? inherited_token(global, key, semaphore).value_or("") : "";
}

std::optional<std::string> inherited_token(const GlobalOptions& options, const std::string& key, bool semaphore) {
  const auto locks = enclosing_locks();
  if (locks.empty()) {
    auto token = environment_value("REDLOCK_TOKEN");
    if (!token || token->empty()) return std::nullopt;
    refuse_control_characters(*token, "REDLOCK_TOKEN");
    refuse_marker(*token, "REDLOCK_TOKEN");
    return token;
  }
  if (auto* lock = find_enclosing(locks, key, servers_signature(configured_servers(options)), semaphore)) {
    refuse_marker(lock->token, "REDLOCK_ENCLOSING");
    return lock->token;
  }
  return std::nullopt;
}

std::string default_owner() {
  std::string user;
  if (const passwd* pw = getpwuid(geteuid())) user = pw->pw_name;
  if (user.empty()) user = environment_value("USER").value_or("uid" + std::to_string(geteuid()));
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string owner = user + "@" + host + ":" + std::to_string(getpid());
  // The job of a CI system, where one is recognised, says more than a runner's host name.
  for (const char* var : {"GITHUB_RUN_ID", "CI_JOB_ID", "BUILDKITE_JOB_ID", "CIRCLE_WORKFLOW_JOB_ID", "BUILD_TAG"}) {
    if (auto v = environment_value(var); v && !v->empty()) {
      owner += std::string(" ") + var + "=" + *v;
      break;
    }
  }
  return owner;
}

}  // namespace redlock::cli
