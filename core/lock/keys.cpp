#include "core/lock/keys.hpp"

#include <string_view>

namespace redlock {

namespace {

// True when KEY holds a Redis Cluster hash tag: a '{' followed later by a '}' with something between.
bool has_hash_tag(const std::string& key) {
  auto open = key.find('{');
  if (open == std::string::npos) return false;
  auto close = key.find('}', open + 1);
  return close != std::string::npos && close > open + 1;
}

}  // namespace

LockKeys derive_keys(const std::string& key) {
  // With a tag, appending keeps the tag; without one, bracing the whole key makes it the tag,
  // and "{KEY}" hashes exactly as "KEY" does.
  std::string base = has_hash_tag(key) ? key : "{" + key + "}";
  return LockKeys{key, base + ":redlock:fence", base + ":redlock:owner", base + ":redlock:wake"};
}

bool is_helper_key(const std::string& key) {
  for (const char* suffix : {":redlock:fence", ":redlock:owner", ":redlock:wake"}) {
    const std::string_view tail(suffix);
    if (key.size() >= tail.size() && key.compare(key.size() - tail.size(), tail.size(), tail) == 0) return true;
  }
  return false;
}

}  // namespace redlock
