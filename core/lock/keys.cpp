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
  return LockKeys{key,
                  base + ":redlock:fence",
                  base + ":redlock:owner",
                  base + ":redlock:wake",
                  base + ":redlock:readers",
                  base + ":redlock:writers",
                  base + ":redlock:readerowners"};
}

LockKeys derive_reader_keys(const std::string& key) {
  LockKeys keys = derive_keys(key);
  keys.reader = true;
  return keys;
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
  for (const char* suffix : {":redlock:fence", ":redlock:owner", ":redlock:wake", ":redlock:limit", ":redlock:readers",
                             ":redlock:writers", ":redlock:readerowners"}) {
    if (ends_with(key, suffix)) return true;
  }
  const auto digits = key.find_last_not_of("0123456789");
  return digits != std::string::npos && digits + 1 < key.size() &&
         ends_with(std::string_view(key).substr(0, digits + 1), kSlotInfix);
}

namespace {

// KEY without a semaphore slot's ":slot:N" end, and whether it had one.
bool strip_slot(std::string& key) {
  static constexpr std::string_view kSlot = ":redlock:slot:";
  const auto at = key.rfind(kSlot);
  if (at == std::string::npos) return false;
  const std::string n = key.substr(at + kSlot.size());
  if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) return false;
  key.resize(at + kSlot.size() - 1);  // "...:redlock:slot"
  return true;
}

}  // namespace

std::optional<HelperKey> helper_of(const std::string& whole) {
  static constexpr std::string_view kMarker = ":redlock:";
  std::string key = whole;
  strip_slot(key);
  const auto at = key.rfind(kMarker);
  if (at == std::string::npos) return std::nullopt;
  std::string word = key.substr(at + kMarker.size());
  if (word.empty() || word.find_first_not_of("abcdefghijklmnopqrstuvwxyz") != std::string::npos) return std::nullopt;
  std::string base = key.substr(0, at);
  std::optional<HelperKey> found;
  if (base.size() >= 2 && base.front() == '{' && base.back() == '}') {
    std::string inner = base.substr(1, base.size() - 2);
    if (!has_hash_tag(inner)) found = HelperKey{std::move(inner), word};
  }
  if (!found && has_hash_tag(base)) found = HelperKey{std::move(base), word};
  // A helper of a helper (a semaphore slot's fence) belongs to the lock the slot belongs to.
  if (found) {
    if (auto outer = helper_of(found->lock)) found->lock = outer->lock;
  }
  return found;
}

}  // namespace redlock
