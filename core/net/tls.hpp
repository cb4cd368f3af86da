// TLS for rediss:// servers, with OpenSSL. Nothing here runs (and OpenSSL is not initialised)
// unless a rediss:// server is configured.
#pragma once

#include <memory>
#include <string>

#include "core/net/stream.hpp"

namespace redlock {

struct TlsOptions {
  std::string ca_file;    // empty: the system trust store
  std::string cert_file;  // client certificate (with key_file)
  std::string key_file;
  std::string server_name;  // verify against this name instead of the URL's host
  bool insecure = false;    // no verification at all
};

class TlsContext {
 public:
  // Throws a configuration error when a file cannot be loaded.
  explicit TlsContext(const TlsOptions& options);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // Wraps a plain stream that is connecting to URL: the handshake follows the TCP connect.
  std::unique_ptr<Stream> wrap(std::unique_ptr<Stream> plain, const ServerUrl& url) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace redlock
