#include <doctest/doctest.h>

#include "core/util/glob.hpp"

using redlock::glob_escape;
using redlock::glob_match;

TEST_CASE("globs match as Redis matches them") {
  CHECK(glob_match("*", ""));
  CHECK(glob_match("*", "anything"));
  CHECK(glob_match("job*", "job"));
  CHECK(glob_match("job*", "jobs:nightly"));
  CHECK_FALSE(glob_match("job*", "xjob"));
  CHECK(glob_match("*:nightly", "eu:nightly"));
  CHECK(glob_match("a*b*c", "axxbyyc"));
  CHECK_FALSE(glob_match("a*b*c", "axxbyy"));
  CHECK(glob_match("j?b", "job"));
  CHECK_FALSE(glob_match("j?b", "jb"));
  CHECK(glob_match("[jk]ob", "kob"));
  CHECK_FALSE(glob_match("[^jk]ob", "kob"));
  CHECK(glob_match("[a-c]x", "bx"));
  CHECK_FALSE(glob_match("[a-c]x", "dx"));
  CHECK(glob_match("a\\*", "a*"));
  CHECK_FALSE(glob_match("a\\*", "ab"));
  CHECK(glob_match("a\\?", "a?"));
  CHECK_FALSE(glob_match("a\\?", "ab"));
  CHECK_FALSE(glob_match("abc", "abcd"));
  CHECK(glob_match(std::string_view("a\0*", 3), std::string_view("a\0b", 3)));
}

TEST_CASE("an escaped text matches itself and nothing else") {
  for (const char* text : {"locks:", "a*b", "[x]", "q?", "back\\slash"}) {
    CHECK(glob_match(glob_escape(text), text));
    CHECK_FALSE(glob_match(glob_escape(text) + "x", text));
  }
  CHECK_FALSE(glob_match(glob_escape("a*"), "ab"));
  CHECK(glob_match(glob_escape("a[") + "*", "a[bc"));
}
