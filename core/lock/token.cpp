#include "core/lock/token.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "core/util/error.hpp"

namespace redlock {

void random_bytes(void* buf, std::size_t len) {
  auto* p = static_cast<unsigned char*>(buf);
  while (len > 0) {
    ssize_t n = getrandom(p, len, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorKind::Internal, std::string("getrandom: ") + std::strerror(errno));
    }
    p += n;
    len -= static_cast<std::size_t>(n);
  }
}

std::string make_token() {
  unsigned char bytes[16];
  random_bytes(bytes, sizeof bytes);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token(32, '0');
  for (std::size_t i = 0; i < sizeof bytes; ++i) {
    token[2 * i] = kHex[bytes[i] >> 4];
    token[2 * i + 1] = kHex[bytes[i] & 0xf];
  }
  return token;
}

}  // namespace redlock
