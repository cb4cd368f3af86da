#include <doctest/doctest.h>

#include <random>

#include "core/net/ip_text.hpp"
#include "core/net/server_url.hpp"
#include "core/util/error.hpp"

using namespace redlock;

namespace {

// BAD is a configuration error whose message never shows the secret "pw" it holds.
void check_refused_without_secret(const char* bad) {
  CAPTURE(bad);
  try {
    parse_server_url(bad);
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Config);
    CHECK(std::string(e.what()).find("pw") == std::string::npos);
  }
}

}  // namespace

TEST_CASE("server URLs: every form of the contract") {
  SUBCASE("redis:// with defaults") {
    auto u = parse_server_url("redis://example.com");
    CHECK(u.scheme == ServerUrl::Scheme::Tcp);
    CHECK(u.host == "example.com");
    CHECK(u.port == 6379);
    CHECK(u.db == 0);
    CHECK_FALSE(u.user);
    CHECK_FALSE(u.password);
  }
  SUBCASE("user, password, port, db") {
    auto u = parse_server_url("redis://alice:s3cret@10.0.0.1:7000/3");
    CHECK(u.host == "10.0.0.1");
    CHECK(u.port == 7000);
    CHECK(u.db == 3);
    CHECK(*u.user == "alice");
    CHECK(*u.password == "s3cret");
  }
  SUBCASE("password without user") {
    auto u = parse_server_url("redis://:pw@h:1");
    CHECK_FALSE(u.user);
    CHECK(*u.password == "pw");
  }
  SUBCASE("an empty password is none: the password file or the environment may give one") {
    auto none = parse_server_url("redis://:@h:1");
    CHECK_FALSE(none.user);
    CHECK_FALSE(none.password);
    auto user_only = parse_server_url("redis://alice:@h:1");
    CHECK(*user_only.user == "alice");
    CHECK_FALSE(user_only.password);
    CHECK(user_only.redacted() == "redis://alice:@h:1");
    CHECK(user_only.without_password() == "redis://alice:@h:1");
  }
  SUBCASE("user information is read as redis-cli reads it: a lone word before '@' is a password") {
    for (const char* text : {"redis://s3cr3t@h:1", "s3cr3t@h:1", "rediss://s3cr3t@h:1", "unix://s3cr3t@/s"}) {
      CAPTURE(text);
      auto u = parse_server_url(text);
      CHECK_FALSE(u.user);
      CHECK(*u.password == "s3cr3t");
      CHECK(u.redacted().find("s3cr3t") == std::string::npos);
      CHECK(u.without_password().find("s3cr3t") == std::string::npos);
    }
    auto both = parse_server_url("u:s3cr3t@h:1");
    CHECK(*both.user == "u");
    CHECK(*both.password == "s3cr3t");
    auto tls = parse_server_url("rediss://:s3cr3t@h:1");
    CHECK_FALSE(tls.user);
    CHECK(*tls.password == "s3cr3t");
  }
  SUBCASE("the form handed to a child parses back to the same server and user, without the password") {
    for (const char* text : {"redis://a%3Ab%40c:pw@h:1/2", "pw@h:1", "unix://u:pw@/s?db=3", "rediss://u:@[::1]:4"}) {
      CAPTURE(text);
      auto u = parse_server_url(text);
      auto back = parse_server_url(u.without_password());
      CHECK(back.address() == u.address());
      CHECK(back.user == u.user);
      CHECK(back.db == u.db);
      CHECK(back.scheme == u.scheme);
      CHECK_FALSE(back.password);
    }
  }
  SUBCASE("percent escapes let a password hold ':' and '@'") {
    auto u = parse_server_url("redis://u:a%3Ab%40c@h");
    CHECK(*u.password == "a:b@c");
  }
  SUBCASE("rediss:// parses as TLS") {
    auto u = parse_server_url("rediss://cache.example:6380");
    CHECK(u.scheme == ServerUrl::Scheme::Tls);
    CHECK(u.port == 6380);
  }
  SUBCASE("unix sockets, with credentials and db") {
    auto u = parse_server_url("unix://bob:pw@/run/redis/redis.sock?db=2");
    CHECK(u.scheme == ServerUrl::Scheme::Unix);
    CHECK(u.path == "/run/redis/redis.sock");
    CHECK(u.db == 2);
    CHECK(*u.user == "bob");
  }
  SUBCASE("bare HOST:PORT") {
    auto u = parse_server_url("127.0.0.1:7001");
    CHECK(u.scheme == ServerUrl::Scheme::Tcp);
    CHECK(u.host == "127.0.0.1");
    CHECK(u.port == 7001);
  }
  SUBCASE("IPv6 in brackets") {
    auto u = parse_server_url("redis://[::1]:7002/1");
    CHECK(u.host == "::1");
    CHECK(u.port == 7002);
    CHECK(u.db == 1);
    auto bare = parse_server_url("[fe80::1]:6000");
    CHECK(bare.host == "fe80::1");
  }
}

TEST_CASE("server URLs: mistakes are configuration errors that never show the password") {
  for (const char* bad : {"",
                          "http://h",
                          "redis://",
                          "redis://h:0",
                          "redis://h:65536",
                          "redis://h:x",
                          "redis://h:",
                          "redis://h/x",
                          "redis://h/-1",
                          "unix://relative/path",
                          "unix:///p?db=x",
                          "unix:///p?foo=1",
                          "redis://[::1",
                          "redis://[zz]:1",
                          "redis://::1:6379",
                          "h:1/2",
                          "redis://u:pw@h:99999",
                          "redis://u:%zz@h",
                          "redis://u:%4@h",
                          "redis://u:pw@h:1?db=2",
                          "redis://pw@h:99999",
                          "pw@h:1/2",
                          "unix://pw@relative",
                          "rediss://h#x",
                          "h:1?x",
                          "unix:///p?db=2&x=1"}) {
    check_refused_without_secret(bad);
  }
}

TEST_CASE("server URLs: a query or fragment is named as what is wrong") {
  auto message = [](const char* url) {
    try {
      parse_server_url(url);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(message("redis://h:7001?db=1") ==
        "unexpected '?db=1' in server URL 'redis://h:7001?db=1' (a query is for unix:// only, as ?db=N; give the "
        "database as redis://HOST:PORT/DB)");
  CHECK(message("redis://u:p?w@h:1/2#x").find("unexpected '#x' in server URL 'redis://u:***@h:1/2#x'") == 0);
  CHECK(message("redis://p?w@h:1/2#x").find("unexpected '#x' in server URL 'redis://***@h:1/2#x'") == 0);
  CHECK(message("unix:///s?db=2&x=1").find("unknown query 'db=2&x=1'") == 0);
  // A password may hold them: they count only after the '@'.
  CHECK(parse_server_url("redis://u:p?w#d@h:1").password == "p?w#d");
}

TEST_CASE("server URLs: a scheme without its slashes is a malformed URL") {
  auto message = [](const char* url) {
    try {
      parse_server_url(url);
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::Config);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  for (const char* bad :
       {"redis:/host", "redis:host", "redis//host", "redis:/host:6379/1", "redis:host:6379", "redis:"}) {
    CAPTURE(bad);
    CHECK(message(bad) == "malformed server URL '" + std::string(bad) + "' (expected redis://HOST[:PORT][/DB])");
  }
  CHECK(message("rediss:/h") == "malformed server URL 'rediss:/h' (expected rediss://HOST[:PORT][/DB])");
  CHECK(message("unix:/run/redis.sock") ==
        "malformed server URL 'unix:/run/redis.sock' (expected unix:///PATH[?db=N])");
  // A host named like a scheme, and a user named so, are what they say.
  CHECK(parse_server_url("redis:6379").host == "redis");
  CHECK(parse_server_url("unix:7000").port == 7000);
  // A scheme that lost a slash before user information is malformed too, shown without the password.
  for (const char* bad : {"redis:/u:pw@h:1", "redis:/pw@h:1", "rediss:/pw@h", "redis//u:pw@h:1"}) {
    check_refused_without_secret(bad);
    CHECK(message(bad).starts_with("malformed server URL '"));
  }
  CHECK(message("redis:/u:pw@h:1") == "malformed server URL 'redis:***@h:1' (expected redis://HOST[:PORT][/DB])");
  // The bare USER:PASSWORD@HOST:PORT form with the user "redis".
  CHECK(*parse_server_url("redis:pw@h:1").user == "redis");
  CHECK(*parse_server_url("redis:pw@h:1").password == "pw");
  CHECK(parse_server_url("redis:pw@h:1").user == "redis");
  // A host is a name or an address: "-S=h:1" (a mistyped --servers=) is no host "=h".
  for (const char* bad : {"=127.0.0.1:7501", "redis://h=st:1", "redis://h%20x:1", "h~1:2", "cluster://a:1,b=c:2"}) {
    CAPTURE(bad);
    CHECK(message(bad).starts_with("bad character in host of server URL"));
  }
  CHECK(parse_server_url("my-host_1.example.com:7").host == "my-host_1.example.com");
  // Nor does a host name, or a part of one, begin with '-' ("-S -x": an option where a server was meant).
  for (const char* bad : {"-x", "-x:6379", "redis://-h:1", "a.-b:1", "sentinel://s:1,-t:2/m"}) {
    CAPTURE(bad);
    CHECK(message(bad).starts_with("bad host in server URL"));
  }
  CHECK(parse_server_url("a-b.c-d:1").host == "a-b.c-d");
  // What is missing is named, before anything that follows it.
  CHECK(message("redis:///0").find("missing host") == 0);
  // A database no server can have: negative, not a number, beyond any int.
  for (const char* bad : {"redis://h/-1", "redis://h/x", "redis://h/1.5", "redis://h/4294967296",
                          "redis://h/2147483648", "unix:///s?db=-2"}) {
    CAPTURE(bad);
    CHECK(message(bad).find("bad db") == 0);
  }
}

TEST_CASE("server URLs: redacted form hides the password") {
  CHECK(parse_server_url("redis://alice:s3cret@h:1/2").redacted() == "redis://alice:***@h:1/2");
  CHECK(parse_server_url("redis://:s3cret@h").redacted() == "redis://***@h:6379");
  CHECK(parse_server_url("redis://s3cret@h").redacted() == "redis://***@h:6379");
  CHECK(parse_server_url("s3cret@h:5").redacted() == "redis://***@h:5");
  CHECK(parse_server_url("unix://s3cret@/s").redacted() == "unix://***@/s");
  // A user name is shown, escaped where it would end the user information or a line.
  CHECK(parse_server_url("redis://a%40b%0A:pw@h:1").redacted() == "redis://a%40b%0A:***@h:1");
  CHECK(parse_server_url("rediss://h").redacted() == "rediss://h:6379");
  CHECK(parse_server_url("[::1]:7").redacted() == "redis://[::1]:7");
  CHECK(parse_server_url("unix://u:p@/s?db=3").redacted() == "unix://u:***@/s?db=3");
}

TEST_CASE("server URLs: the same address twice is refused") {
  auto list = [](std::initializer_list<const char*> texts) {
    std::vector<ServerUrl> out;
    for (auto t : texts) out.push_back(parse_server_url(t));
    return out;
  };
  CHECK_NOTHROW(check_distinct_addresses(list({"h:1", "h:2", "unix:///a"})));
  CHECK_THROWS_AS(check_distinct_addresses(list({"h:1", "redis://h:1/3"})), Error);
  CHECK_THROWS_AS(check_distinct_addresses(list({"[::1]:5", "redis://[0:0::1]:5"})), Error);
  CHECK_THROWS_AS(check_distinct_addresses(list({"H:1", "h:1"})), Error);
  CHECK_THROWS_AS(check_distinct_addresses(list({"unix:///a", "unix://u:p@/a"})), Error);
}

TEST_CASE("server lists split on commas and whitespace") {
  CHECK(split_server_list("a:1,b:2  c:3\n\td:4,,") == std::vector<std::string>{"a:1", "b:2", "c:3", "d:4"});
  CHECK(split_server_list(" , ").empty());
  // A separator inside a password stays there: the piece after it has an '@' and no scheme.
  CHECK(split_server_list("redis://:hunter,2@h:1, redis://u:a b,,c@h:2 h:3") ==
        std::vector<std::string>{"redis://:hunter,2@h:1", "redis://u:a b,,c@h:2", "h:3"});
  // A URL that is a server on its own keeps its place ("u:p@b:2" is then a bare server with a user
  // and a password).
  CHECK(split_server_list("redis://a:1,u:p@b:2") == std::vector<std::string>{"redis://a:1", "u:p@b:2"});
  auto url = parse_server_url(split_server_list("rediss://u:p, q@h:7")[0]);
  CHECK(*url.password == "p, q");
  CHECK(url.redacted().find("p, q") == std::string::npos);
}

TEST_CASE("an IP address is written as inet_ntop writes it") {
  std::mt19937 rng(11);
  for (int i = 0; i < 2000; ++i) {
    in_addr a4{};
    a4.s_addr = static_cast<std::uint32_t>(rng());
    if (i < 4) a4.s_addr = i == 0 ? 0 : i == 1 ? 0xffffffffu : htonl(0x7f000001u) + static_cast<unsigned>(i - 2);
    char expected[INET_ADDRSTRLEN];
    REQUIRE(inet_ntop(AF_INET, &a4, expected, sizeof expected));
    CHECK(redlock::ip_text(a4) == expected);
  }
  in6_addr a6{};
  REQUIRE(inet_pton(AF_INET6, "0:0::1", &a6) == 1);
  CHECK(redlock::ip_text(a6) == "::1");
}

TEST_CASE("server URLs: a Sentinel group is one member") {
  SUBCASE("sentinels, master name, defaults") {
    auto u = parse_server_url("sentinel://s1,s2:26380,[::1]:7/mymaster");
    CHECK(u.is_sentinel());
    REQUIRE(u.sentinels.size() == 3);
    CHECK(u.sentinels[0].host == "s1");
    CHECK(u.sentinels[0].port == 26379);
    CHECK(u.sentinels[1].port == 26380);
    CHECK(u.sentinels[2].host == "::1");
    CHECK(u.master_name == "mymaster");
    CHECK(u.db == 0);
    CHECK_FALSE(u.sentinel_password_file);
    CHECK(u.redacted() == "sentinel://s1:26379,s2:26380,[::1]:7/mymaster");
  }
  SUBCASE("credentials are the master's; the sentinels' password comes from a file") {
    auto u = parse_server_url("sentinel://alice:pw@s1:1,s2:2/m?db=3&sentinel_password_file=/run/s%2Cp");
    CHECK(*u.user == "alice");
    CHECK(*u.password == "pw");
    CHECK(u.db == 3);
    CHECK(*u.sentinel_password_file == "/run/s,p");
    CHECK(u.redacted() == "sentinel://alice:***@s1:1,s2:2/m?db=3&sentinel_password_file=/run/s,p");
    CHECK(u.without_password() == "sentinel://alice:@s1:1,s2:2/m?db=3&sentinel_password_file=/run/s,p");
    u.sentinel_password = "spw";
    CHECK(u.redacted().find("spw") == std::string::npos);
    auto master = u.master_at("10.0.0.5", 6380);
    CHECK(master.scheme == ServerUrl::Scheme::Tcp);
    CHECK(master.redacted() == "redis://alice:***@10.0.0.5:6380/3");
    auto sentinel = u.sentinel(1);
    CHECK(sentinel.redacted() == "redis://***@s2:2");
    CHECK(u.sentinel_address(1) == "s2:2");
    CHECK(*sentinel.password == "spw");
    CHECK_FALSE(sentinel.user);
  }
  SUBCASE("sentinel+tls:// reaches the sentinels and the master over TLS") {
    auto u = parse_server_url("sentinel+tls://pw@s1:1,s2:2/m");
    CHECK(u.is_sentinel());
    CHECK(u.sentinel_tls);
    CHECK(u.uses_tls());
    CHECK_FALSE(parse_server_url("sentinel://s1/m").uses_tls());
    CHECK(u.redacted() == "sentinel+tls://***@s1:1,s2:2/m");
    CHECK(u.without_password() == "sentinel+tls://s1:1,s2:2/m");
    CHECK(parse_server_url(u.without_password()).sentinel_tls);
    CHECK(u.master_at("10.0.0.5", 6380).scheme == ServerUrl::Scheme::Tls);
    CHECK(u.sentinel(0).scheme == ServerUrl::Scheme::Tls);
    // The same group whichever way it is reached: listed both ways, it is listed twice.
    CHECK(u.address() == parse_server_url("sentinel://s2:2,s1:1/m").address());
    CHECK(split_server_list("sentinel+tls://s1,s2/m,redis://c:3") ==
          std::vector<std::string>{"sentinel+tls://s1,s2/m", "redis://c:3"});
    check_refused_without_secret("sentinel+tls:/s1/m");
  }
  SUBCASE("sentinel+rediss:// asks plain sentinels and reaches the master over TLS") {
    auto u = parse_server_url("sentinel+rediss://pw@s1:1,s2:2/m?db=2");
    CHECK(u.is_sentinel());
    CHECK_FALSE(u.sentinel_tls);
    CHECK(u.master_tls);
    CHECK(u.uses_tls());
    CHECK(u.redacted() == "sentinel+rediss://***@s1:1,s2:2/m?db=2");
    auto again = parse_server_url(u.without_password());
    CHECK((again.master_tls && !again.sentinel_tls));
    CHECK(u.master_at("10.0.0.5", 6380).redacted() == "rediss://***@10.0.0.5:6380/2");
    CHECK(u.sentinel(0).scheme == ServerUrl::Scheme::Tcp);
    CHECK(u.address() == parse_server_url("sentinel+tls://s2:2,s1:1/m").address());
    CHECK(split_server_list("sentinel+rediss://s1,s2/m,redis://c:3") ==
          std::vector<std::string>{"sentinel+rediss://s1,s2/m", "redis://c:3"});
    check_refused_without_secret("sentinel+rediss:/s1/m");
    check_refused_without_secret("sentinel+redis://pw@s1/m");
  }
  SUBCASE("mistakes are configuration errors that never show the password") {
    for (const char* bad : {"sentinel://pw@s1", "sentinel://pw@s1/", "sentinel://pw@/m", "sentinel://pw@s1,/m",
                            "sentinel://pw@s1:0/m", "sentinel://pw@s1/m?x=1", "sentinel://pw@s1/m?db=x",
                            "sentinel://pw@s1/m/n", "sentinel:/s1/m", "sentinel://pw@s1/m,h:6379"}) {
      check_refused_without_secret(bad);
    }
  }
  SUBCASE("its sentinels continue until the next item with a scheme") {
    CHECK(split_server_list("redis://a:1,sentinel://s1,s2:5/m1,redis://b:2 sentinel://t1/m2 t2,c:3") ==
          std::vector<std::string>{"redis://a:1", "sentinel://s1,s2:5/m1", "redis://b:2", "sentinel://t1/m2,t2,c:3"});
    auto u = parse_server_url(split_server_list("sentinel://:p,q@s1,s2/m")[0]);
    CHECK(*u.password == "p,q");
    CHECK(u.sentinels.size() == 2);
  }
  SUBCASE("one group twice is one vote twice") {
    auto list = [](std::initializer_list<const char*> texts) {
      std::vector<ServerUrl> out;
      for (auto t : texts) out.push_back(parse_server_url(t));
      return out;
    };
    CHECK_NOTHROW(check_distinct_addresses(list({"sentinel://s1,s2/m1", "sentinel://s1,s2/m2", "s1:26379"})));
    CHECK_THROWS_AS(check_distinct_addresses(list({"sentinel://s1,s2/m", "sentinel://s2,s1/m"})), Error);
    CHECK_THROWS_AS(check_distinct_addresses(list({"sentinel://s1,s2/m", "sentinel://s3,S2:26379/m"})), Error);
  }
}

TEST_CASE("server URLs: a Redis Cluster is one member") {
  SUBCASE("seeds, default port, credentials") {
    auto u = parse_server_url("cluster://alice:pw@n1,n2:7001,[::1]:7002");
    CHECK(u.is_cluster());
    REQUIRE(u.seeds.size() == 3);
    CHECK(u.seeds[0].host == "n1");
    CHECK(u.seeds[0].port == 6379);
    CHECK(u.seeds[1].port == 7001);
    CHECK(u.seeds[2].host == "::1");
    CHECK(u.db == 0);
    CHECK(u.redacted() == "cluster://alice:***@n1:6379,n2:7001,[::1]:7002");
    CHECK(u.without_password() == "cluster://alice:@n1:6379,n2:7001,[::1]:7002");
    CHECK(u.address() == "cluster:::1:7002,n1:6379,n2:7001");
    auto seed = u.seed(1);
    CHECK(seed.redacted() == "redis://alice:***@n2:7001");
    CHECK(parse_server_url("cluster://n1?db=0").db == 0);
    CHECK(seed.scheme == ServerUrl::Scheme::Tcp);
  }
  SUBCASE("cluster+tls: every node over TLS") {
    auto u = parse_server_url("cluster+tls://pw@n1,n2:7001");
    CHECK(u.is_cluster());
    CHECK(u.cluster_tls);
    CHECK(u.uses_tls());
    CHECK(u.redacted() == "cluster+tls://***@n1:6379,n2:7001");
    CHECK(u.seed(1).scheme == ServerUrl::Scheme::Tls);
    CHECK(u.address() == parse_server_url("cluster://n1,n2:7001").address());
    CHECK(split_server_list("cluster+tls://a,b,redis://c") ==
          std::vector<std::string>{"cluster+tls://a,b", "redis://c"});
  }
  SUBCASE("mistakes are configuration errors that never show the password; a db other than 0 is one") {
    for (const char* bad : {"cluster://pw@", "cluster://pw@n1,", "cluster://pw@n1:0", "cluster://pw@n1/0",
                            "cluster://pw@n1?db=1", "cluster://pw@n1?x=1", "cluster://pw@n1#x", "cluster:/n1"}) {
      check_refused_without_secret(bad);
    }
  }
  SUBCASE("its seeds continue until the next item with a scheme") {
    CHECK(split_server_list("redis://a:1,cluster://n1,n2:5,redis://b:2 cluster://m1 m2,c:3") ==
          std::vector<std::string>{"redis://a:1", "cluster://n1,n2:5", "redis://b:2", "cluster://m1,m2,c:3"});
    auto u = parse_server_url(split_server_list("cluster://:p,q@n1,n2")[0]);
    CHECK(*u.password == "p,q");
    CHECK(u.seeds.size() == 2);
  }
  SUBCASE("one cluster twice, or one of its nodes beside it, is one vote twice") {
    auto list = [](std::initializer_list<const char*> texts) {
      std::vector<ServerUrl> out;
      for (auto t : texts) out.push_back(parse_server_url(t));
      return out;
    };
    CHECK_NOTHROW(check_distinct_addresses(list({"cluster://n1,n2", "cluster://m1,m2", "n3:6379"})));
    CHECK_THROWS_AS(check_distinct_addresses(list({"cluster://n1,n2", "cluster://n2:6379,n1"})), Error);
    CHECK_THROWS_AS(check_distinct_addresses(list({"cluster://n1,n2", "cluster://n3,N2:6379"})), Error);
    CHECK_THROWS_AS(check_distinct_addresses(list({"redis://n2", "cluster://n1,n2"})), Error);
    CHECK_THROWS_AS(check_distinct_addresses(list({"cluster://n1,n2:7000", "n2:7000"})), Error);
  }
}
