#include "tls.hpp"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "error.hpp"

namespace redlock {

namespace {

struct SslFree {
  void operator()(SSL* s) const { SSL_free(s); }
};
struct SslCtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};

// The most specific words OpenSSL has for what just failed.
std::string openssl_error() {
  unsigned long code = ERR_get_error();
  if (code == 0) return "unknown error";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof buf);
  const char* reason = ERR_reason_error_string(code);
  ERR_clear_error();
  return reason ? reason : buf;
}

bool is_ip_address(const std::string& host) {
  in6_addr a6{};
  in_addr a4{};
  return inet_pton(AF_INET, host.c_str(), &a4) == 1 || inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

class TlsStream final : public Stream {
 public:
  TlsStream(std::unique_ptr<Stream> plain, SSL_CTX* ctx, std::string name, bool verify)
      : plain_(std::move(plain)), ctx_(ctx), name_(std::move(name)), verify_(verify) {}

  int fd() const override { return plain_->fd(); }

  Status connect() override {
    if (!ssl_) {
      auto st = plain_->connect();
      if (st != Status::Ok) {
        if (st == Status::Failed) error_ = plain_->error();
        return st;
      }
      if (!start()) return Status::Failed;
    }
    ERR_clear_error();
    int rc = SSL_connect(ssl_.get());
    if (rc == 1) return Status::Ok;
    int err = SSL_get_error(ssl_.get(), rc);
    if (err == SSL_ERROR_WANT_READ) return Status::WantRead;
    if (err == SSL_ERROR_WANT_WRITE) return Status::WantWrite;
    long verify = SSL_get_verify_result(ssl_.get());
    if (verify != X509_V_OK) {
      error_ = std::string("TLS certificate verification failed: ") + X509_verify_cert_error_string(verify);
    } else if (err == SSL_ERROR_SYSCALL || err == SSL_ERROR_ZERO_RETURN) {
      error_ = "TLS handshake failed: the server closed the connection (not a TLS port, or it refused our certificate)";
    } else {
      error_ = "TLS handshake failed: " + openssl_error();
    }
    return Status::Failed;
  }

  Status read(std::string& into) override {
    char buf[16 * 1024];
    for (;;) {
      ERR_clear_error();
      int n = SSL_read(ssl_.get(), buf, sizeof buf);
      if (n > 0) {
        into.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      int err = SSL_get_error(ssl_.get(), n);
      if (err == SSL_ERROR_WANT_READ) return into.empty() ? Status::WantRead : Status::Ok;
      if (err == SSL_ERROR_WANT_WRITE) return Status::WantWrite;
      if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)) {
        return Status::Closed;
      }
      error_ = "TLS read failed: " + openssl_error();
      return Status::Failed;
    }
  }

  Status write(std::string_view data, std::size_t& written) override {
    while (!data.empty()) {
      ERR_clear_error();
      int n = SSL_write(ssl_.get(), data.data(), static_cast<int>(data.size()));
      if (n > 0) {
        written += static_cast<std::size_t>(n);
        data.remove_prefix(static_cast<std::size_t>(n));
        continue;
      }
      int err = SSL_get_error(ssl_.get(), n);
      if (err == SSL_ERROR_WANT_WRITE) return Status::WantWrite;
      if (err == SSL_ERROR_WANT_READ) return Status::WantRead;
      if (err == SSL_ERROR_ZERO_RETURN) return Status::Closed;
      error_ = "TLS write failed: " + openssl_error();
      return Status::Failed;
    }
    return Status::Ok;
  }

  const std::string& error() const override { return error_; }

 private:
  bool start() {
    ssl_.reset(SSL_new(ctx_));
    if (!ssl_ || SSL_set_fd(ssl_.get(), plain_->fd()) != 1) {
      error_ = "TLS setup failed: " + openssl_error();
      return false;
    }
    if (!is_ip_address(name_)) {
      // SNI (SSL_set_tlsext_host_name is a macro with a C cast).
      SSL_ctrl(ssl_.get(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(name_.c_str()));
    }
    if (verify_) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl_.get());
      int ok = is_ip_address(name_) ? X509_VERIFY_PARAM_set1_ip_asc(param, name_.c_str())
                                    : X509_VERIFY_PARAM_set1_host(param, name_.c_str(), name_.size());
      if (ok != 1) {
        error_ = "TLS setup failed: cannot verify against name '" + name_ + "'";
        return false;
      }
    }
    return true;
  }

  std::unique_ptr<Stream> plain_;
  SSL_CTX* ctx_;
  std::string name_;
  bool verify_;
  std::unique_ptr<SSL, SslFree> ssl_;
  std::string error_;
};

}  // namespace

struct TlsContext::Impl {
  TlsOptions options;
  std::unique_ptr<SSL_CTX, SslCtxFree> ctx;
};

TlsContext::TlsContext(const TlsOptions& options) : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  OPENSSL_init_ssl(0, nullptr);
  impl_->ctx.reset(SSL_CTX_new(TLS_client_method()));
  SSL_CTX* ctx = impl_->ctx.get();
  if (!ctx) config_error("TLS: cannot create a context: " + openssl_error());
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (options.insecure) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    if (!options.ca_file.empty()) {
      if (SSL_CTX_load_verify_locations(ctx, options.ca_file.c_str(), nullptr) != 1) {
        config_error("--tls-ca: cannot load '" + options.ca_file + "': " + openssl_error());
      }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
      config_error("TLS: cannot load the system trust store: " + openssl_error());
    }
  }
  if (!options.cert_file.empty() || !options.key_file.empty()) {
    if (options.cert_file.empty()) config_error("--tls-key needs --tls-cert");
    if (SSL_CTX_use_certificate_chain_file(ctx, options.cert_file.c_str()) != 1) {
      config_error("--tls-cert: cannot load '" + options.cert_file + "': " + openssl_error());
    }
    const std::string& key = options.key_file.empty() ? options.cert_file : options.key_file;
    if (SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) {
      config_error("--tls-key: cannot load '" + key + "': " + openssl_error());
    }
    if (SSL_CTX_check_private_key(ctx) != 1) config_error("--tls-key does not match --tls-cert");
  }
}

TlsContext::~TlsContext() = default;

std::unique_ptr<Stream> TlsContext::wrap(std::unique_ptr<Stream> plain, const ServerUrl& url) const {
  const std::string& name = impl_->options.server_name.empty() ? url.host : impl_->options.server_name;
  return std::make_unique<TlsStream>(std::move(plain), impl_->ctx.get(), name, !impl_->options.insecure);
}

}  // namespace redlock
