#include "core/util/setting.hpp"

namespace redlock {

namespace {

std::string (*g_namer)(Setting) = nullptr;

std::string plain_name(Setting s) {
  switch (s) {
    case Setting::Ttl:
      return "the TTL";
    case Setting::Timeout:
      return "the timeout";
    case Setting::TlsCa:
      return "the CA file";
    case Setting::TlsCert:
      return "the client certificate";
    case Setting::TlsKey:
      return "the client key";
    case Setting::TlsServerName:
      return "the TLS server name";
  }
  return "a setting";
}

}  // namespace

std::string setting_name(Setting s) {
  return g_namer ? g_namer(s) : plain_name(s);
}

void name_settings(std::string (*namer)(Setting)) {
  g_namer = namer;
}

}  // namespace redlock
