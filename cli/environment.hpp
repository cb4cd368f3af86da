// The REDLOCK_* variables, read from the environment in one pass. Each getenv() is a walk over the
// whole environment, and a command asks after thirty or more REDLOCK_* names (one per option row,
// and those of an enclosing run) before it sends anything: with the forty variables of a usual
// login or CI job, those walks cost more than parsing the command line.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redlock::cli {

// The REDLOCK_* entries of one environment, as getenv() would read them: the first "NAME=VALUE"
// of a name wins, and an entry without '=' sets nothing.
class RedlockVariables {
 public:
  // ENVIRON: "NAME=VALUE" strings up to a null pointer, which must outlive this object.
  explicit RedlockVariables(const char* const* environ);

  // NAME's value; nullptr when it is not set (or NAME is no REDLOCK_* name).
  const char* find(std::string_view name) const;

 private:
  std::vector<std::pair<std::string_view, const char*>> entries_;
};

// NAME's value in this process's environment, std::getenv(NAME) as the code reads it: REDLOCK_*
// names from one scan of the environment (made when first asked), any other from getenv itself.
const char* environment_variable(std::string_view name);
// The same as a string, or nothing when NAME is not set.
std::optional<std::string> environment_value(std::string_view name);

// Sets NAME to VALUE in the environment (setenv) and in what environment_variable reads. REDLOCK_*
// variables are set through this alone.
void set_environment_variable(const std::string& name, const std::string& value);

}  // namespace redlock::cli
