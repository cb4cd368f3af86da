#include "core/net/tls.hpp"

#include <arpa/inet.h>

#include <climits>
#include <cstring>

#include "core/net/openssl.hpp"
#include "core/util/error.hpp"
#include "core/util/setting.hpp"

namespace redlock {

namespace {

struct SslFree {
  void operator()(SSL* s) const { openssl().SSL_free(s); }
};
struct SslCtxFree {
  void operator()(SSL_CTX* c) const { openssl().SSL_CTX_free(c); }
};

// The most specific words OpenSSL has for what just failed; empty when it has none.
std::string openssl_error() {
  std::string text;
  // The last error queued is the outermost; the first one the cause, so the first is kept.
  unsigned long code = openssl().ERR_get_error();
  if (code != 0) {
    if (ERR_SYSTEM_ERROR(code)) {
      text = std::strerror(ERR_GET_REASON(code));
    } else if (const char* reason = openssl().ERR_reason_error_string(code)) {
      text = reason;
    } else {
      char buf[256];
      openssl().ERR_error_string_n(code, buf, sizeof buf);
      text = buf;
    }
  }
  openssl().ERR_clear_error();
  return text;
}

std::string openssl_error_or(const char* fallback) {
  std::string text = openssl_error();
  return text.empty() ? fallback : text;
}

bool is_ip_address(const std::string& host) {
  in6_addr a6{};
  in_addr a4{};
  return inet_pton(AF_INET, host.c_str(), &a4) == 1 || inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

// What a user can do about a failed verification, for the reasons that have a usual cure.
std::string verify_hint(long result, const std::string& name) {
  switch (result) {
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_CERT_UNTRUSTED:
      return " (unknown CA: the server's certificate is not signed by a CA we trust; give its CA with " +
             setting_name(Setting::TlsCa) + ")";
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return " (the certificate is not for '" + name + "'; " + setting_name(Setting::TlsServerName) +
             " verifies against the name it is for)";
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return " (check the clocks of this machine and of the CA)";
    default:
      return {};
  }
}

// Said when the server drops a connection before its first reply: with TLS 1.3 a refused client
// certificate shows only then, after our side of the handshake has finished.
std::string dropped_hint() {
  return " (the server ended the connection right after the handshake: it may want a client certificate, " +
         setting_name(Setting::TlsCert) + " and " + setting_name(Setting::TlsKey) + ", or refuse the one we sent)";
}

// TLS runs over the plain stream through this BIO: bytes move with the plain stream's send() and
// read(), so a write to a closed connection fails (MSG_NOSIGNAL) instead of raising SIGPIPE, and
// the plain stream's words for a failure are kept.
class StreamBio {
 public:
  explicit StreamBio(Stream& plain) : plain_(plain) {}

  // A new BIO that reads and writes through THIS; the caller owns it.
  BIO* make() {
    BIO* bio = openssl().BIO_new(method());
    if (!bio) return nullptr;
    openssl().BIO_set_data(bio, this);
    openssl().BIO_set_init(bio, 1);
    return bio;
  }

  // Why the plain stream failed, once it did; empty when it closed in order or is fine.
  const std::string& error() const { return error_; }
  bool closed() const { return closed_; }

 private:
  static BIO_METHOD* method() {
    // Made once and kept for the life of the process.
    static BIO_METHOD* m = [] {
      BIO_METHOD* meth = openssl().BIO_meth_new(openssl().BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "redlock stream");
      if (meth) {
        openssl().BIO_meth_set_write(meth, &StreamBio::on_write);
        openssl().BIO_meth_set_read(meth, &StreamBio::on_read);
        openssl().BIO_meth_set_ctrl(meth, &StreamBio::on_ctrl);
      }
      return meth;
    }();
    return m;
  }

  static int on_write(BIO* bio, const char* data, int size) {
    auto* self = static_cast<StreamBio*>(openssl().BIO_get_data(bio));
    openssl().BIO_clear_flags(bio, BIO_FLAGS_RWS | BIO_FLAGS_SHOULD_RETRY);
    std::size_t written = 0;
    auto st = self->plain_.write(std::string_view(data, static_cast<std::size_t>(size)), written);
    if (written > 0) return static_cast<int>(written);
    switch (st) {
      case Stream::Status::Ok:
        return 0;
      case Stream::Status::WantWrite:
        openssl().BIO_set_flags(bio, BIO_FLAGS_WRITE | BIO_FLAGS_SHOULD_RETRY);
        return -1;
      case Stream::Status::WantRead:
        openssl().BIO_set_flags(bio, BIO_FLAGS_READ | BIO_FLAGS_SHOULD_RETRY);
        return -1;
      case Stream::Status::Closed:
        self->closed_ = true;
        self->error_ = self->plain_.error();
        return -1;
      case Stream::Status::Failed:
        self->error_ = self->plain_.error();
        return -1;
    }
    return -1;
  }

  static int on_read(BIO* bio, char* out, int size) {
    auto* self = static_cast<StreamBio*>(openssl().BIO_get_data(bio));
    openssl().BIO_clear_flags(bio, BIO_FLAGS_RWS | BIO_FLAGS_SHOULD_RETRY);
    if (self->pos_ == self->in_.size()) {
      self->in_.clear();
      self->pos_ = 0;
      auto st = self->plain_.read(self->in_);
      if (self->in_.empty()) {
        switch (st) {
          case Stream::Status::Ok:
          case Stream::Status::WantRead:
            openssl().BIO_set_flags(bio, BIO_FLAGS_READ | BIO_FLAGS_SHOULD_RETRY);
            return -1;
          case Stream::Status::WantWrite:
            openssl().BIO_set_flags(bio, BIO_FLAGS_WRITE | BIO_FLAGS_SHOULD_RETRY);
            return -1;
          case Stream::Status::Closed:
            self->closed_ = true;
            return 0;
          case Stream::Status::Failed:
            self->error_ = self->plain_.error();
            return -1;
        }
      }
    }
    std::size_t n = std::min(self->in_.size() - self->pos_, static_cast<std::size_t>(size));
    std::memcpy(out, self->in_.data() + self->pos_, n);
    self->pos_ += n;
    return static_cast<int>(n);
  }

  static long on_ctrl(BIO*, int cmd, long, void*) {
    // A stream socket has nothing to flush; every other control is unsupported here.
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
  }

  Stream& plain_;
  std::string in_;  // read from the plain stream, not yet taken by OpenSSL
  std::size_t pos_ = 0;
  bool closed_ = false;
  std::string error_;
};

class TlsStream final : public Stream {
 public:
  TlsStream(std::unique_ptr<Stream> plain, SSL_CTX* ctx, std::string name, bool verify)
      : plain_(std::move(plain)), bio_(*plain_), ctx_(ctx), name_(std::move(name)), verify_(verify) {}

  int fd() const override { return plain_->fd(); }

  Status connect() override {
    if (!ssl_) {
      auto st = plain_->connect();
      // A TLS front (an SNI router, a managed service's shared address) sends each name elsewhere:
      // the endpoint is the address and the name together.
      if (!plain_->peer().empty()) peer_ = plain_->peer() + " as " + name_;
      if (st != Status::Ok) {
        if (st == Status::Failed) error_ = plain_->error();
        return st;
      }
      if (!start()) return Status::Failed;
    }
    openssl().ERR_clear_error();
    int rc = openssl().SSL_connect(ssl_.get());
    if (rc == 1) return Status::Ok;
    int err = openssl().SSL_get_error(ssl_.get(), rc);
    if (err == SSL_ERROR_WANT_READ) return Status::WantRead;
    if (err == SSL_ERROR_WANT_WRITE) return Status::WantWrite;
    long verify = verify_ ? openssl().SSL_get_verify_result(ssl_.get()) : X509_V_OK;
    std::string cause = openssl_error();
    if (verify != X509_V_OK) {
      error_ = std::string("TLS certificate verification failed: ") + openssl().X509_verify_cert_error_string(verify) +
               verify_hint(verify, name_);
    } else if (!cause.empty()) {
      error_ = "TLS handshake failed: " + cause + alert_hint(cause);
    } else if (!bio_.error().empty()) {
      error_ = "TLS handshake failed: " + bio_.error();
    } else {
      error_ = "TLS handshake failed: the server closed the connection (not a TLS port, or it refused our certificate)";
    }
    tls_failed_ = true;
    return Status::Failed;
  }

  Status read(std::string& into) override {
    char buf[16 * 1024];
    const std::size_t before = into.size();
    for (;;) {
      openssl().ERR_clear_error();
      int n = openssl().SSL_read(ssl_.get(), buf, sizeof buf);
      if (n > 0) {
        into.append(buf, static_cast<std::size_t>(n));
        heard_ = true;
        continue;
      }
      int err = openssl().SSL_get_error(ssl_.get(), n);
      if (err == SSL_ERROR_WANT_READ) return into.size() > before ? Status::Ok : Status::WantRead;
      if (err == SSL_ERROR_WANT_WRITE) return Status::WantWrite;
      // A close without TLS's goodbye counts as a close too (SSL_OP_IGNORE_UNEXPECTED_EOF).
      if (err == SSL_ERROR_ZERO_RETURN) return Status::Closed;
      return fail("TLS read failed: ", openssl_error());
    }
  }

  Status write(std::string_view data, std::size_t& written) override {
    while (!data.empty()) {
      openssl().ERR_clear_error();
      int size = static_cast<int>(std::min<std::size_t>(data.size(), INT_MAX));
      int n = openssl().SSL_write(ssl_.get(), data.data(), size);
      if (n > 0) {
        written += static_cast<std::size_t>(n);
        data.remove_prefix(static_cast<std::size_t>(n));
        continue;
      }
      int err = openssl().SSL_get_error(ssl_.get(), n);
      if (err == SSL_ERROR_WANT_WRITE) return Status::WantWrite;
      if (err == SSL_ERROR_WANT_READ) return Status::WantRead;
      if (err == SSL_ERROR_ZERO_RETURN) return Status::Closed;
      return fail("TLS write failed: ", openssl_error());
    }
    return Status::Ok;
  }

  const std::string& error() const override { return error_; }
  bool tls_failure() const override { return tls_failed_; }
  const std::string& peer() const override { return peer_; }

 private:
  bool start() {
    ssl_.reset(openssl().SSL_new(ctx_));
    BIO* bio = ssl_ ? bio_.make() : nullptr;
    if (!bio) {
      error_ = "TLS setup failed: " + openssl_error_or("out of memory");
      tls_failed_ = true;
      return false;
    }
    openssl().SSL_set_bio(ssl_.get(), bio, bio);  // the SSL owns the BIO; the BIO refers to bio_
    if (!is_ip_address(name_)) {
      // SNI (SSL_set_tlsext_host_name is a macro with a C cast). Not for addresses (RFC 6066).
      openssl().SSL_ctrl(ssl_.get(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                         const_cast<char*>(name_.c_str()));
    }
    if (verify_) {
      X509_VERIFY_PARAM* param = openssl().SSL_get0_param(ssl_.get());
      openssl().X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      int ok = is_ip_address(name_) ? openssl().X509_VERIFY_PARAM_set1_ip_asc(param, name_.c_str())
                                    : openssl().X509_VERIFY_PARAM_set1_host(param, name_.c_str(), name_.size());
      if (ok != 1) {
        error_ = "TLS setup failed: cannot verify against name '" + name_ + "'";
        tls_failed_ = true;
        return false;
      }
    }
    return true;
  }

  // Alerts the server sends when it refuses our client certificate, or wants one.
  static std::string alert_hint(const std::string& cause) {
    if (cause.find("certificate required") != std::string::npos ||
        cause.find("handshake failure") != std::string::npos) {
      return " (the server may want a client certificate: " + setting_name(Setting::TlsCert) + " and " +
             setting_name(Setting::TlsKey) + ")";
    }
    if (cause.find("alert unknown ca") != std::string::npos ||
        cause.find("alert bad certificate") != std::string::npos ||
        cause.find("certificate unknown") != std::string::npos) {
      return " (the server does not accept our client certificate)";
    }
    return {};
  }

  Status fail(const char* what, const std::string& cause) {
    if (!cause.empty()) {
      error_ = what + cause + alert_hint(cause);
    } else {
      error_ = what + (!bio_.error().empty() ? bio_.error()
                       : bio_.closed()       ? std::string("the server closed the connection")
                                             : std::string("the connection broke"));
      if (!heard_) error_ += dropped_hint();
    }
    tls_failed_ = true;
    return Status::Failed;
  }

  std::unique_ptr<Stream> plain_;
  StreamBio bio_;
  SSL_CTX* ctx_;
  std::string name_;
  bool verify_;
  bool heard_ = false;  // some application data came back: the server accepted us
  std::unique_ptr<SSL, SslFree> ssl_;
  std::string error_;
  bool tls_failed_ = false;  // the failure was TLS's own, not the plain stream's under it
  std::string peer_;         // set once the plain stream knows its endpoint
};

}  // namespace

struct TlsContext::Impl {
  TlsOptions options;
  std::unique_ptr<SSL_CTX, SslCtxFree> ctx;
};

TlsContext::TlsContext(const TlsOptions& options) : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  openssl().OPENSSL_init_ssl(0, nullptr);
  impl_->ctx.reset(openssl().SSL_CTX_new(openssl().TLS_client_method()));
  SSL_CTX* ctx = impl_->ctx.get();
  if (!ctx) config_error("TLS: cannot create a context: " + openssl_error_or("unknown error"));
  openssl().SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, nullptr);
  openssl().SSL_CTX_ctrl(ctx, SSL_CTRL_MODE, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER,
                         nullptr);
  // Redis closes connections without TLS's goodbye; RESP frames every reply, so nothing is cut
  // short unnoticed.
  openssl().SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  if (options.insecure) {
    openssl().SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  } else {
    openssl().SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    if (!options.ca_file.empty()) {
      if (openssl().SSL_CTX_load_verify_locations(ctx, options.ca_file.c_str(), nullptr) != 1) {
        config_error(setting_name(Setting::TlsCa) + ": cannot load '" + options.ca_file +
                     "': " + openssl_error_or("no certificate in it"));
      }
    } else if (openssl().SSL_CTX_set_default_verify_paths(ctx) != 1) {
      config_error("TLS: cannot load the system trust store: " + openssl_error_or("unknown error"));
    }
  }
  if (!options.cert_file.empty() || !options.key_file.empty()) {
    if (options.cert_file.empty())
      config_error(setting_name(Setting::TlsKey) + " needs " + setting_name(Setting::TlsCert));
    if (openssl().SSL_CTX_use_certificate_chain_file(ctx, options.cert_file.c_str()) != 1) {
      config_error(setting_name(Setting::TlsCert) + ": cannot load '" + options.cert_file +
                   "': " + openssl_error_or("no certificate in it"));
    }
    const std::string& key = options.key_file.empty() ? options.cert_file : options.key_file;
    if (openssl().SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) {
      if (options.key_file.empty()) {
        openssl().ERR_clear_error();
        config_error(setting_name(Setting::TlsCert) + " '" + options.cert_file +
                     "' holds no private key; give it with " + setting_name(Setting::TlsKey));
      }
      config_error(setting_name(Setting::TlsKey) + ": cannot load '" + key +
                   "': " + openssl_error_or("no private key in it"));
    }
    if (openssl().SSL_CTX_check_private_key(ctx) != 1) {
      openssl().ERR_clear_error();
      config_error(setting_name(Setting::TlsKey) + " '" + key + "' does not match " + setting_name(Setting::TlsCert) +
                   " '" + options.cert_file + "'");
    }
  }
}

TlsContext::~TlsContext() = default;

std::unique_ptr<Stream> TlsContext::wrap(std::unique_ptr<Stream> plain, const ServerUrl& url) const {
  const std::string& name = impl_->options.server_name.empty() ? url.host : impl_->options.server_name;
  return std::make_unique<TlsStream>(std::move(plain), impl_->ctx.get(), name, !impl_->options.insecure);
}

}  // namespace redlock
