#include "commands.hpp"

namespace redlock::cli {

void setup_doctor(CLI::App&, const GlobalOptions&, Action&) {}

}  // namespace redlock::cli
