#include "commands.hpp"

namespace redlock::cli {

void setup_completion(CLI::App&, const GlobalOptions&, Action&) {}

}  // namespace redlock::cli
