#include "servers.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "core/util/error.hpp"
#include "environment.hpp"
#include "output.hpp"

namespace redlock::cli {

namespace {

// The first line of PATH, refused when the file is readable by group or others (as ssh does with
// keys). The mode is checked on the descriptor that is read, so a file swapped in between cannot slip by.
std::string read_password_file(const std::string& path, const std::string& what = "--password-file") {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd) config_error(what + " '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) config_error(what + " '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) config_error(what + " '" + path + "' is not a regular file");
  if (st.st_mode & (S_IRGRP | S_IROTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    config_error(what + " '" + path + "' is readable by group or others (mode " + mode +
                 "); make it private with chmod 600");
  }
  std::string content;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) config_error(what + " '" + path + "': " + std::strerror(errno));
    if (n == 0) break;
    content.append(buf, static_cast<std::size_t>(n));
    if (content.size() > 64 * 1024) config_error(what + " '" + path + "' is too large for a password");
  }
  std::string password = content.substr(0, content.find('\n'));
  if (!password.empty() && password.back() == '\r') password.pop_back();
  if (password.empty()) config_error(what + " '" + path + "' is empty");
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
  auto value = environment_value("REDLOCK_PASSWORD_FD");
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
  refuse_empty(options, options.password_file, "--password-file");  // a script's unset variable
  if (!options.password_file.empty()) return read_password_file(options.password_file);
  if (auto p = environment_value(kPasswordVariable); p && !p->empty()) return p;
  if (const auto& inherited = inherited_passwords(); inherited.fallback) return inherited.fallback;
  const auto& from_file = options.config.password;
  if (from_file && !from_file->empty()) return from_file;
  return std::nullopt;
}

}  // namespace

std::vector<ServerUrl> configured_servers(const GlobalOptions& options) {
  std::vector<std::string> texts;
  for (const auto& s : options.servers) {
    for (auto& t : split_server_list(s)) texts.push_back(std::move(t));
  }
  if (options.servers.empty()) {
    if (auto from_env = environment_value(kServersVariable)) {
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

Credentials resolve_credentials(const GlobalOptions& options) {
  Credentials c;
  c.servers = configured_servers(options);
  if (!options.user.empty()) c.user = options.user;
  for (auto& s : c.servers) {
    const auto& by_address = inherited_passwords().by_address;
    // An address is written out only where an enclosing run handed passwords on.
    const auto it = s.password || by_address.empty() ? by_address.end() : by_address.find(s.address());
    if (it != by_address.end()) s.password = it->second;
    if (s.sentinel_password_file)
      s.sentinel_password = read_password_file(*s.sentinel_password_file, "sentinel_password_file");
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

std::optional<int> member_wait(const GlobalOptions& options) {
  refuse_empty(options, options.member_wait, "--member-wait");
  if (options.member_wait.empty()) return std::nullopt;
  int n = -1;
  const auto& text = options.member_wait;
  auto res = std::from_chars(text.data(), text.data() + text.size(), n);
  if (res.ec != std::errc() || res.ptr != text.data() + text.size() || n < 0 || n > 1000) {
    usage_error("--member-wait: '" + printable(text) + "' is not a number of replicas (0 to 1000)");
  }
  return n;
}

std::unique_ptr<Transport> connect_servers(const GlobalOptions& options) {
  Credentials c = resolve_credentials(options);
  if (options.servers.empty() && !environment_value(kServersVariable)) {
    // Each host alone on its own server excludes nothing across hosts: never without a word.
    warn(options, std::string("no servers configured (no --servers, no REDLOCK_SERVERS, ") +
                      (options.config.path.empty() ? "no configuration file " : "none in ") +
                      config_files(options.config) + "); using " + kDefaultServer);
  }
  TransportOptions t;
  t.timeout = request_timeout(options);
  t.member_wait = member_wait(options);
  t.user = std::move(c.user);
  t.password = std::move(c.password);
  t.tls = TlsOptions{options.tls_ca, options.tls_cert, options.tls_key, options.tls_server_name, options.tls_insecure};
  bool any_tls = false;
  for (const auto& s : c.servers) any_tls = any_tls || s.uses_tls();
  if (any_tls && options.tls_insecure) {
    // Every time, unless -q (nothing on stderr but errors).
    warn(options, "--tls-insecure: server certificates are not verified; anyone on the path can pose as the servers");
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
  if (environment_variable(variable)) return std::string("the environment (") + variable + ")";
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
  } else if (auto p = environment_value(kPasswordVariable); p && !p->empty()) {
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

const std::string& inherited_password_problem() {
  return inherited_passwords().problem;
}

}  // namespace redlock::cli
