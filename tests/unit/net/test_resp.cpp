#include <doctest/doctest.h>

#include <hiredis/hiredis.h>

#include <random>

#include "core/net/resp.hpp"

using namespace redlock;

TEST_CASE("commands are encoded binary-safe") {
  std::string out;
  std::string binary("a\0b\r\n", 5);
  encode_command({"SET", binary, "x y"}, out);
  CHECK(out == std::string("*3\r\n$3\r\nSET\r\n$5\r\na\0b\r\n\r\n$3\r\nx y\r\n", 33));
}

TEST_CASE("the encoding is RESP's, as hiredis writes it, appended to what is there") {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::string> argv(1 + rng() % 30);
    std::vector<const char*> ptrs;
    std::vector<std::size_t> lens;
    for (auto& arg : argv) {
      arg.resize(rng() % (round % 10 == 0 ? 5000 : 40));
      for (auto& c : arg) c = static_cast<char>(rng());
      ptrs.push_back(arg.data());
      lens.push_back(arg.size());
    }
    char* expected = nullptr;
    const int len = redisFormatCommandArgv(&expected, static_cast<int>(argv.size()), ptrs.data(), lens.data());
    REQUIRE(len > 0);
    std::string out = "before";
    encode_command(argv, out);
    CHECK(out == "before" + std::string(expected, static_cast<std::size_t>(len)));
    redisFreeCommand(expected);
  }
}

TEST_CASE("a head of words and a list are encoded as the one list they make") {
  const std::vector<std::string> argv{"2", "lock", std::string("a\0b", 3), ""};
  std::string joined = "x";
  encode_command({"EVALSHA", "0123abcd", "2", "lock", std::string("a\0b", 3), ""}, joined);
  std::string parts = "x";
  encode_command({"EVALSHA", "0123abcd"}, argv, parts);
  CHECK(parts == joined);
  std::string none;
  encode_command({}, argv, none);
  CHECK(none == "*4\r\n$1\r\n2\r\n$4\r\nlock\r\n$3\r\n" + std::string("a\0b", 3) + "\r\n$0\r\n\r\n");
}

TEST_CASE("long argument lists are encoded too") {
  std::vector<std::string> argv(40, "k");
  std::string out;
  encode_command(argv, out);
  CHECK(out.rfind("*40\r\n", 0) == 0);
}

TEST_CASE("replies parse incrementally, nested and typed") {
  ReplyReader r;
  std::string wire = "*4\r\n:1\r\n:17\r\n:-1\r\n+string\r\n$-1\r\n-ERR boom\r\n";
  r.feed(wire.data(), 7);  // a partial reply yields nothing yet
  CHECK_FALSE(r.next());
  r.feed(wire.data() + 7, wire.size() - 7);
  auto a = r.next();
  REQUIRE(a);
  REQUIRE(a->type == Reply::Type::Array);
  REQUIRE(a->elements.size() == 4);
  CHECK(a->elements[1].as_integer() == 17);
  CHECK(a->elements[2].as_integer() == -1);
  CHECK(a->elements[3].str == "string");
  auto nil = r.next();
  REQUIRE(nil);
  CHECK(nil->type == Reply::Type::Nil);
  auto err = r.next();
  REQUIRE(err);
  CHECK(err->is_error());
  CHECK(err->str == "ERR boom");
  CHECK_FALSE(r.next());
}

TEST_CASE("a stream that is not RESP is a protocol error") {
  ReplyReader r;
  std::string junk = "HTTP/1.1 400 Bad Request\r\n";
  r.feed(junk.data(), junk.size());
  CHECK_THROWS(r.next());
}

TEST_CASE("integers inside strings") {
  CHECK(Reply::string("42").as_integer() == 42);
  CHECK_FALSE(Reply::string("4x").as_integer());
  CHECK_FALSE(Reply::string("").as_integer());
  CHECK_FALSE(Reply::nil().as_integer());
}
