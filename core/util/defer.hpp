// Runs a cleanup when a scope ends, on every way out of it (an exception's included).
#pragma once

#include <utility>

namespace redlock {

template <typename F>
class Defer {
 public:
  explicit Defer(F cleanup) : cleanup_(std::move(cleanup)) {}
  ~Defer() {
    try {
      cleanup_();
    } catch (...) {  // NOLINT(bugprone-empty-catch): a cleanup never turns one failure into two
    }
  }
  Defer(const Defer&) = delete;
  Defer& operator=(const Defer&) = delete;

 private:
  F cleanup_;
};

}  // namespace redlock
