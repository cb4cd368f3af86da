#include "keys.hpp"

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

}  // namespace redlock
