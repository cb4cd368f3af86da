#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/net/ip_text.hpp"
#include "core/net/stream.hpp"
#include "core/util/fd.hpp"

namespace redlock {

namespace {

struct Address {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = AF_UNSPEC;
};

std::string errno_text(const char* what, int err) {
  return std::string(what) + ": " + std::strerror(err);
}

// "127.0.0.1:6379", "[::1]:6379", or a unix socket's path.
std::string endpoint_text(const sockaddr_storage& addr, socklen_t length) {
  if (addr.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(addr);
    return ip_text(in.sin_addr) + ":" + std::to_string(ntohs(in.sin_port));
  }
  if (addr.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(addr);
    return "[" + ip_text(in6.sin6_addr) + "]:" + std::to_string(ntohs(in6.sin6_port));
  }
  if (addr.ss_family == AF_UNIX && length > static_cast<socklen_t>(offsetof(sockaddr_un, sun_path))) {
    const auto& un = reinterpret_cast<const sockaddr_un&>(addr);
    return std::string(un.sun_path, strnlen(un.sun_path, sizeof un.sun_path));
  }
  return {};
}

// Name resolution on a helper thread, so that a slow resolver costs no more than --timeout:
// the thread signals through a pipe that the event loop polls. The state is shared, so an
// abandoned lookup simply finishes on its own.
class Lookup {
 public:
  static std::shared_ptr<Lookup> start(const std::string& host, int port) {
    auto lookup = std::shared_ptr<Lookup>(new Lookup());
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return nullptr;
    lookup->read_end_.reset(fds[0]);
    lookup->write_end_.reset(fds[1]);
    std::string service = std::to_string(port);
    // Started with every signal blocked (a thread inherits the mask): a signal meant for the
    // event loop must not run its handler here, where it would not wake the loop's ppoll().
    struct BlockAll {
      sigset_t before;
      BlockAll() {
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &before);
      }
      ~BlockAll() { pthread_sigmask(SIG_SETMASK, &before, nullptr); }
    } blocked;
    std::thread([lookup, host, service] { lookup->resolve(host, service); }).detach();
    return lookup;
  }

  int fd() const { return read_end_.get(); }

  // True once the thread finished; ADDRESSES or ERROR then hold the outcome.
  bool done(std::vector<Address>& addresses, std::string& error) {
    std::lock_guard lock(mutex_);
    if (!finished_) return false;
    addresses = addresses_;
    error = error_;
    return true;
  }

 private:
  Lookup() = default;

  void resolve(const std::string& host, const std::string& service) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* result = nullptr;
    int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &result);
    {
      std::lock_guard lock(mutex_);
      if (rc != 0) {
        error_ = "cannot resolve " + host + ": " + gai_strerror(rc);
      } else {
        for (addrinfo* ai = result; ai; ai = ai->ai_next) {
          Address a;
          std::memcpy(&a.storage, ai->ai_addr, ai->ai_addrlen);
          a.length = ai->ai_addrlen;
          a.family = ai->ai_family;
          addresses_.push_back(a);
        }
        freeaddrinfo(result);
        if (addresses_.empty()) error_ = "cannot resolve " + host + ": no address";
      }
      finished_ = true;
    }
    char byte = 1;
    [[maybe_unused]] auto n = ::write(write_end_.get(), &byte, 1);
  }

  std::mutex mutex_;
  bool finished_ = false;
  std::vector<Address> addresses_;
  std::string error_;
  Fd read_end_;
  Fd write_end_;
};

class PlainStream final : public Stream {
 public:
  explicit PlainStream(const ServerUrl& url) {
    if (url.scheme == ServerUrl::Scheme::Unix) {
      Address a;
      auto* sun = reinterpret_cast<sockaddr_un*>(&a.storage);
      sun->sun_family = AF_UNIX;
      if (url.path.size() >= sizeof sun->sun_path) {
        error_ = "unix socket path too long";
        failed_ = true;
        return;
      }
      std::memcpy(sun->sun_path, url.path.c_str(), url.path.size() + 1);
      a.length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + url.path.size() + 1);
      a.family = AF_UNIX;
      addresses_.push_back(a);
      return;
    }
    Address a;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&a.storage);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
    auto port = htons(static_cast<uint16_t>(url.port));
    if (inet_pton(AF_INET, url.host.c_str(), &v4->sin_addr) == 1) {
      v4->sin_family = AF_INET;
      v4->sin_port = port;
      a.length = sizeof(sockaddr_in);
      a.family = AF_INET;
      addresses_.push_back(a);
    } else if (inet_pton(AF_INET6, url.host.c_str(), &v6->sin6_addr) == 1) {
      v6->sin6_family = AF_INET6;
      v6->sin6_port = port;
      a.length = sizeof(sockaddr_in6);
      a.family = AF_INET6;
      addresses_.push_back(a);
    } else {
      lookup_ = Lookup::start(url.host, url.port);
      if (!lookup_) {
        error_ = errno_text("pipe", errno);
        failed_ = true;
      }
    }
  }

  int fd() const override {
    if (lookup_) return lookup_->fd();
    return socket_.get();
  }

  Status connect() override {
    if (failed_) return Status::Failed;
    if (lookup_) {
      if (!lookup_->done(addresses_, error_)) return Status::WantRead;
      lookup_.reset();
      if (addresses_.empty()) return fail(error_);
    }
    if (!socket_) return try_next_address();
    if (connected_) return Status::Ok;
    // The socket was writable: the connect finished, one way or the other.
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(socket_.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err == EINPROGRESS || err == EALREADY) return Status::WantWrite;
    if (err != 0) {
      last_errno_ = err;
      socket_.reset();
      return try_next_address();
    }
    // No error is also what a connect still in progress reports (when asked before the socket
    // became writable, say by a request queued meanwhile): only a peer address means connected.
    if (!read_peer()) {
      if (errno == ENOTCONN) return Status::WantWrite;
      return fail(errno_text("getpeername", errno));
    }
    connected_ = true;
    return Status::Ok;
  }

  Status read(std::string& into) override {
    char buf[16 * 1024];
    for (;;) {
      ssize_t n = ::read(socket_.get(), buf, sizeof buf);
      if (n > 0) {
        into.append(buf, static_cast<std::size_t>(n));
        if (static_cast<std::size_t>(n) < sizeof buf) return Status::Ok;
        continue;
      }
      if (n == 0) return Status::Closed;
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return Status::WantRead;
      return fail(errno_text("read", errno));
    }
  }

  Status write(std::string_view data, std::size_t& written) override {
    while (!data.empty()) {
      ssize_t n = ::send(socket_.get(), data.data(), data.size(), MSG_NOSIGNAL);
      if (n >= 0) {
        written += static_cast<std::size_t>(n);
        data.remove_prefix(static_cast<std::size_t>(n));
        continue;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return Status::WantWrite;
      if (errno == EPIPE || errno == ECONNRESET) {
        error_ = errno_text("write", errno);  // the words for what closed it, for a TLS stream above
        return Status::Closed;
      }
      return fail(errno_text("write", errno));
    }
    return Status::Ok;
  }

  const std::string& error() const override { return error_; }
  const std::string& peer() const override { return peer_; }

 private:
  Status fail(std::string message) {
    error_ = std::move(message);
    failed_ = true;
    return Status::Failed;
  }

  // The address the server answers on (for a unix socket, the path the server bound, whichever
  // link to it was configured) becomes the endpoint; false with errno set when not connected. A
  // server that bound a relative path (or an abstract name) says nothing that tells it apart from
  // another server in another directory: the path connected to stays the endpoint then.
  bool read_peer() {
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof peer;
    if (getpeername(socket_.get(), reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) return false;
    std::string text = endpoint_text(peer, peer_len);
    if (peer.ss_family != AF_UNIX || text.rfind('/', 0) == 0) peer_ = std::move(text);
    return true;
  }

  // Starts connecting to the next address; an address that refuses at once makes way for the next.
  Status try_next_address() {
    while (next_address_ < addresses_.size()) {
      const Address& a = addresses_[next_address_++];
      socket_.reset(::socket(a.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      if (!socket_) return fail(errno_text("socket", errno));
      if (a.family != AF_UNIX) {
        int one = 1;
        setsockopt(socket_.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        // A lock's connection is a thin stream (a few small requests in flight): with linear
        // retransmission timeouts it is back within one RTO of a healed network fault, not after
        // an exponential backoff of seconds, during which its requests could only time out.
        setsockopt(socket_.get(), IPPROTO_TCP, TCP_THIN_LINEAR_TIMEOUTS, &one, sizeof one);
      }
      peer_ = endpoint_text(a.storage, a.length);
      int rc;
      do {
        rc = ::connect(socket_.get(), reinterpret_cast<const sockaddr*>(&a.storage), a.length);
      } while (rc != 0 && errno == EINTR);
      if (rc == 0) {
        read_peer();  // else the address connected to stays the endpoint
        connected_ = true;
        return Status::Ok;
      }
      if (errno == EINPROGRESS) {
        // Over loopback the handshake is done before connect returns: the request can go now,
        // before the server has even accepted, and find the data there when it does.
        if (read_peer()) {
          connected_ = true;
          return Status::Ok;
        }
        return Status::WantWrite;
      }
      last_errno_ = errno;
      socket_.reset();
    }
    return fail(errno_text("connect", last_errno_ ? last_errno_ : ECONNREFUSED));
  }

  std::vector<Address> addresses_;
  std::size_t next_address_ = 0;
  std::shared_ptr<Lookup> lookup_;
  Fd socket_;
  bool connected_ = false;
  bool failed_ = false;
  int last_errno_ = 0;
  std::string error_;
  std::string peer_;
};

}  // namespace

std::unique_ptr<Stream> open_plain_stream(const ServerUrl& url) {
  return std::make_unique<PlainStream>(url);
}

}  // namespace redlock
