#include "common.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "duration.hpp"
#include "error.hpp"
#include "exit_codes.hpp"
#include "fd.hpp"
#include "token.hpp"

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
void check_credentials(const std::vector<ServerUrl>& servers, const TransportOptions& t) {
  for (const auto& s : servers) {
    const auto& user = s.user ? s.user : t.user;
    const auto& password = s.password ? s.password : t.password;
    if (user && !password) {
      config_error("server " + s.redacted() + ": ACL user '" + printable(*user) +
                   "' without a password (give it in the URL, --password-file or REDLOCK_PASSWORD)");
    }
  }
}

}  // namespace

void setup_global_options(CLI::App& app, GlobalOptions& o) {
  // One value per -S (repeatable), so that `status -S URL NAME` leaves NAME alone.
  app.add_option("-S,--servers", o.servers, "Redis masters, URL[,URL...] (repeatable; else REDLOCK_SERVERS)")
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
      texts.push_back("redis://127.0.0.1:6379");
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

std::unique_ptr<Transport> connect_servers(const GlobalOptions& options) {
  std::vector<ServerUrl> servers = configured_servers(options);
  TransportOptions t;
  t.timeout = request_timeout(options);
  if (!options.user.empty()) t.user = options.user;
  if (!options.password_file.empty()) {
    t.password = read_password_file(options.password_file);
  } else if (auto p = env("REDLOCK_PASSWORD"); p && !p->empty()) {
    t.password = *p;
  }
  check_credentials(servers, t);
  t.tls = TlsOptions{options.tls_ca, options.tls_cert, options.tls_key, options.tls_server_name, options.tls_insecure};
  bool any_tls = false;
  for (const auto& s : servers) any_tls = any_tls || s.scheme == ServerUrl::Scheme::Tls;
  if (any_tls && options.tls_insecure) {
    // Every time, -q or not: a connection anyone on the path can take over is never quiet.
    std::fputs(
        "redlock: warning: --tls-insecure: server certificates are not verified; anyone on the path can pose "
        "as the servers\n",
        stderr);
  }
  return std::make_unique<Transport>(std::move(servers), std::move(t));
}

LockKeys lock_keys(const GlobalOptions& options, const std::string& name) {
  if (name.empty()) usage_error("NAME must not be empty");
  const std::string key = options.prefix + name;
  if (is_helper_key(key)) {
    usage_error("NAME '" + printable(name) + "' ends as redlock's helper keys do (:redlock:fence, :redlock:owner, " +
                ":redlock:wake); another lock's owner record could overwrite it");
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
      line += s.result;
    } else {
      line += s.error.rfind(s.result + ":", 0) == 0 ? s.error : s.result + ": " + s.error;
    }
    if (s.latency) {
      char ms[32];
      std::snprintf(ms, sizeof ms, " (%.2fms)", json_ms(*s.latency));
      line += ms;
    }
    if (s.result == "unknown") line += " (no answer when the outcome was decided)";
    verbose(options, 2, line);
  }
}

int report_error(Json* answer, int code, const std::string& line) {
  std::fprintf(stderr, "redlock: error: %s\n", line.c_str());
  if (answer) (*answer)["error"] = {{"code", code}, {"message", line}};
  return code;
}

int no_quorum(Json* answer, const std::string& name, const std::string& what) {
  return report_error(answer, exit_code::kNoQuorum, printable(name) + ": " + what);
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
    j["ok"] = s.ok;
    j["result"] = s.result;
    j["latency_ms"] = s.latency ? Json(json_ms(*s.latency)) : Json(nullptr);
    j["error"] = s.error.empty() ? Json(nullptr) : Json(s.error);
    j["role"] = s.role.empty() ? Json(nullptr) : Json(s.role);
    list.push_back(std::move(j));
  }
  return list;
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

std::optional<std::string> inherited_token() {
  auto token = env("REDLOCK_TOKEN");
  if (!token || token->empty()) return std::nullopt;
  return token;
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
