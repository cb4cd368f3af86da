#include "environment.hpp"

#include <cstdlib>
#include <cstring>
#include <optional>

extern char** environ;

namespace redlock::cli {

namespace {

constexpr std::string_view kPrefix = "REDLOCK_";

// The scan of this process's environment; reset when a variable is set.
std::optional<RedlockVariables>& scanned() {
  static std::optional<RedlockVariables> variables;
  return variables;
}

}  // namespace

RedlockVariables::RedlockVariables(const char* const* env) {
  for (const char* const* e = env; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, kPrefix.data(), kPrefix.size()) != 0) continue;
    const char* eq = std::strchr(*e, '=');
    if (eq == nullptr) continue;
    const std::string_view name(*e, static_cast<std::size_t>(eq - *e));
    if (find(name) == nullptr) entries_.emplace_back(name, eq + 1);
  }
}

const char* RedlockVariables::find(std::string_view name) const {
  for (const auto& [n, value] : entries_) {
    if (n == name) return value;
  }
  return nullptr;
}

const char* environment_variable(std::string_view name) {
  if (!name.starts_with(kPrefix)) return std::getenv(std::string(name).c_str());
  auto& variables = scanned();
  if (!variables) variables.emplace(environ);
  return variables->find(name);
}

std::optional<std::string> environment_value(std::string_view name) {
  const char* v = environment_variable(name);
  if (!v) return std::nullopt;
  return std::string(v);
}

void set_environment_variable(const std::string& name, const std::string& value) {
  ::setenv(name.c_str(), value.c_str(), 1);
  scanned().reset();
}

}  // namespace redlock::cli
