#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "core/util/arena.hpp"

using redlock::Arena;

namespace {

bool aligned(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % Arena::kAlign == 0;
}

}  // namespace

TEST_CASE("an arena's blocks are aligned, apart, and inside it") {
  alignas(Arena::kAlign) unsigned char buffer[256];
  Arena arena(buffer, sizeof buffer);
  void* a = arena.take(1);
  void* b = arena.take(0);
  void* c = arena.take(17);
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  REQUIRE(c != nullptr);
  CHECK(aligned(a));
  CHECK(aligned(b));
  CHECK(aligned(c));
  CHECK(a != b);
  CHECK(static_cast<unsigned char*>(c) - static_cast<unsigned char*>(b) >= static_cast<std::ptrdiff_t>(Arena::kAlign));
  CHECK(arena.owns(c));
  unsigned char outside = 0;
  CHECK_FALSE(arena.owns(&outside));
  CHECK_FALSE(arena.owns(buffer + sizeof buffer));
}

TEST_CASE("an arena says no when what is left is too small, and still gives what fits") {
  alignas(Arena::kAlign) unsigned char buffer[64];
  Arena arena(buffer, sizeof buffer);
  CHECK(arena.take(65) == nullptr);
  CHECK(arena.take(48) != nullptr);
  CHECK(arena.take(32) == nullptr);
  CHECK(arena.take(16) != nullptr);
  CHECK(arena.take(1) == nullptr);
  CHECK(arena.used() == 64);
}

TEST_CASE("the latest block given back is reused; an earlier one is not") {
  alignas(Arena::kAlign) unsigned char buffer[256];
  Arena arena(buffer, sizeof buffer);
  void* first = arena.take(40);
  void* second = arena.take(40);
  const std::size_t both = arena.used();
  arena.give_back(first, 40);
  CHECK(arena.used() == both);
  arena.give_back(second, 40);
  CHECK(arena.used() == both - 48);
  CHECK(arena.take(40) == second);
}

TEST_CASE("threads that take at once never get the same block") {
  alignas(Arena::kAlign) unsigned char buffer[4 * 200 * 16];
  Arena arena(buffer, sizeof buffer);
  std::vector<std::vector<void*>> got(4);
  std::vector<std::thread> threads;
  for (auto& mine : got) {
    threads.emplace_back([&arena, &mine] {
      for (int i = 0; i < 200; ++i) mine.push_back(arena.take(16));
    });
  }
  for (auto& t : threads) t.join();
  std::set<void*> distinct;
  for (const auto& mine : got) distinct.insert(mine.begin(), mine.end());
  CHECK(distinct.size() == 800);
  CHECK(distinct.count(nullptr) == 0);
  CHECK(arena.take(1) == nullptr);
}
