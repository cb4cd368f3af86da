#include "common.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <map>

#include "core/lock/token.hpp"
#include "core/util/duration.hpp"
#include "core/util/error.hpp"
#include "core/util/fd.hpp"
#include "enclosing.hpp"
#include "exit_codes.hpp"

namespace redlock::cli {

namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return std::nullopt;
  return std::string(v);
}

// The first line of PATH, refused when the file is readable by group or others (as ssh does with
// keys). The mode is checked on the descriptor that is read, so a file swapped in between cannot slip by.
std::string read_password_file(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd) config_error("--password-file '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) config_error("--password-file '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) config_error("--password-file '" + path + "' is not a regular file");
  if (st.st_mode & (S_IRGRP | S_IROTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    config_error("--password-file '" + path + "' is readable by group or others (mode " + mode +
                 "); make it private with chmod 600");
  }
  std::string content;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) config_error("--password-file '" + path + "': " + std::strerror(errno));
    if (n == 0) break;
    content.append(buf, static_cast<std::size_t>(n));
    if (content.size() > 64 * 1024) config_error("--password-file '" + path + "' is too large for a password");
  }
  std::string password = content.substr(0, content.find('\n'));
  if (!password.empty() && password.back() == '\r') password.pop_back();
  if (password.empty()) config_error("--password-file '" + path + "' is empty");
  return password;
}

// A server whose ACL user has no password would silently be used as the default user: refuse it.
void check_credentials(const Credentials& c) {
  for (const auto& s : c.servers) {
    const auto& user = s.user ? s.user : c.user;
    const auto& password = s.password ? s.password : c.password;
    if (user && !password) {
      config_error("server " + s.redacted() + ": ACL user '" + printable(*user) +
                   "' without a password (give it in the URL, --password-file or REDLOCK_PASSWORD)");
    }
  }
}

constexpr const char* kDefaultServer = "redis://127.0.0.1:6379";

// What REDLOCK_PASSWORD_FD holds: a first line that says so, then "* PASSWORD" for servers whose
// URL has none and "ADDRESS PASSWORD" for a URL's own, each percent-encoded.
constexpr std::string_view kPasswordsHeader = "redlock-passwords 1";
constexpr std::size_t kMaxPasswords = 64 * 1024;

// The passwords of an enclosing `run`, from its REDLOCK_PASSWORD_FD.
struct InheritedPasswords {
  std::optional<std::string> fallback;
  std::map<std::string, std::string> by_address;  // by ServerUrl::address()
  std::string problem;                            // why REDLOCK_PASSWORD_FD could not be read
};

void parse_passwords(const std::string& text, InheritedPasswords& out) {
  std::size_t start = 0;
  bool first = true;
  while (start < text.size()) {
    std::size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    if (first) {
      if (line != kPasswordsHeader) config_error("not what redlock run writes there");
      first = false;
      continue;
    }
    auto space = line.find(' ');
    if (space == std::string_view::npos) config_error("a malformed line");
    std::string password = percent_decode(line.substr(space + 1), "password");
    if (line.substr(0, space) == "*") {
      out.fallback = std::move(password);
    } else {
      out.by_address[percent_decode(line.substr(0, space), "address")] = std::move(password);
    }
  }
  if (first) config_error("empty");
}

// Only a sealed memfd is read: any other descriptor that happens to have the number (a file the
// command opened) is never sent to a server as a password.
InheritedPasswords read_inherited_passwords() {
  InheritedPasswords out;
  auto value = env("REDLOCK_PASSWORD_FD");
  if (!value || value->empty()) return out;
  const std::string name = "REDLOCK_PASSWORD_FD=" + printable(*value);
  int fd = -1;
  auto res = std::from_chars(value->data(), value->data() + value->size(), fd);
  constexpr int kSealed = F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK;
  int seals = res.ec == std::errc() && res.ptr == value->data() + value->size() && fd > 2 ? fcntl(fd, F_GET_SEALS) : -2;
  struct stat st {};
  if (seals == -1 && errno == EBADF) {
    out.problem = name + ": that descriptor is closed";
  } else if (seals < 0 || (seals & kSealed) != kSealed || fstat(fd, &st) != 0 ||
             static_cast<std::size_t>(st.st_size) > kMaxPasswords) {
    out.problem = name + ": not the descriptor that redlock run passes on";
  }
  if (!out.problem.empty()) return out;
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    ssize_t n = pread(fd, text.data() + got, text.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  // A `run` of ours passes on a descriptor of its own, never this one.
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  try {
    if (got != text.size()) config_error("short read");
    parse_passwords(text, out);
  } catch (const Error& e) {
    out = InheritedPasswords{};
    out.problem = name + ": " + e.what();
  }
  return out;
}

const InheritedPasswords& inherited_passwords() {
  static const InheritedPasswords read = read_inherited_passwords();
  return read;
}

// The password for servers whose URL names none (see Credentials).
std::optional<std::string> fallback_password(const GlobalOptions& options) {
  if (!options.password_file.empty()) return read_password_file(options.password_file);
  if (auto p = env("REDLOCK_PASSWORD"); p && !p->empty()) return p;
  if (const auto& inherited = inherited_passwords(); inherited.fallback) return inherited.fallback;
  const auto& from_file = options.config.password;
  if (from_file && !from_file->empty()) return from_file;
  return std::nullopt;
}

}  // namespace

std::set<std::string> option_variables(const CLI::App& app) {
  std::set<std::string> out{"REDLOCK_SERVERS", "REDLOCK_PASSWORD"};
  for (const CLI::Option* option : app.get_options()) {
    if (!option->get_envname().empty()) out.insert(option->get_envname());
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    auto more = option_variables(*sub);
    out.insert(more.begin(), more.end());
  }
  return out;
}

void setup_global_options(CLI::App& app, GlobalOptions& o) {
  // One value per -S (repeatable), so that `status -S URL NAME` leaves NAME alone.
  app.add_option("-S,--servers", o.servers,
                 "Redis masters, URL[,URL...] (repeatable; else REDLOCK_SERVERS, else the configuration file)")
      ->type_name("URL[,URL...]")
      ->type_size(1)
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--timeout", o.timeout, "deadline for one request to one server, connect included")
      ->type_name("DUR")
      ->envname("REDLOCK_TIMEOUT")
      ->capture_default_str();
  app.add_option("--password-file", o.password_file, "read the password from FILE (mode 600)")
      ->type_name("FILE")
      ->envname("REDLOCK_PASSWORD_FILE");
  app.add_option("--user", o.user, "ACL user for servers whose URL names none")->envname("REDLOCK_USER");
  app.add_option("--tls-ca", o.tls_ca, "CA certificates for rediss:// (default: the system store)")
      ->type_name("FILE")
      ->envname("REDLOCK_TLS_CA");
  app.add_option("--tls-cert", o.tls_cert, "client certificate for rediss://")
      ->type_name("FILE")
      ->envname("REDLOCK_TLS_CERT");
  app.add_option("--tls-key", o.tls_key, "client key for rediss://")->type_name("FILE")->envname("REDLOCK_TLS_KEY");
  app.add_option("--tls-server-name", o.tls_server_name, "verify the server certificate against NAME")
      ->type_name("NAME")
      ->envname("REDLOCK_TLS_SERVER_NAME");
  app.add_flag("--tls-insecure", o.tls_insecure, "do not verify server certificates (warns)")
      ->envname("REDLOCK_TLS_INSECURE");
  app.add_flag("--json", o.json, "print exactly one JSON object on stdout")->envname("REDLOCK_JSON");
  app.add_flag("-v,--verbose", o.verbose, "diagnostics on stderr (repeat for more)")->envname("REDLOCK_VERBOSE");
  app.add_flag("-q,--quiet", o.quiet, "nothing on stderr but errors (and the --tls-insecure warning)")
      ->envname("REDLOCK_QUIET");
  app.add_option("--prefix", o.prefix, "prepended to NAME to form the Redis key")->envname("REDLOCK_PREFIX");
  app.footer(
      "Every Env: variable (and REDLOCK_SERVERS, REDLOCK_PASSWORD) may also be set in the configuration file, "
      "below the environment: $REDLOCK_CONFIG, else $XDG_CONFIG_HOME/redlock/config (~/.config/redlock/config), "
      "else /etc/redlock/config. See redlock(1).");
}

std::vector<ServerUrl> configured_servers(const GlobalOptions& options) {
  std::vector<std::string> texts;
  for (const auto& s : options.servers) {
    for (auto& t : split_server_list(s)) texts.push_back(std::move(t));
  }
  if (options.servers.empty()) {
    if (auto from_env = env("REDLOCK_SERVERS")) {
      texts = split_server_list(*from_env);
      if (texts.empty()) config_error("REDLOCK_SERVERS names no server");
    } else {
      texts.push_back(kDefaultServer);
    }
  }
  if (texts.empty()) config_error("--servers names no server");
  std::vector<ServerUrl> servers;
  servers.reserve(texts.size());
  for (const auto& t : texts) servers.push_back(parse_server_url(t));
  check_distinct_addresses(servers);
  return servers;
}

Duration request_timeout(const GlobalOptions& options) {
  return duration_option(options.timeout, "--timeout", false);
}

Credentials resolve_credentials(const GlobalOptions& options) {
  Credentials c;
  c.servers = configured_servers(options);
  if (!options.user.empty()) c.user = options.user;
  for (auto& s : c.servers) {
    const auto& by_address = inherited_passwords().by_address;
    if (auto it = by_address.find(s.address()); !s.password && it != by_address.end()) s.password = it->second;
  }
  c.password = fallback_password(options);
  check_credentials(c);
  return c;
}

namespace {

// Where the configuration file was looked for, for a message.
std::string config_files(const ConfigFile& config) {
  if (!config.path.empty()) return config.path;
  std::string out;
  for (const auto& path : config.looked_at) out += (out.empty() ? "" : " or ") + path;
  return out;
}

}  // namespace

std::unique_ptr<Transport> connect_servers(const GlobalOptions& options) {
  Credentials c = resolve_credentials(options);
  if (options.servers.empty() && !env("REDLOCK_SERVERS")) {
    // Each host alone on its own server excludes nothing across hosts: never without a word.
    warn(options, std::string("no servers configured (no --servers, no REDLOCK_SERVERS, ") +
                      (options.config.path.empty() ? "no configuration file " : "none in ") +
                      config_files(options.config) + "); using " + kDefaultServer);
  }
  TransportOptions t;
  t.timeout = request_timeout(options);
  t.user = std::move(c.user);
  t.password = std::move(c.password);
  t.tls = TlsOptions{options.tls_ca, options.tls_cert, options.tls_key, options.tls_server_name, options.tls_insecure};
  bool any_tls = false;
  for (const auto& s : c.servers) any_tls = any_tls || s.scheme == ServerUrl::Scheme::Tls;
  if (any_tls && options.tls_insecure) {
    // Every time, -q or not: a connection anyone on the path can take over is never quiet.
    std::fputs(
        "redlock: warning: --tls-insecure: server certificates are not verified; anyone on the path can pose "
        "as the servers\n",
        stderr);
  }
  return std::make_unique<Transport>(std::move(c.servers), std::move(t));
}

Fd password_descriptor(const Credentials& credentials) {
  std::string text = std::string(kPasswordsHeader) + "\n";
  const std::size_t empty = text.size();
  if (credentials.password) text += "* " + percent_encode(*credentials.password) + "\n";
  for (const auto& s : credentials.servers) {
    if (s.password) text += percent_encode(s.address()) + " " + percent_encode(*s.password) + "\n";
  }
  if (text.size() == empty) return Fd();
  // Not close-on-exec: the child inherits it. Sealed: nobody can change what it holds.
  Fd fd(memfd_create("redlock-passwords", MFD_ALLOW_SEALING));
  bool ok = fd && ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK) == 0;
  if (!ok)
    throw Error(ErrorKind::Internal, std::string("passing the password on to the command: ") + std::strerror(errno));
  return fd;
}

namespace {

std::string origin(const GlobalOptions& o, std::initializer_list<std::string_view> flags, const char* variable) {
  if (given_on_command_line(o, flags)) return "the command line";
  if (o.config.applied.count(variable)) return "the configuration file " + o.config.where(variable);
  if (std::getenv(variable)) return std::string("the environment (") + variable + ")";
  return "the default";
}

std::string password_origin(const GlobalOptions& o) {
  std::size_t own = 0;
  std::size_t inherited = 0;
  const auto servers = configured_servers(o);
  for (const auto& s : servers) {
    if (s.password) {
      ++own;
    } else if (inherited_passwords().by_address.count(s.address())) {
      ++inherited;
    }
  }
  std::string out;
  if (own) out += "from the URL for " + servers_text(own, servers.size()) + ", ";
  if (inherited) {
    out += "from the enclosing run's URL (REDLOCK_PASSWORD_FD) for " + servers_text(inherited, servers.size()) + ", ";
  }
  if (own + inherited == servers.size()) return out.substr(0, out.size() - 2);
  out += own + inherited ? "else " : "";
  if (!o.password_file.empty()) {
    out += "from --password-file '" + printable(o.password_file) + "', from " +
           origin(o, {"--password-file"}, "REDLOCK_PASSWORD_FILE");
  } else if (auto p = env("REDLOCK_PASSWORD"); p && !p->empty()) {
    out += "from the environment (REDLOCK_PASSWORD)";
  } else if (inherited_passwords().fallback) {
    out += "from the enclosing run (REDLOCK_PASSWORD_FD)";
  } else if (o.config.password && !o.config.password->empty()) {
    out += "from the configuration file " + o.config.where("REDLOCK_PASSWORD");
  } else {
    out += inherited_passwords().problem.empty() ? "none" : "none (" + inherited_passwords().problem + ")";
  }
  return out;
}

}  // namespace

std::vector<std::string> setting_origins(const GlobalOptions& o) {
  std::string servers;
  for (const auto& s : configured_servers(o)) servers += (servers.empty() ? "" : ",") + s.redacted();
  const std::string file = o.config.path.empty() ? "none (looked for " + config_files(o.config) + ")" : o.config.path;
  return {"configuration file: " + file,
          "servers: " + servers + ", from " + origin(o, {"-S", "--servers"}, "REDLOCK_SERVERS"),
          "password: " + password_origin(o),
          "user: " + (o.user.empty() ? "none" : "'" + printable(o.user) + "'") + ", from " +
              origin(o, {"--user"}, "REDLOCK_USER"),
          "timeout: " + printable(o.timeout) + ", from " + origin(o, {"--timeout"}, "REDLOCK_TIMEOUT"),
          "prefix: '" + printable(o.prefix) + "', from " + origin(o, {"--prefix"}, "REDLOCK_PREFIX")};
}

LockKeys lock_keys(const GlobalOptions& options, const std::string& name) {
  if (name.empty()) usage_error("NAME must not be empty");
  const std::string key = options.prefix + name;
  if (is_helper_key(key)) {
    usage_error("NAME '" + printable(name) + "' ends as redlock's helper keys do (:redlock:fence, :redlock:owner, " +
                ":redlock:wake, :redlock:limit, :redlock:slot:N); another lock's owner record could overwrite it");
  }
  return derive_keys(key);
}

Duration duration_option(const std::string& text, const char* what, bool allow_zero) {
  Duration d = parse_duration(text, what);
  if (!allow_zero && d <= Duration::zero()) usage_error(std::string(what) + ": must be more than zero");
  return d;
}

Duration ttl_option(const std::string& text, const char* what) {
  Duration d = duration_option(text, what, false);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d);
  if (ms.count() < 1) usage_error(std::string(what) + ": must be at least 1ms");
  return ms;
}

std::string printable(const std::string& text) {
  constexpr std::size_t kMax = 80;
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < kMax; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  if (text.size() > kMax) out += "… (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string ttl_text(std::int64_t ttl_ms) {
  if (ttl_ms == -1) return "no expiry";
  if (ttl_ms < 0) return "-";
  return format_duration(std::chrono::milliseconds(ttl_ms));
}

std::string wall_time(std::int64_t unix_ms) {
  std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void warn(const GlobalOptions& options, const std::string& message) {
  if (!options.quiet) std::fprintf(stderr, "redlock: warning: %s\n", message.c_str());
}

void verbose(const GlobalOptions& options, int level, const std::string& message) {
  if (options.verbose >= level && !options.quiet) std::fprintf(stderr, "redlock: %s\n", message.c_str());
}

void verbose_servers(const GlobalOptions& options, const std::vector<ServerReport>& servers) {
  // -q or not: a replica in the list weakens every quorum without a sound.
  for (const auto& s : servers) {
    if (s.role == "replica") {
      std::fprintf(stderr, "redlock: warning: %s is a replica; it never counts as a vote\n", s.server.c_str());
    }
  }
  if (options.verbose < 2 || options.quiet) return;
  for (const auto& s : servers) {
    // A failure's error often begins with its name already ("connect: Connection refused").
    std::string line = s.server + ": ";
    if (s.error.empty()) {
      line += s.result_name();
    } else {
      line += s.error.starts_with(std::string(s.result_name()) + ":") ? s.error
                                                                      : std::string(s.result_name()) + ": " + s.error;
    }
    if (s.latency) {
      char ms[32];
      std::snprintf(ms, sizeof ms, " (%.2fms)", json_ms(*s.latency));
      line += ms;
    }
    if (!s.waited_for()) line += " (the outcome was known before its answer came)";
    verbose(options, 2, line);
  }
}

int report_error(Json* answer, int code, const std::string& line) {
  std::fprintf(stderr, "redlock: error: %s\n", line.c_str());
  if (answer) (*answer)["error"] = {{"code", code}, {"message", line}};
  return code;
}

int no_quorum(Json* answer, const std::string& name, const std::string& what) {
  // Servers that ask for a password answer NOAUTH when the enclosing run's did not come through.
  std::string why;
  if (const std::string& lost = inherited_passwords().problem; !lost.empty()) {
    why = " (" + lost + ": the enclosing run's password did not reach this command, so servers may answer NOAUTH; " +
          "use --password-file)";
  }
  return report_error(answer, exit_code::kNoQuorum, printable(name) + ": " + what + why);
}

Json json_head(const std::string& command, const std::string& name, const std::string& key) {
  Json j;
  j["version"] = 1;
  j["command"] = command;
  j["name"] = name;
  j["key"] = key;
  return j;
}

double json_ms(Duration d) {
  // In whole microseconds, by integer rounding: nothing here needs libm.
  return static_cast<double>(std::chrono::round<std::chrono::microseconds>(d).count()) / 1000.0;
}

Json json_servers(const std::vector<ServerReport>& servers) {
  auto list = Json::array();
  for (const auto& s : servers) {
    Json j;
    j["server"] = s.server;
    j["ok"] = s.waited_for() ? Json(s.ok) : Json(nullptr);  // not waited for: neither success nor failure
    j["result"] = s.result_name();
    j["latency_ms"] = s.latency ? Json(json_ms(*s.latency)) : Json(nullptr);
    j["error"] = s.error.empty() ? Json(nullptr) : Json(s.error);
    j["role"] = s.role.empty() ? Json(nullptr) : Json(s.role);
    list.push_back(std::move(j));
  }
  return list;
}

std::string votes_text(const Tally& tally) {
  const std::string unheard = not_waited_text(tally);
  return servers_text(tally.yes, tally.total) + (unheard.empty() ? "" : " (" + unheard + ")");
}

Json json_quorum(const Tally& tally) {
  return {{"needed", tally.needed()}, {"ok", tally.yes}, {"total", tally.total}};
}

namespace {

// A new file beside PATH that nobody can have planted (O_EXCL, O_NOFOLLOW), mode 0600; -1 on failure.
int create_beside(const std::string& path, std::string& tmp) {
  tmp = path + ".tmp." + std::to_string(getpid()) + "." + make_token().substr(0, 12);
  return ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

}  // namespace

void require_private_file(const std::string& path, const std::string& option) {
  if (path.empty()) return;
  int err = 0;
  struct stat st {};
  std::string tmp;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    err = EISDIR;
  } else if (int fd = create_beside(path, tmp); fd < 0) {
    err = errno;
  } else {
    ::close(fd);
    ::unlink(tmp.c_str());
  }
  if (err) config_error(option + " '" + printable(path) + "': " + std::strerror(err));
}

int write_private_file(const std::string& path, const std::string& content) {
  std::string tmp;
  int fd = create_beside(path, tmp);
  if (fd < 0) return errno;
  bool ok =
      fchmod(fd, 0600) == 0 && ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  int err = ok ? 0 : errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) ::unlink(tmp.c_str());
  return err;
}

bool given_on_command_line(const GlobalOptions& options, std::initializer_list<std::string_view> names) {
  for (std::string_view word : options.words) {
    for (std::string_view name : names) {
      if (word == name) return true;
      if (word.size() <= name.size() || word.substr(0, name.size()) != name) continue;
      // "--wait=5s", or "-w5s" for a short one.
      if (name.size() == 2 || word[name.size()] == '=') return true;
    }
  }
  return false;
}

bool print_line(const std::string& line) {
  bool ok = std::fwrite(line.data(), 1, line.size(), stdout) == line.size() && std::fputc('\n', stdout) != EOF;
  return std::fflush(stdout) == 0 && ok;
}

std::string json_text(const Json& object) {
  return object.dump(-1, ' ', false, Json::error_handler_t::replace);
}

bool print_json(const Json& object) {
  return print_line(json_text(object));
}

void refuse_empty_token(const GlobalOptions& global, const std::string& token) {
  if (token.empty() && given_on_command_line(global, {"--token"})) usage_error("--token: must not be empty");
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
  if (token.empty()) config_error("--token-file '" + printable(path) + "' holds no token");
  return token;
}

}  // namespace

std::string held_token(const GlobalOptions& global, const std::string& token, const std::string& token_file,
                       const std::string& key, bool inherit) {
  refuse_empty_token(global, token);
  const bool file_flag = given_on_command_line(global, {"--token-file"});
  if (given_on_command_line(global, {"--token"}) && file_flag) {
    usage_error("give either --token TOKEN or --token-file FILE, not both");
  }
  if (!token.empty() && !file_flag) return token;
  if (!token_file.empty()) return read_token_file(token_file);
  if (!token.empty()) return token;
  return inherit ? inherited_token(global, key).value_or("") : "";
}

std::optional<std::string> inherited_token(const GlobalOptions& options, const std::string& key) {
  const auto locks = enclosing_locks();
  if (locks.empty()) {
    auto token = env("REDLOCK_TOKEN");
    if (!token || token->empty()) return std::nullopt;
    return token;
  }
  if (auto* lock = find_enclosing(locks, key, servers_signature(configured_servers(options)))) return lock->token;
  return std::nullopt;
}

std::string default_owner() {
  std::string user;
  if (const passwd* pw = getpwuid(geteuid())) user = pw->pw_name;
  if (user.empty()) user = env("USER").value_or("uid" + std::to_string(geteuid()));
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string owner = user + "@" + host + ":" + std::to_string(getpid());
  // The job of a CI system, where one is recognised, says more than a runner's host name.
  for (const char* var : {"GITHUB_RUN_ID", "CI_JOB_ID", "BUILDKITE_JOB_ID", "CIRCLE_WORKFLOW_JOB_ID", "BUILD_TAG"}) {
    if (auto v = env(var); v && !v->empty()) {
      owner += std::string(" ") + var + "=" + *v;
      break;
    }
  }
  return owner;
}

}  // namespace redlock::cli
