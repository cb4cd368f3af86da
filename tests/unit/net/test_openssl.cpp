#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "core/net/openssl.hpp"

using namespace redlock;

namespace {

bool libssl_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("/libssl.so") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("libssl is loaded on first use, with every function TLS needs") {
  // Nothing in the unit tests before this one configures a rediss:// server.
  CHECK_FALSE(libssl_mapped());
  const OpenSsl& api = openssl();
  CHECK(libssl_mapped());
#define REDLOCK_CHECK_LOADED(name) CHECK_MESSAGE(static_cast<bool>(api.name), #name);
  REDLOCK_OPENSSL_FUNCTIONS(REDLOCK_CHECK_LOADED)
#undef REDLOCK_CHECK_LOADED
  CHECK(&openssl() == &api);
  // The pointers are the real functions: a client context can be made and freed through them.
  SSL_CTX* ctx = api.SSL_CTX_new(api.TLS_client_method());
  REQUIRE(ctx != nullptr);
  api.SSL_CTX_free(ctx);
}
