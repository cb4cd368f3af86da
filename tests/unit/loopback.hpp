// A loopback TCP listener on a free port, for unit tests of the socket code.
#pragma once

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "core/net/server_url.hpp"
#include "core/util/fd.hpp"

namespace redlock::test {

struct Listener {
  Fd fd;
  int port = 0;
  explicit Listener(int backlog = 16) {
    fd.reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(listen(fd.get(), backlog) == 0);
    socklen_t len = sizeof a;
    getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ServerUrl url() const { return parse_server_url("127.0.0.1:" + std::to_string(port)); }
};

// A listener whose accept queue is full and that never accepts: a connect to it stays in SYN-SENT,
// as to a host that is powered off or behind a partition that drops packets.
struct BlackHole {
  Listener listener{0};
  Fd fillers[2];
  BlackHole() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(listener.port));
    for (auto& f : fillers) {
      f.reset(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      connect(f.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
  }
  ServerUrl url() const { return listener.url(); }
};

}  // namespace redlock::test
