// The text of an IP address, as inet_ntop(3) writes it. glibc's formats IPv4 with sprintf, which
// costs a command more than its own work on the servers it names; IPv4 is written here.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <string>

namespace redlock {

inline std::string ip_text(const in_addr& address) {
  const auto* octets = reinterpret_cast<const unsigned char*>(&address.s_addr);
  char buf[16];
  char* end = buf;
  for (int i = 0; i < 4; ++i) {
    if (i > 0) *end++ = '.';
    end = std::to_chars(end, buf + sizeof buf, octets[i]).ptr;
  }
  return std::string(buf, end);
}

inline std::string ip_text(const in6_addr& address) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, &address, buf, sizeof buf);
  return buf;
}

}  // namespace redlock
