#include "core/lock/keys.hpp"

#include <string_view>

#include "core/net/cluster.hpp"

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
                  base + ":redlock:waiters",
                  base + ":redlock:readers",
                  base + ":redlock:writers",
                  base + ":redlock:readerowners"};
}

std::string waiter_key(const LockKeys& keys, const std::string& id) {
  // The release script finds it from the channel's name the same way (see release.lua).
  return keys.channel.substr(0, keys.channel.size() - std::string_view("wake").size()) + "waiter:" + id;
}

std::string grant_key(const LockKeys& keys, const std::string& id) {
  return queue_helper(keys, "grant:" + id);
}

std::string queue_helper(const LockKeys& keys, const std::string& word) {
  return keys.channel.substr(0, keys.channel.size() - std::string_view("wake").size()) + word;
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
    slot.waiters = derive_keys(key).waiters;
    keys.slots.push_back(std::move(slot));
  }
  return keys;
}

bool keys_share_slot(const std::string& key) {
  // Without braces every helper key is "{KEY}…", which hashes as a KEY of one character or more does.
  if (!key.empty() && key.find_first_of("{}") == std::string::npos) return true;
  const int slot = key_slot(key);
  auto same = [slot](const LockKeys& k) {
    for (const std::string* name :
         {&k.lock, &k.fence, &k.owner, &k.channel, &k.waiters, &k.readers, &k.writers, &k.reader_owners}) {
      if (key_slot(*name) != slot) return false;
    }
    return key_slot(waiter_key(k, "0")) == slot;
  };
  const SemaphoreKeys semaphore = derive_semaphore_keys(key, 1);
  return same(derive_keys(key)) && key_slot(semaphore.limit) == slot && same(semaphore.slots.at(0));
}

bool is_helper_key(const std::string& key) {
  for (const char* suffix :
       {":redlock:fence", ":redlock:owner", ":redlock:wake", ":redlock:limit", ":redlock:waiters", ":redlock:readers",
        ":redlock:writers", ":redlock:readerowners", ":redlock:ticket", ":redlock:fair"}) {
    if (ends_with(key, suffix)) return true;
  }
  // A waiter's heartbeat key and its grant record: ":redlock:waiter:" or ":redlock:grant:" and hex digits.
  const auto hex = key.find_last_not_of("0123456789abcdef");
  if (hex != std::string::npos && hex + 1 < key.size()) {
    const auto head = std::string_view(key).substr(0, hex + 1);
    if (ends_with(head, ":redlock:waiter:") || ends_with(head, ":redlock:grant:")) return true;
  }
  const auto digits = key.find_last_not_of("0123456789");
  return digits != std::string::npos && digits + 1 < key.size() &&
         ends_with(std::string_view(key).substr(0, digits + 1), kSlotInfix);
}

namespace {

// KEY without a semaphore slot's number ("...:redlock:slot:N" becomes "...:redlock:slot") or a
// queued waiter's id ("...:redlock:waiter:ID" becomes "...:redlock:waiter", and so for grant).
void strip_number(std::string& key) {
  if (slot_number(key)) {
    key.resize(key.rfind(kSlotInfix) + kSlotInfix.size() - 1);
    return;
  }
  for (const std::string_view infix : {":redlock:waiter:", ":redlock:grant:"}) {
    const auto at = key.rfind(infix);
    if (at == std::string::npos || at + infix.size() == key.size()) continue;
    if (key.find_first_not_of("0123456789abcdef", at + infix.size()) != std::string::npos) continue;
    key.resize(at + infix.size() - 1);
    return;
  }
}

}  // namespace

std::optional<HelperKey> direct_helper_of(const std::string& whole) {
  static constexpr std::string_view kMarker = ":redlock:";
  std::string key = whole;
  strip_number(key);
  const auto at = key.rfind(kMarker);
  if (at == std::string::npos) return std::nullopt;
  std::string word = key.substr(at + kMarker.size());
  if (word.empty() || word.find_first_not_of("abcdefghijklmnopqrstuvwxyz") != std::string::npos) return std::nullopt;
  std::string base = key.substr(0, at);
  if (base.size() >= 2 && base.front() == '{' && base.back() == '}') {
    std::string inner = base.substr(1, base.size() - 2);
    if (!has_hash_tag(inner)) return HelperKey{std::move(inner), word};
  }
  if (has_hash_tag(base)) return HelperKey{std::move(base), word};
  return std::nullopt;
}

std::optional<HelperKey> helper_of(const std::string& key) {
  auto found = direct_helper_of(key);
  // A helper of a helper (a semaphore slot's fence) belongs to the lock the slot belongs to.
  if (found) {
    if (auto outer = direct_helper_of(found->lock)) found->lock = outer->lock;
  }
  return found;
}

std::optional<std::size_t> slot_number(const std::string& key) {
  const auto at = key.rfind(kSlotInfix);
  if (at == std::string::npos || at + kSlotInfix.size() == key.size()) return std::nullopt;
  const std::string n = key.substr(at + kSlotInfix.size());
  if (n.size() > 18 || n.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return static_cast<std::size_t>(std::stoull(n));
}

}  // namespace redlock
