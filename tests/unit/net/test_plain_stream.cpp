// The plain socket stream against loopback listeners: when the endpoint is known, what it is, and
// the socket options a lock's connection needs.
#include <doctest/doctest.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/net/stream.hpp"
#include "core/util/fd.hpp"
#include "loopback.hpp"

using namespace redlock;
using redlock::test::Listener;

namespace {

// Drives CONNECT to its end (bounded: 5 s of polls); returns the last status.
Stream::Status connect_fully(Stream& s) {
  for (int i = 0; i < 500; ++i) {
    auto st = s.connect();
    if (st != Stream::Status::WantRead && st != Stream::Status::WantWrite) return st;
    pollfd p{s.fd(), static_cast<short>(st == Stream::Status::WantRead ? POLLIN : POLLOUT), 0};
    poll(&p, 1, 10);
  }
  return Stream::Status::Failed;
}

}  // namespace

TEST_CASE("an address: the endpoint is known from the first step of the connect") {
  Listener l;
  auto s = open_plain_stream(l.url());
  auto st = s->connect();
  CHECK((st == Stream::Status::Ok || st == Stream::Status::WantWrite));
  CHECK(s->peer() == "127.0.0.1:" + std::to_string(l.port));
}

TEST_CASE("a name: no endpoint while it is resolved, then the address it reached") {
  Listener l;  // on 127.0.0.1 only: a ::1 that localhost may name first is refused, then skipped
  auto s = open_plain_stream(parse_server_url("localhost:" + std::to_string(l.port)));
  auto st = s->connect();
  if (st == Stream::Status::WantRead) CHECK(s->peer().empty());
  REQUIRE(connect_fully(*s) == Stream::Status::Ok);
  CHECK(s->peer() == "127.0.0.1:" + std::to_string(l.port));
}

TEST_CASE("TCP connections are thin streams: linear retransmission timeouts after a fault") {
  Listener l;
  auto s = open_plain_stream(l.url());
  REQUIRE(connect_fully(*s) == Stream::Status::Ok);
  int value = 0;
  socklen_t len = sizeof value;
  REQUIRE(getsockopt(s->fd(), IPPROTO_TCP, TCP_THIN_LINEAR_TIMEOUTS, &value, &len) == 0);
  CHECK(value == 1);
  REQUIRE(getsockopt(s->fd(), IPPROTO_TCP, TCP_NODELAY, &value, &len) == 0);
  CHECK(value == 1);
}

TEST_CASE("a unix socket reached through a link: the endpoint is the path the server bound") {
  char dir[] = "/tmp/redlock-unit-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/redis.sock", link = std::string(dir) + "/link.sock";
  Fd server(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  REQUIRE(bind(server.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(listen(server.get(), 4) == 0);
  REQUIRE(symlink(path.c_str(), link.c_str()) == 0);
  auto s = open_plain_stream(parse_server_url("unix://" + link));
  auto st = connect_fully(*s);
  CHECK(st == Stream::Status::Ok);
  CHECK(s->peer() == path);
  unlink(link.c_str());
  unlink(path.c_str());
  rmdir(dir);
}

TEST_CASE("a unix socket bound by a relative path: the path connected to stays the endpoint") {
  char dir[] = "/tmp/redlock-unit-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  // Two servers in two directories may both bind "redis.sock": that name tells nothing apart.
  const std::string path = std::string(dir) + "/redis.sock";
  Fd server(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, "redis.sock", sizeof a.sun_path - 1);
  char old_cwd[4096];
  REQUIRE(getcwd(old_cwd, sizeof old_cwd) != nullptr);
  REQUIRE(chdir(dir) == 0);
  int rc = bind(server.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
  REQUIRE(chdir(old_cwd) == 0);
  REQUIRE(rc == 0);
  REQUIRE(listen(server.get(), 4) == 0);
  auto s = open_plain_stream(parse_server_url("unix://" + path));
  CHECK(connect_fully(*s) == Stream::Status::Ok);
  CHECK(s->peer() == path);
  unlink(path.c_str());
  rmdir(dir);
}
