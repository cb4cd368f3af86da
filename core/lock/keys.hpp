// The Redis names a lock uses. The lock itself is KEY exactly (what node-redlock, redsync and
// redis-py write); helper keys and the wake-up channel are derived from it and share its hash tag,
// so they would live in the same cluster slot, and never change the lock key itself.
#pragma once

#include <string>

namespace redlock {

struct LockKeys {
  std::string lock;     // KEY: value = token, PX expiry
  std::string fence;    // the fencing counter: expires after --fence-ttl without an acquisition
  std::string owner;    // who holds it and since when: same expiry as the lock
  std::string channel;  // wake-up messages on release and acquisition
};

LockKeys derive_keys(const std::string& key);

// Whether KEY ends as a helper key does (":redlock:fence", ":redlock:owner", ":redlock:wake"): a
// lock of that name could be another lock's helper key, and be overwritten by its owner record.
bool is_helper_key(const std::string& key);

}  // namespace redlock
