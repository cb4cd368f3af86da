// A loopback TCP listener on a free port, for unit tests of the socket code.
#pragma once

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>

#include "fd.hpp"
#include "server_url.hpp"

namespace redlock::test {

struct Listener {
  Fd fd;
  int port = 0;
  Listener() {
    fd.reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(listen(fd.get(), 16) == 0);
    socklen_t len = sizeof a;
    getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ServerUrl url() const { return parse_server_url("127.0.0.1:" + std::to_string(port)); }
};

}  // namespace redlock::test
