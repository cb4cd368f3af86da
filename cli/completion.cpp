#include <cstdio>

#include "commands.hpp"
#include "completions.hpp"
#include "core/util/error.hpp"
#include "exit_codes.hpp"

namespace redlock::cli {

namespace {

// The scripts are the files in completions/, embedded at build time, so that what
// `redlock completion bash` prints is what `cmake --install` puts in the completion directories.
int print_completion(const std::string& shell, bool json) {
  // Said here rather than by CLI11, whose "SHELL: fish not in {bash,zsh}" reads like $SHELL.
  if (shell != "bash" && shell != "zsh") {
    usage_error("no completion script for '" + printable(shell) + "': there are scripts for bash and zsh");
  }
  // --json promises one JSON object on stdout: a script is none.
  if (json) usage_error("completion prints a shell script, not JSON: leave out --json");
  std::string_view script = shell == "zsh" ? kZshCompletion : kBashCompletion;
  std::fwrite(script.data(), 1, script.size(), stdout);
  return exit_code::kOk;  // main() checks that it was written
}

}  // namespace

void setup_completion(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto shell = std::make_shared<std::string>();
  Subcommand sub(app, "completion", "print the completion script for bash or zsh");
  sub.argument("SHELL", *shell, "bash or zsh", false, "bash|zsh");
  sub.on_parsed(
      [shell, &action, &global] { action = [shell, &global] { return print_completion(*shell, global.json); }; });
}

}  // namespace redlock::cli
