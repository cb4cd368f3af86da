#include "core/lock/faults.hpp"

#ifdef REDLOCK_FAULTS
#include <cstdlib>
#include <string>
#endif

namespace redlock::faults {

#ifdef REDLOCK_FAULTS
bool enabled(std::string_view name) {
  static const std::string chosen = [] {
    const char* v = std::getenv("REDLOCK_FAULT");
    return std::string(",") + (v ? v : "") + ",";
  }();
  return chosen.find("," + std::string(name) + ",") != std::string::npos;
}
#else
bool enabled(std::string_view) {
  return false;
}
#endif

}  // namespace redlock::faults
