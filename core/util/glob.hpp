// Glob patterns as Redis reads them (KEYS, SCAN MATCH): '*', '?', '[abc]', '[^a-z]' and '\' to
// take the next character as it is. Bytes, not characters: binary-safe.
#pragma once

#include <string>
#include <string_view>

namespace redlock {

bool glob_match(std::string_view pattern, std::string_view text);

// TEXT with every character that is special in a glob escaped, so that it matches only itself.
std::string glob_escape(std::string_view text);

}  // namespace redlock
