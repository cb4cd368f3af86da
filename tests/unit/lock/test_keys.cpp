#include <doctest/doctest.h>

#include "core/lock/keys.hpp"
#include "core/net/cluster.hpp"

using redlock::derive_keys;
using redlock::derive_semaphore_keys;
using redlock::is_helper_key;
using redlock::LockKeys;
using redlock::SemaphoreKeys;

TEST_CASE("helper keys share the lock's hash tag and never change the lock key") {
  auto k = derive_keys("deploy");
  CHECK(k.lock == "deploy");
  CHECK(k.fence == "{deploy}:redlock:fence");
  CHECK(k.owner == "{deploy}:redlock:owner");
  CHECK(k.channel == "{deploy}:redlock:wake");

  auto tagged = derive_keys("jobs:{eu}:nightly");
  CHECK(tagged.lock == "jobs:{eu}:nightly");
  CHECK(tagged.fence == "jobs:{eu}:nightly:redlock:fence");

  // "{}" is not a tag: the whole key is hashed, so it gets braced like any other.
  CHECK(derive_keys("a{}b").fence == "{a{}b}:redlock:fence");
}

TEST_CASE("helper keys of different locks differ") {
  CHECK(derive_keys("a").fence != derive_keys("b").fence);
  CHECK(derive_keys("a").channel != derive_keys("a").fence);
}

TEST_CASE("a key that ends as a helper key does is recognised") {
  for (const auto& name : {"job", "deploy"}) {
    LockKeys k = derive_keys(name);
    CHECK(is_helper_key(k.fence));
    CHECK(is_helper_key(k.owner));
    CHECK(is_helper_key(k.channel));
    // The fair queue's ticket counter and a fair waiter's mark, named from the channel as the scripts do.
    CHECK(redlock::queue_helper(k, "ticket") == k.fence.substr(0, k.fence.size() - 5) + "ticket");
    CHECK(is_helper_key(redlock::queue_helper(k, "ticket")));
    CHECK(is_helper_key(redlock::queue_helper(k, "fair")));
    CHECK_FALSE(is_helper_key(k.lock));
  }
  CHECK_FALSE(is_helper_key("redlock:owner"));
  CHECK_FALSE(is_helper_key("a:redlock:owners"));
  CHECK(is_helper_key("x:redlock:wake"));
}

TEST_CASE("a helper key leads back to its lock, whatever its word; other keys lead nowhere") {
  using redlock::helper_of;
  for (const auto& name : {"job", "locks:deploy", "jobs:{eu}:nightly", "a{}b"}) {
    LockKeys k = derive_keys(name);
    for (const auto& helper : {k.fence, k.owner, k.channel, k.fence.substr(0, k.fence.size() - 5) + "readers"}) {
      auto h = helper_of(helper);
      REQUIRE(h);
      CHECK(h->lock == name);
    }
    CHECK_FALSE(helper_of(k.lock));
  }
  CHECK(helper_of("{job}:redlock:fence")->word == "fence");
  // Not as derive_keys makes them: no braces and no tag of its own, or no word.
  CHECK_FALSE(helper_of("app:redlock:jobs"));
  CHECK_FALSE(helper_of("{job}:redlock:"));
  CHECK_FALSE(helper_of("{job}:redlock:Fence"));
  CHECK_FALSE(helper_of("{job}:redlock:fence:x"));
}

TEST_CASE("a semaphore's slots share the key's hash tag, wake on its channel, and are no lock names") {
  SemaphoreKeys k = derive_semaphore_keys("jobs", 3);
  CHECK(k.limit == "{jobs}:redlock:limit");
  REQUIRE(k.slots.size() == 3);
  CHECK(k.slots[2].lock == "{jobs}:redlock:slot:2");
  CHECK(k.slots[2].fence == "{jobs}:redlock:slot:2:redlock:fence");
  CHECK(k.slots[0].channel == derive_keys("jobs").channel);
  CHECK(derive_semaphore_keys("{app}x", 1).slots[0].lock == "{app}x:redlock:slot:0");
  CHECK(is_helper_key(k.limit));
  for (const auto& slot : k.slots)
    CHECK((is_helper_key(slot.lock) && is_helper_key(slot.fence) && is_helper_key(slot.owner)));
  CHECK(is_helper_key("a:redlock:slot:17"));
  CHECK_FALSE(is_helper_key("a:redlock:slot:"));
  CHECK_FALSE(is_helper_key("a:redlock:slot:x1"));
  CHECK_FALSE(is_helper_key("db:slot:1"));
  // list never shows a slot, its helpers or the limit as a lock of their own.
  for (const auto& slot : k.slots) {
    for (const auto& key : {slot.lock, slot.fence, slot.owner}) {
      REQUIRE(redlock::helper_of(key));
      CHECK(redlock::helper_of(key)->lock == "jobs");
    }
  }
  CHECK(redlock::helper_of(k.limit)->lock == "jobs");
}

TEST_CASE("the waiters' queue and heartbeats are helper keys: no lock can be named as one") {
  const auto k = redlock::derive_keys("deploy");
  CHECK(k.waiters == "{deploy}:redlock:waiters");
  CHECK(redlock::waiter_key(k, "0a1b") == "{deploy}:redlock:waiter:0a1b");
  CHECK(redlock::waiter_key(redlock::derive_keys("jobs:{eu}"), "ff") == "jobs:{eu}:redlock:waiter:ff");
  CHECK(redlock::is_helper_key("{deploy}:redlock:waiters"));
  CHECK(redlock::is_helper_key("{deploy}:redlock:waiter:0a1b"));
  CHECK(!redlock::is_helper_key("{deploy}:redlock:waiter:"));
  CHECK(!redlock::is_helper_key("{deploy}:redlock:waiter:night"));
  // A heartbeat leads back to its lock, as `list` reads it (never a lock of its own).
  REQUIRE(redlock::helper_of("{deploy}:redlock:waiter:0a1b"));
  CHECK(redlock::helper_of("{deploy}:redlock:waiter:0a1b")->lock == "deploy");
  CHECK(redlock::helper_of("{deploy}:redlock:waiter:0a1b")->word == "waiter");
  // So is a waiter's grant record, which a release reads to hand it the lock.
  CHECK(redlock::grant_key(k, "0a1b") == "{deploy}:redlock:grant:0a1b");
  CHECK(redlock::is_helper_key("{deploy}:redlock:grant:0a1b"));
  CHECK(!redlock::is_helper_key("{deploy}:redlock:grant:night"));
  REQUIRE(redlock::helper_of("{deploy}:redlock:grant:0a1b"));
  CHECK(redlock::helper_of("{deploy}:redlock:grant:0a1b")->lock == "deploy");
  CHECK(redlock::helper_of("{deploy}:redlock:grant:0a1b")->word == "grant");
  // A semaphore's slots queue on the semaphore's own queue, as they wake on its channel.
  CHECK(redlock::derive_semaphore_keys("jobs", 2).slots[1].waiters == "{jobs}:redlock:waiters");
}

TEST_CASE("the shared mode's sets share the key's hash tag, lead back to the lock, and are no lock names") {
  const auto k = redlock::derive_reader_keys("backup");
  CHECK(k.reader);
  CHECK(k.lock == "backup");
  CHECK_FALSE(derive_keys("backup").reader);
  for (const std::string& key : {k.readers, k.writers, k.reader_owners}) {
    CHECK(key.rfind("{backup}:redlock:", 0) == 0);
    CHECK(is_helper_key(key));
    REQUIRE(redlock::helper_of(key));
    CHECK(redlock::helper_of(key)->lock == "backup");
  }
  CHECK(k.readers == "{backup}:redlock:readers");
  CHECK(k.writers == "{backup}:redlock:writers");
}

TEST_CASE("a lock's keys share one cluster slot unless its braces form no tag the wrapping keeps") {
  for (const char* good : {"job", "{user1000}.following", "a{b", "a{b}c", "}{x}", "{x}{y}", "a b\n", "x:y"}) {
    CHECK_MESSAGE(redlock::keys_share_slot(good), good);
  }
  for (const char* bad : {"a{}b", "a}b", "{}x", "a}{b"}) {
    CHECK_FALSE_MESSAGE(redlock::keys_share_slot(bad), bad);
  }
}

TEST_CASE("without braces every helper key hashes to the lock's own slot, as the quick answer assumes") {
  for (const char* name : {"job", "x:y", "a b\n", "deploy/prod", "j"}) {
    const std::string key = name;
    const int slot = redlock::key_slot(key);
    const auto k = redlock::derive_keys(key);
    for (const std::string* helper : {&k.fence, &k.owner, &k.channel, &k.waiters, &k.readers, &k.writers}) {
      CHECK_MESSAGE(redlock::key_slot(*helper) == slot, *helper);
    }
    const auto sem = redlock::derive_semaphore_keys(key, 2);
    CHECK(redlock::key_slot(sem.limit) == slot);
    CHECK(redlock::key_slot(sem.slots.at(1).lock) == slot);
    CHECK(redlock::key_slot(sem.slots.at(1).fence) == slot);
  }
}
