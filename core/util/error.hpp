// Fatal problems: the one exception type that the front end catches once.
// A server that fails is not fatal; its failure travels as a value (see network.hpp).
#pragma once

#include <stdexcept>
#include <string>

namespace redlock {

enum class ErrorKind {
  Usage,     // bad option or argument
  Config,    // bad URL, unsafe password file, duplicate servers, TLS not usable
  Internal,  // a broken invariant or a failing system call we cannot work around
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

[[noreturn]] inline void usage_error(const std::string& message) {
  throw Error(ErrorKind::Usage, message);
}
[[noreturn]] inline void config_error(const std::string& message) {
  throw Error(ErrorKind::Config, message);
}

}  // namespace redlock
