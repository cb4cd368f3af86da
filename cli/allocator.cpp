// operator new and delete of the redlock binary: the first blocks from an arena, the rest from
// malloc. A one-shot command (acquire, release, status) makes about 600 allocations of about
// 100 KB in all, and malloc's and free's bookkeeping for them cost about 120,000 instructions,
// a sixth of `acquire -n`'s: from the arena, a few thousand. A long `run` or `watch` uses up the
// arena in its first minutes and goes on with malloc; what the arena holds is never returned to
// the system (at most its size). Not in sanitizer builds, whose runtimes replace these operators
// to check every block.
#include <cstdlib>
#include <new>

#include "core/util/arena.hpp"

namespace {

constexpr std::size_t kArenaBytes = 128 * 1024;

alignas(redlock::Arena::kAlign) unsigned char arena_buffer[kArenaBytes];

// Built before any static constructor can allocate (constant initialization: no constructor runs).
constinit redlock::Arena arena(arena_buffer, kArenaBytes);

void* allocate(std::size_t size) {
  if (void* block = arena.take(size)) return block;
  for (;;) {
    if (void* block = std::malloc(size == 0 ? 1 : size)) return block;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

// SIZE is the block's when the caller knows it (sized delete); without it, an arena block stays.
void release(void* block, std::size_t size, bool sized) noexcept {
  if (!arena.owns(block)) {
    std::free(block);
  } else if (sized) {
    arena.give_back(block, size);
  }
}

}  // namespace

void* operator new(std::size_t size) {
  return allocate(size);
}
void* operator new[](std::size_t size) {
  return allocate(size);
}
void operator delete(void* block) noexcept {
  release(block, 0, false);
}
void operator delete[](void* block) noexcept {
  release(block, 0, false);
}
void operator delete(void* block, std::size_t size) noexcept {
  release(block, size, true);
}
void operator delete[](void* block, std::size_t size) noexcept {
  release(block, size, true);
}
