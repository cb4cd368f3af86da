// A bump allocator over a fixed buffer: a block is a step of an offset, and giving it back costs
// nothing (the latest block given back is reused). For a process that lives a few milliseconds and
// makes some hundred small allocations, where malloc's bookkeeping is most of their cost. Safe
// from several threads: a block is claimed by one compare-and-swap of the offset.
#pragma once

#include <atomic>
#include <cstddef>

namespace redlock {

class Arena {
 public:
  static constexpr std::size_t kAlign = alignof(std::max_align_t);

  constexpr Arena(unsigned char* buffer, std::size_t size) : buffer_(buffer), size_(size) {}
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // A block of SIZE bytes aligned to kAlign, or nullptr when what is left is too small.
  void* take(std::size_t size) {
    const std::size_t step = rounded(size);
    std::size_t at = used_.load(std::memory_order_relaxed);
    do {
      if (step > size_ - at) return nullptr;
    } while (!used_.compare_exchange_weak(at, at + step, std::memory_order_relaxed));
    return buffer_ + at;
  }

  // Gives back BLOCK of SIZE bytes: reused if it is the latest taken, else left as it is.
  void give_back(void* block, std::size_t size) {
    const auto at = static_cast<std::size_t>(static_cast<unsigned char*>(block) - buffer_);
    std::size_t end = at + rounded(size);
    used_.compare_exchange_strong(end, at, std::memory_order_relaxed);
  }

  bool owns(const void* p) const {
    const auto* byte = static_cast<const unsigned char*>(p);
    return byte >= buffer_ && byte < buffer_ + size_;
  }

  std::size_t used() const { return used_.load(std::memory_order_relaxed); }

 private:
  // A zero-byte block still has an address of its own.
  static std::size_t rounded(std::size_t size) { return size == 0 ? kAlign : (size + kAlign - 1) & ~(kAlign - 1); }

  unsigned char* buffer_;
  std::size_t size_;
  std::atomic<std::size_t> used_{0};
};

}  // namespace redlock
