// redlock: a distributed lock for shell scripts, over N independent Redis masters.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "commands.hpp"
#include "error.hpp"
#include "exit_codes.hpp"

using namespace redlock;
using namespace redlock::cli;

namespace {

// Whether the command line (or REDLOCK_JSON) asks for JSON, known even when parsing fails.
bool wants_json(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) break;
    if (std::strcmp(argv[i], "--json") == 0) return true;
  }
  const char* env = std::getenv("REDLOCK_JSON");
  return env && *env && std::strcmp(env, "0") != 0 && std::strcmp(env, "false") != 0;
}

// The first word that is neither an option nor an option's value: what was meant as a command.
std::string first_word(int argc, char** argv) {
  static const char* const kTakesValue[] = {"-S", "--servers", "--timeout", "--password-file", "--user", "--tls-ca",
                                            "--tls-cert", "--tls-key", "--tls-server-name", "--prefix"};
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") return {};
    if (a.empty() || a[0] != '-') return std::string(a);
    for (const char* opt : kTakesValue) {
      if (a == opt) ++i;
    }
  }
  return {};
}

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

int fail(bool json, const std::string& command, int code, const std::string& message) {
  std::string line = one_line(message);
  std::fprintf(stderr, "redlock: error: %s\n", line.c_str());
  if (json) {
    Json j;
    j["version"] = 1;
    j["command"] = command.empty() ? Json(nullptr) : Json(command);
    j["error"] = {{"code", code}, {"message", line}};
    print_json(j);
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  GlobalOptions global;
  Action action;
  CLI::App app{"redlock: a distributed lock for shell scripts, over N independent Redis masters", "redlock"};
  app.set_version_flag("-V,--version", "redlock " REDLOCK_VERSION);
  app.require_subcommand(1, 1);
  app.fallthrough();
  setup_global_options(app, global);
  setup_acquire(app, global, action);
  setup_extend(app, global, action);
  setup_release(app, global, action);
  setup_status(app, global, action);
  setup_run(app, global, action);
  setup_doctor(app, global, action);
  setup_completion(app, global, action);

  const bool json = wants_json(argc, argv);
  std::string command;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    auto subs = app.get_subcommands();
    if (!subs.empty()) command = subs.front()->get_name();
    std::string word = first_word(argc, argv);
    if (subs.empty() && !word.empty()) {
      return fail(json, command, exit_code::kUsage,
                  "unknown command '" + word + "' (commands: acquire, extend, release, status, run, doctor, completion)");
    }
    return fail(json, command, exit_code::kUsage, std::string(e.what()) + " (see redlock --help)");
  }
  command = app.get_subcommands().front()->get_name();

  try {
    return action();
  } catch (const Error& e) {
    switch (e.kind()) {
      case ErrorKind::Usage: return fail(global.json, command, exit_code::kUsage, e.what());
      case ErrorKind::Config: return fail(global.json, command, exit_code::kConfig, e.what());
      case ErrorKind::Internal: return fail(global.json, command, exit_code::kInternal, e.what());
    }
  } catch (const std::exception& e) {
    return fail(global.json, command, exit_code::kInternal, std::string("internal error: ") + e.what());
  }
  return exit_code::kInternal;
}
