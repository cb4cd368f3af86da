#include "output.hpp"

#include <cstdio>
#include <ctime>

#include "core/util/duration.hpp"
#include "exit_codes.hpp"
#include "servers.hpp"

namespace redlock::cli {

namespace {

// TEXT with its control characters escaped ("\n", "\t", "\x1b"), cut after MAX bytes.
std::string escaped(const std::string& text, std::size_t max) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < max; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

}  // namespace

std::string printable(const std::string& text) {
  constexpr std::size_t kMax = 80;
  std::string out = escaped(text, kMax);
  if (text.size() > kMax) out += "… (" + std::to_string(text.size()) + " bytes)";
  return out;
}

namespace {

// The one place a line reaches stderr.
// One line, whatever the message holds: a control character of a URL, a server's error or a
// file's content is shown escaped, never sent to the terminal.
void write_stderr(const std::string& line) {
  std::fprintf(stderr, "redlock: %s\n", escaped(line, std::string::npos).c_str());
}

}  // namespace

std::string ttl_text(std::int64_t ttl_ms) {
  if (ttl_ms == -1) return "no expiry";
  if (ttl_ms < 0) return "-";
  return format_duration(Millis(ttl_ms));
}

std::string wall_time(std::int64_t unix_ms) {
  std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void warn(const GlobalOptions& options, const std::string& message) {
  if (!options.quiet) write_stderr("warning: " + message);
}

void verbose(const GlobalOptions& options, int level, const std::string& message) {
  if (options.verbose >= level && !options.quiet) write_stderr(message);
}

void say(const GlobalOptions& options, const std::string& name, const std::string& what) {
  if (!options.json && !options.quiet) write_stderr(printable(name) + ": " + what);
}

void verbose_servers(const GlobalOptions& options, const std::vector<ServerReport>& servers) {
  // A replica in the list weakens every quorum: said unless -q (nothing but errors), and in JSON
  // by its role.
  for (const auto& s : servers) {
    if (s.role == "replica") warn(options, s.server + " is a replica; it never counts as a vote");
  }
  if (options.verbose < 2 || options.quiet) return;
  for (const auto& s : servers) {
    // A failure's error often begins with its name already ("connect: Connection refused").
    std::string line = s.server + ": ";
    if (s.error.empty()) {
      line += s.result_name();
    } else {
      const std::string result(s.result_name());
      line += s.error.starts_with(result + ":") ? s.error : result + ": " + s.error;
    }
    if (s.latency) {
      char ms[32];
      std::snprintf(ms, sizeof ms, " (%.2fms)", json_ms(*s.latency));
      line += ms;
    }
    if (!s.waited_for()) line += " (the outcome was known before its answer came)";
    verbose(options, 2, line);
  }
}

Json error_json(int code, const std::string& message) {
  return {{"code", code}, {"message", message}};
}

int report_error(Json* answer, int code, const std::string& line) {
  write_stderr("error: " + line);
  if (answer) (*answer)["error"] = error_json(code, line);
  return code;
}

int no_quorum(Json* answer, const std::string& name, const std::string& what) {
  // Servers that ask for a password answer NOAUTH when the enclosing run's did not come through.
  std::string why;
  if (const std::string& lost = inherited_password_problem(); !lost.empty()) {
    why = " (" + lost + ": the enclosing run's password did not reach this command, so servers may answer NOAUTH; " +
          "use --password-file)";
  }
  if (answer) (*answer)["reason"] = "no_quorum";
  return report_error(answer, exit_code::kNoQuorum, printable(name) + ": " + what + why);
}

void json_no_single_holder(Json& status) {
  for (const char* field : {"token", "ttl_ms", "owner", "since"}) status[field] = nullptr;
  status["queue"] = Json::array();
}

Json json_head(const std::string& command, const std::string& name, const std::string& key) {
  Json j;
  j["version"] = 1;
  j["command"] = command;
  j["name"] = name;
  j["key"] = key;
  return j;
}

double json_ms(Duration d) {
  // In whole microseconds, by integer rounding: nothing here needs libm.
  return static_cast<double>(std::chrono::round<std::chrono::microseconds>(d).count()) / 1000.0;
}

Json json_servers(const std::vector<ServerReport>& servers) {
  auto list = Json::array();
  for (const auto& s : servers) {
    Json j;
    j["server"] = s.server;
    j["member"] = s.server;
    j["resolved"] = s.resolved.empty() ? Json(nullptr) : Json(s.resolved);
    j["ok"] = s.waited_for() ? Json(s.ok) : Json(nullptr);  // not waited for: neither success nor failure
    j["result"] = s.result_name();
    j["latency_ms"] = s.latency ? Json(json_ms(*s.latency)) : Json(nullptr);
    j["error"] = s.error.empty() ? Json(nullptr) : Json(s.error);
    j["role"] = s.role.empty() ? Json(nullptr) : Json(s.role);
    list.push_back(std::move(j));
  }
  return list;
}

std::string unanswered_text(const Tally& tally, const std::vector<ServerReport>& servers) {
  std::string text = "no quorum: only " + servers_text(tally.yes, tally.total) + " answered";
  for (const auto& s : servers) {
    if (!s.error.empty()) return text + "; first failure: " + s.server + ": " + s.error;
  }
  return text;
}

std::string votes_text(const Tally& tally) {
  const std::string unheard = not_waited_text(tally);
  return servers_text(tally.yes, tally.total) + (unheard.empty() ? "" : " (" + unheard + ")");
}

Json json_quorum(const Tally& tally) {
  return {{"needed", tally.needed()}, {"ok", tally.yes}, {"total", tally.total}};
}

bool print_line(const std::string& line) {
  bool ok = std::fwrite(line.data(), 1, line.size(), stdout) == line.size() && std::fputc('\n', stdout) != EOF;
  return std::fflush(stdout) == 0 && ok;
}

std::string json_text(const Json& object) {
  return object.dump(-1, ' ', false, Json::error_handler_t::replace);
}

bool print_json(const Json& object) {
  return print_line(json_text(object));
}

}  // namespace redlock::cli
