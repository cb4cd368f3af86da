#include "core/util/env_file.hpp"

#include <cctype>

#include "core/util/error.hpp"

namespace redlock {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

bool is_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// VALUE as systemd reads it: quotes removed, escapes applied, and the white space around it,
// outside quotes, dropped. Empty WHY when it is well formed.
std::string unquote(std::string_view value, std::string& why) {
  std::string out;
  std::size_t keep = 0;  // OUT's length up to its last quoted or escaped character
  char quote = 0;
  for (std::size_t i = 0; i < value.size(); ++i) {
    char c = value[i];
    if (quote == '\'') {
      if (c == '\'') {
        quote = 0;
      } else {
        out += c;
      }
      keep = out.size();
    } else if (quote == '"') {
      if (c == '\\' && i + 1 < value.size() &&
          std::string_view("\"\\$`").find(value[i + 1]) != std::string_view::npos) {
        out += value[++i];
      } else if (c == '"') {
        quote = 0;
      } else {
        out += c;
      }
      keep = out.size();
    } else if (c == '"' || c == '\'') {
      quote = c;
      keep = out.size();
    } else if (c == '\\' && i + 1 < value.size()) {
      out += value[++i];
      keep = out.size();
    } else if (c == '\\') {
      why = "a '\\' at the end of a line (a value is one line)";
      return out;
    } else {
      out += c;
      if (!is_space(c)) keep = out.size();
    }
  }
  if (quote)
    why = std::string("an unterminated ") + (quote == '"' ? "double" : "single") + " quote (a value is one line)";
  out.resize(keep);
  return out;
}

}  // namespace

std::vector<EnvSetting> parse_env_file(std::string_view text, const std::string& source) {
  std::vector<EnvSetting> out;
  int number = 0;
  while (!text.empty()) {
    auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++number;
    while (!line.empty() && is_space(line.front())) line.remove_prefix(1);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    const std::string where = source + ":" + std::to_string(number) + ": ";
    auto eq = line.find('=');
    if (eq == std::string_view::npos) config_error(where + "expected NAME=VALUE");
    std::string_view name = line.substr(0, eq);
    while (!name.empty() && is_space(name.back())) name.remove_suffix(1);
    if (!is_name(name)) config_error(where + "expected NAME=VALUE, where NAME is a variable name");
    std::string_view value = line.substr(eq + 1);
    while (!value.empty() && is_space(value.front())) value.remove_prefix(1);
    std::string why;
    std::string unquoted = unquote(value, why);
    if (!why.empty()) config_error(where + std::string(name) + ": " + why);
    out.push_back(EnvSetting{std::string(name), std::move(unquoted), number});
  }
  return out;
}

}  // namespace redlock
