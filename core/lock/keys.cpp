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

// With a tag, appending keeps the tag; without one, bracing the whole key makes it the tag, and
// "{KEY}" hashes exactly as "KEY" does.
std::string helper_base(const std::string& key) {
  return has_hash_tag(key) ? key : "{" + key + "}";
}

bool ends_with(std::string_view text, std::string_view tail) {
  return text.size() >= tail.size() && text.substr(text.size() - tail.size()) == tail;
}

constexpr std::string_view kSlotInfix = ":redlock:slot:";

}  // namespace

LockKeys derive_keys(const std::string& key) {
  const std::string base = helper_base(key);
  return LockKeys{key, base + ":redlock:fence", base + ":redlock:owner", base + ":redlock:wake"};
}

SemaphoreKeys derive_semaphore_keys(const std::string& key, std::size_t limit) {
  const std::string base = helper_base(key);
  SemaphoreKeys keys{key, derive_keys(key).channel, base + ":redlock:limit", {}};
  for (std::size_t i = 0; i < limit; ++i) {
    // The slot key has the tag already, so its own helper keys share it.
    LockKeys slot = derive_keys(base + std::string(kSlotInfix) + std::to_string(i));
    slot.channel = keys.channel;
    keys.slots.push_back(std::move(slot));
  }
  return keys;
}

bool is_helper_key(const std::string& key) {
  for (const char* suffix : {":redlock:fence", ":redlock:owner", ":redlock:wake", ":redlock:limit"}) {
    if (ends_with(key, suffix)) return true;
  }
  const auto digits = key.find_last_not_of("0123456789");
  return digits != std::string::npos && digits + 1 < key.size() &&
         ends_with(std::string_view(key).substr(0, digits + 1), kSlotInfix);
}

}  // namespace redlock
