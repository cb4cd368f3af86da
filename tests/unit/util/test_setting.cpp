#include <doctest/doctest.h>

#include "core/util/setting.hpp"

using namespace redlock;

TEST_CASE("core names settings in its own words until a front end names them") {
  CHECK(setting_name(Setting::TlsCa) == "the CA file");
  name_settings([](Setting s) { return std::string(s == Setting::TlsCa ? "--tls-ca" : "--other"); });
  CHECK(setting_name(Setting::TlsCa) == "--tls-ca");
  CHECK(setting_name(Setting::Ttl) == "--other");
  name_settings(nullptr);
  CHECK(setting_name(Setting::Ttl) == "the TTL");
}
