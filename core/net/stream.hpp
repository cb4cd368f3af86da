// A byte stream to one server that never blocks. The connection code sees only this interface,
// so TLS wraps a plain stream without the quorum code noticing.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/net/server_url.hpp"

namespace redlock {

class Stream {
 public:
  enum class Status {
    Ok,         // done (connect) or some bytes moved (read/write)
    WantRead,   // call again when fd() is readable
    WantWrite,  // call again when fd() is writable
    Closed,     // the peer closed the stream
    Failed,     // see error()
  };

  virtual ~Stream() = default;

  // The descriptor to poll; it may change while connecting (one address after another).
  virtual int fd() const = 0;
  // Drives the connection setup (name resolution, TCP connect, TLS handshake); Ok once data can flow.
  virtual Status connect() = 0;
  // Appends what can be read now to INTO.
  virtual Status read(std::string& into) = 0;
  // Writes what it can of DATA, adding the count to WRITTEN.
  virtual Status write(std::string_view data, std::size_t& written) = 0;
  // Why the last call returned Failed, in words.
  virtual const std::string& error() const = 0;
  // Whether that failure was TLS's own (handshake, certificate, a TLS record), not the byte stream's.
  virtual bool tls_failure() const { return false; }
  // The endpoint being reached ("127.0.0.1:6379", "[::1]:6379", a unix socket's path; TLS adds the
  // name verified): known from the moment the TCP connect starts (after name resolution), and the
  // address the server answers on once connected; it changes when an address fails and the next
  // is tried. Empty while the name is still being resolved. Two names of one server reach the same
  // endpoint.
  virtual const std::string& peer() const = 0;
};

// Starts a non-blocking connect to a redis:// or unix:// server (names resolved off the main thread).
std::unique_ptr<Stream> open_plain_stream(const ServerUrl& url);

}  // namespace redlock
