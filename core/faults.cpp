#include "faults.hpp"

#ifdef REDLOCK_FAULTS
#include <cstdlib>
#include <string>

namespace redlock::faults {

bool enabled(std::string_view name) {
  static const std::string chosen = [] {
    const char* v = std::getenv("REDLOCK_FAULT");
    return std::string(",") + (v ? v : "") + ",";
  }();
  return chosen.find("," + std::string(name) + ",") != std::string::npos;
}

}  // namespace redlock::faults
#endif
