// OpenSSL, loaded with dlopen() the first time a rediss:// server is configured: plain runs neither
// map nor relocate it (it is most of a dynamically linked start-up). The OpenSSL headers give every
// function its exact type; tls.cpp calls them through openssl().
#pragma once

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace redlock {

// clang-format off
#define REDLOCK_OPENSSL_FUNCTIONS(X)                                                                  \
  X(OPENSSL_init_ssl) X(TLS_client_method)                                                            \
  X(SSL_CTX_new) X(SSL_CTX_free) X(SSL_CTX_ctrl) X(SSL_CTX_set_options) X(SSL_CTX_set_verify)         \
  X(SSL_CTX_load_verify_locations) X(SSL_CTX_set_default_verify_paths)                                \
  X(SSL_CTX_use_certificate_chain_file) X(SSL_CTX_use_PrivateKey_file) X(SSL_CTX_check_private_key)   \
  X(SSL_new) X(SSL_free) X(SSL_set_bio) X(SSL_ctrl) X(SSL_get0_param) X(SSL_connect) X(SSL_read)      \
  X(SSL_write) X(SSL_get_error) X(SSL_get_verify_result)                                              \
  X(X509_VERIFY_PARAM_set_hostflags) X(X509_VERIFY_PARAM_set1_ip_asc) X(X509_VERIFY_PARAM_set1_host) \
  X(X509_verify_cert_error_string)                                                                    \
  X(ERR_get_error) X(ERR_reason_error_string) X(ERR_error_string_n) X(ERR_clear_error)                \
  X(BIO_new) X(BIO_set_data) X(BIO_get_data) X(BIO_set_init) X(BIO_set_flags) X(BIO_clear_flags)      \
  X(BIO_meth_new) X(BIO_get_new_index) X(BIO_meth_set_write) X(BIO_meth_set_read) X(BIO_meth_set_ctrl)
// clang-format on

struct OpenSsl {
#define REDLOCK_OPENSSL_POINTER(name) decltype(&::name) name;
  REDLOCK_OPENSSL_FUNCTIONS(REDLOCK_OPENSSL_POINTER)
#undef REDLOCK_OPENSSL_POINTER
};

// Loads libssl (and with it libcrypto) on first use; throws a configuration error when it cannot.
const OpenSsl& openssl();

}  // namespace redlock
