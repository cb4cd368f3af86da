#include "core/net/openssl.hpp"

#include <dlfcn.h>

#include <string>

#include "core/util/error.hpp"

namespace redlock {

namespace {

OpenSsl load() {
  // The library this build was compiled against, then the development link as a last resort.
  void* lib = nullptr;
  std::string why;
  for (const char* name : {"libssl.so.3", "libssl.so"}) {
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
    if (const char* e = dlerror()) why = e;
  }
  if (!lib) config_error("TLS needs OpenSSL 3 (libssl.so.3), which cannot be loaded: " + why);
  OpenSsl api{};
  // dlsym on libssl's handle also finds what its dependency libcrypto defines.
#define REDLOCK_OPENSSL_LOOKUP(name)                                  \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(lib, #name)); \
  if (!api.name) config_error("TLS: the OpenSSL that was loaded has no " #name " (not OpenSSL 3?)");
  REDLOCK_OPENSSL_FUNCTIONS(REDLOCK_OPENSSL_LOOKUP)
#undef REDLOCK_OPENSSL_LOOKUP
  return api;
}

}  // namespace

const OpenSsl& openssl() {
  static const OpenSsl api = load();
  return api;
}

}  // namespace redlock
