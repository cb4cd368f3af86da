#include "config.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/util/env_file.hpp"
#include "core/util/error.hpp"
#include "core/util/fd.hpp"
#include "environment.hpp"

namespace redlock::cli {

namespace {

constexpr std::size_t kMaxSize = 1 << 20;

std::string nonempty_env(const char* name) {
  const char* v = environment_variable(name);
  return v ? v : "";
}

// Where the file is looked for; REDLOCK_CONFIG alone when it is set.
std::vector<std::string> candidates() {
  if (auto named = nonempty_env("REDLOCK_CONFIG"); !named.empty()) return {named};
  std::vector<std::string> out;
  if (auto xdg = nonempty_env("XDG_CONFIG_HOME"); !xdg.empty()) {
    out.push_back(xdg + "/redlock/config");
  } else if (auto home = nonempty_env("HOME"); !home.empty()) {
    out.push_back(home + "/.config/redlock/config");
  }
  out.push_back("/etc/redlock/config");
  return out;
}

std::string read_all(int fd, const std::string& path) {
  std::string text;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) config_error("configuration file '" + path + "': " + std::strerror(errno));
    if (n == 0) return text;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > kMaxSize) config_error("configuration file '" + path + "' is larger than 1 MiB");
  }
}

// A password is as private there as in --password-file, and no one else may put one in.
void check_private(const struct stat& st, const ConfigFile& config) {
  if (!(st.st_mode & (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH))) return;
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  config_error(config.where("REDLOCK_PASSWORD") +
               ": REDLOCK_PASSWORD in a file that group or others can read or write (mode " + mode +
               "); make it private with chmod 600, or name a --password-file there (REDLOCK_PASSWORD_FILE)");
}

}  // namespace

std::string ConfigFile::where(const std::string& name) const {
  auto it = lines.find(name);
  return path + (it == lines.end() ? "" : ":" + std::to_string(it->second));
}

ConfigFile load_config_file(const std::function<bool(const std::string&)>& known) {
  ConfigFile config;
  config.looked_at = candidates();
  const bool named = !nonempty_env("REDLOCK_CONFIG").empty();
  Fd fd;
  for (const auto& path : config.looked_at) {
    fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    if (fd) {
      config.path = path;
      break;
    }
    if (named || (errno != ENOENT && errno != ENOTDIR)) {
      config_error((named ? "REDLOCK_CONFIG: configuration file '" : "configuration file '") + path +
                   "': " + std::strerror(errno));
    }
  }
  if (!fd) return config;
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) config_error("configuration file '" + config.path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) config_error("configuration file '" + config.path + "' is not a regular file");
  const auto settings = parse_env_file(read_all(fd.get(), config.path), config.path);
  for (const auto& s : settings) {
    if (!known(s.name)) {
      config_error(config.path + ":" + std::to_string(s.line) + ": unknown setting " + s.name +
                   " (a REDLOCK_<OPTION> of one of redlock's long options, or REDLOCK_SERVERS or REDLOCK_PASSWORD)");
    }
    config.lines[s.name] = s.line;
  }
  if (config.lines.count("REDLOCK_PASSWORD")) check_private(st, config);
  for (const auto& s : settings) {
    if (s.name == "REDLOCK_PASSWORD") {
      config.password = s.value;
    } else if (!environment_variable(s.name) || config.applied.count(s.name)) {
      set_environment_variable(s.name, s.value);
      config.applied.insert(s.name);
    }
  }
  return config;
}

}  // namespace redlock::cli
