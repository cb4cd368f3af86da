#include <doctest/doctest.h>
#include <openssl/sha.h>

#include <cstdio>
#include <string>

#include "core/lock/scripts.hpp"

using namespace redlock;

namespace {
std::string sha1_hex(std::string_view body) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(body.data()), body.size(), digest);
  std::string hex;
  char buf[3];
  for (unsigned char b : digest) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    hex += buf;
  }
  return hex;
}
}  // namespace

TEST_CASE("each embedded script's SHA1 is the SHA1 of the body sent with EVAL") {
  for (const Script* s : {&kAcquireScript, &kReleaseScript, &kExtendScript, &kHealScript, &kFenceScript, &kStatusScript,
                          &kListScript, &kProbeScript, &kMajorityScript, &kJoinScript, &kStayScript, &kLeaveScript,
                          &kQueueScript, &kWithdrawScript, &kReadersScript, &kRejoinScript}) {
    CAPTURE(s->name);
    CHECK(s->body.size() > 50);
    CHECK(s->sha1 == sha1_hex(s->body));
  }
}
