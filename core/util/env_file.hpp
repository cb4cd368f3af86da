// The settings of a file in the form of a systemd EnvironmentFile=, so that one file serves cron,
// shells and units: NAME=VALUE lines, blank lines, comments ('#' or ';' first on the line), and
// values in double quotes (where \" \\ \$ and \` stand for the character) or single quotes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace redlock {

struct EnvSetting {
  std::string name;
  std::string value;
  int line = 0;  // from 1
};

// The settings of TEXT in file order (a name given twice is there twice: the last one counts).
// Throws a configuration error naming SOURCE:LINE for a line that is not of this form: no '=', a
// name that is no variable name, an unterminated quote (a value is one line).
std::vector<EnvSetting> parse_env_file(std::string_view text, const std::string& source);

}  // namespace redlock
