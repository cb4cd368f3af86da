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

std::optional<HelperKey> helper_of(const std::string& key) {
  static constexpr std::string_view kMarker = ":redlock:";
  const auto at = key.rfind(kMarker);
  if (at == std::string::npos) return std::nullopt;
  std::string word = key.substr(at + kMarker.size());
  if (word.empty() || word.find_first_not_of("abcdefghijklmnopqrstuvwxyz") != std::string::npos) return std::nullopt;
  std::string base = key.substr(0, at);
  if (base.size() >= 2 && base.front() == '{' && base.back() == '}') {
    std::string inner = base.substr(1, base.size() - 2);
    if (!has_hash_tag(inner)) return HelperKey{std::move(inner), std::move(word)};
  }
  if (has_hash_tag(base)) return HelperKey{std::move(base), std::move(word)};
  return std::nullopt;
}

}  // namespace redlock
