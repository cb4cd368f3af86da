// The configuration file: the first that exists of $REDLOCK_CONFIG, $XDG_CONFIG_HOME/redlock/config
// (~/.config/redlock/config) and /etc/redlock/config, in the form of a systemd EnvironmentFile=.
// Its settings count as REDLOCK_* variables of the environment would, below them: flag, then
// environment, then file, then default.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace redlock::cli {

struct ConfigFile {
  std::string path;                    // the file read; empty when there is none
  std::vector<std::string> looked_at;  // where it was looked for, in order
  std::map<std::string, int> lines;    // the line of each setting the file holds
  std::set<std::string> applied;       // those that went into the environment, where none was set
  // REDLOCK_PASSWORD of the file: kept out of the environment, so that no child inherits it.
  std::optional<std::string> password;

  // "PATH:LINE" of NAME's setting.
  std::string where(const std::string& name) const;
};

// Reads the configuration file. Each setting whose variable the environment does not hold is set
// there (all but REDLOCK_PASSWORD), so that the options read it as their REDLOCK_* variable.
// Configuration errors: a $REDLOCK_CONFIG that names no file, a file that cannot be read or is
// malformed, a name that KNOWN refuses (a REDLOCK_* variable that no option reads; asked only when
// there is a file), and a REDLOCK_PASSWORD in a file that group or others can read or write.
ConfigFile load_config_file(const std::function<bool(const std::string&)>& known);

}  // namespace redlock::cli
