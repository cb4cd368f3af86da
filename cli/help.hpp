// What `--help` says: each command's synopsis as the command-line contract writes it, and, in a
// command's help, the global options that apply to it.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace redlock::cli {

// "acquire, extend, release, status, run, elect, doctor, list, watch, completion", for messages.
std::string command_list();
bool is_command(const std::string& word);

// Makes APP's help, and that of the subcommands added to it afterwards, show the synopses and
// the global options. Call before adding them.
void use_redlock_help(CLI::App& app);

}  // namespace redlock::cli
