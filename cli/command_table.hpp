// The commands, one row each, in the order the help lists them: the name, what builds its options
// (setup_*, which binds them and sets the action), and its synopsis as the command-line contract
// writes it. Adding a command is adding a row.
#pragma once

#include <string_view>

#include "commands.hpp"

namespace redlock::cli {

struct CommandRow {
  std::string_view name;
  void (*setup)(CLI::App& app, const GlobalOptions& global, Action& action);
  std::string_view synopsis;  // after "redlock [GLOBAL OPTIONS] "; several separated by '\n'
};

inline constexpr CommandRow kCommandTable[] = {
    {"acquire", setup_acquire, "acquire NAME [OPTIONS]"},
    {"extend", setup_extend, "extend NAME --token TOKEN [--ttl DUR]"},
    {"release", setup_release, "release NAME (--token TOKEN | --force)"},
    {"status", setup_status, "status NAME"},
    {"run", setup_run, "run [OPTIONS] NAME [OPTIONS] [--] CMD [ARG...]\nrun [OPTIONS] NAME [OPTIONS] -c STR"},
    {"elect", setup_elect,
     "elect [OPTIONS] NAME [OPTIONS] [--] CMD [ARG...]\nelect [OPTIONS] NAME [OPTIONS] -c STR\nelect NAME --observe"},
    {"doctor", setup_doctor, "doctor [--ttl DUR]"},
    {"list", setup_list, "list [PATTERN]"},
    {"watch", setup_watch, "watch NAME [--until released|free]"},
    {"completion", setup_completion, "completion bash|zsh"},
};

}  // namespace redlock::cli
