#include "help.hpp"

#include <algorithm>
#include <iterator>
#include <string_view>
#include <vector>

#include "command_table.hpp"

namespace redlock::cli {

namespace {

// COMMAND's synopsis, a line each, added to LINES.
void add_synopsis(std::vector<std::string>& lines, std::string_view command) {
  for (const auto& row : kCommandTable) {
    if (row.name != command) continue;
    // completion reads no server: no global option applies to it.
    const std::string head = command == "completion" ? "redlock " : "redlock [GLOBAL OPTIONS] ";
    std::string_view text = row.synopsis;
    while (!text.empty()) {
      const auto end = std::min(text.find('\n'), text.size());
      lines.push_back(head + std::string(text.substr(0, end)));
      text.remove_prefix(std::min(end + 1, text.size()));
    }
  }
}

}  // namespace

std::string usage_text(const std::string& command) {
  std::vector<std::string> lines;
  if (!command.empty()) {
    add_synopsis(lines, command);
  } else {
    for (const auto& row : kCommandTable) add_synopsis(lines, row.name);
    lines.emplace_back("redlock help [COMMAND]");
  }
  std::string out;
  for (const auto& line : lines) out.append(out.empty() ? "Usage: " : "       ").append(line).append("\n");
  return out;
}

std::string command_list() {
  std::string out;
  for (const auto& row : kCommandTable) out.append(out.empty() ? "" : ", ").append(row.name);
  return out;
}

bool is_command(const std::string& word) {
  return std::any_of(std::begin(kCommandTable), std::end(kCommandTable),
                     [&](const CommandRow& row) { return row.name == word; });
}

}  // namespace redlock::cli
