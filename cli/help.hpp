// What `--help` says: each command's synopsis as the command-line contract writes it, and, in a
// command's help, the global options that apply to it.
#pragma once

#include <string>

namespace redlock::cli {

// "acquire, extend, release, status, run, elect, doctor, list, watch, completion", for messages.
std::string command_list();
bool is_command(const std::string& word);

// The "Usage:" lines of COMMAND's help, its synopses as the contract writes them; of every
// command's (and "redlock help [COMMAND]") when COMMAND is empty. CLI11's formatter that shows them
// is use_redlock_help (option_table.hpp).
std::string usage_text(const std::string& command);

}  // namespace redlock::cli
