// Lock tokens: 16 bytes from the operating system's CSPRNG, written as 32 lower-case hex characters.
#pragma once

#include <cstddef>
#include <string>

namespace redlock {

std::string make_token();

// Fills BUF with LEN bytes from getrandom(2); throws when the kernel refuses.
void random_bytes(void* buf, std::size_t len);

}  // namespace redlock
