#include <doctest/doctest.h>

#include "core/net/cluster.hpp"

using namespace redlock;

TEST_CASE("key slots: CRC16 of the hash tag, as Redis Cluster computes them") {
  CHECK(crc16_xmodem("123456789") == 0x31C3);  // the check value of the specification
  CHECK(key_slot("foo") == 12182);
  CHECK(key_slot("bar") == 5061);
  CHECK(key_slot("hello") == 866);
  CHECK(key_slot("{user1000}.following") == key_slot("user1000"));
  CHECK(key_slot("{user1000}.followers") == key_slot("user1000"));
  CHECK(hash_tag("foo{}{bar}") == "foo{}{bar}");  // an empty tag: the whole key
  CHECK(hash_tag("foo{{bar}}zap") == "{bar");
  CHECK(hash_tag("foo{bar}{zap}") == "bar");
  CHECK(hash_tag("a{b") == "a{b");
  CHECK(key_slot("") == 0);
}

namespace {

Reply node(const char* host, int port) {
  return Reply::array({Reply::string(host), Reply::number(port), Reply::string("id")});
}

}  // namespace

TEST_CASE("the slot map: CLUSTER SLOTS read, MOVED applied") {
  Reply reply = Reply::array({
      Reply::array({Reply::number(0), Reply::number(5460), node("127.0.0.1", 7000), node("127.0.0.1", 7003)}),
      Reply::array({Reply::number(5461), Reply::number(10922), node("127.0.0.1", 7001)}),
      Reply::array({Reply::number(10923), Reply::number(16383), node("::1", 7002), node("127.0.0.1", 7005)}),
  });
  SlotMap map = SlotMap::parse(reply);
  REQUIRE(map.owner(0));
  CHECK(map.owner(0)->port == 7000);
  CHECK(map.owner(0)->replicas == 1);
  CHECK(map.owner(5461)->replicas == 0);
  CHECK(map.owner(16383)->address() == "[::1]:7002");
  CHECK(map.nodes().size() == 5);

  map.move(100, ClusterNode{"127.0.0.1", 7001, 0});
  CHECK(map.owner(100)->port == 7001);
  CHECK(map.owner(99)->port == 7000);
  CHECK(map.owner(101)->port == 7000);
  CHECK(map.owner(5461)->port == 7001);

  CHECK(SlotMap::parse(Reply::array({})).owner(0) == std::nullopt);
  CHECK_THROWS(SlotMap::parse(Reply::error("ERR This instance has cluster support disabled")));
  CHECK_THROWS(SlotMap::parse(Reply::array({Reply::array({Reply::number(0), Reply::number(16384), node("h", 1)})})));
}

TEST_CASE("the slot map: an empty or NULL endpoint is the host asked, \"?\" a node that cannot be reached") {
  Reply reply = Reply::array({
      Reply::array({Reply::number(0), Reply::number(99), node("", 7000), node("127.0.0.1", 7003)}),
      Reply::array({Reply::number(100), Reply::number(199),
                    Reply::array({Reply::nil(), Reply::number(7001), Reply::string("id")})}),
      Reply::array({Reply::number(200), Reply::number(16383), node("?", 7002)}),
  });
  resolve_endpoints(reply, "10.0.0.5");
  SlotMap map = SlotMap::parse(reply);
  CHECK(map.owner(0)->address() == "10.0.0.5:7000");
  CHECK(map.owner(100)->address() == "10.0.0.5:7001");
  CHECK(map.nodes()[1].address() == "127.0.0.1:7003");  // a named host stays
  CHECK(map.owner(0)->reachable());
  CHECK_FALSE(map.owner(200)->reachable());
  Reply other = Reply::error("ERR no");
  resolve_endpoints(other, "10.0.0.5");  // another shape: left as it is
  CHECK(other.str == "ERR no");
}

TEST_CASE("the slot map's masters: each once, in slot order, with their slot ranges") {
  Reply reply = Reply::array({
      Reply::array({Reply::number(0), Reply::number(99), node("127.0.0.1", 7001), node("127.0.0.1", 7004)}),
      Reply::array({Reply::number(100), Reply::number(5460), node("127.0.0.1", 7000)}),
      Reply::array({Reply::number(5461), Reply::number(16383), node("127.0.0.1", 7001)}),
  });
  SlotMap map = SlotMap::parse(reply);
  auto masters = map.masters();
  REQUIRE(masters.size() == 2);
  CHECK(masters[0].address() == "127.0.0.1:7001");
  CHECK(masters[1].address() == "127.0.0.1:7000");
  CHECK(map.slots_of(masters[0]) == std::vector<std::pair<int, int>>{{0, 99}, {5461, 16383}});
  CHECK(map.slots_of(masters[1]) == std::vector<std::pair<int, int>>{{100, 5460}});
  CHECK(map.slots_of(ClusterNode{"127.0.0.1", 7004, 0}).empty());  // a replica serves none
  CHECK(SlotMap::parse(Reply::array({})).masters().empty());
}

TEST_CASE("redirections: MOVED and ASK") {
  auto moved = parse_redirect("MOVED 3999 127.0.0.1:6381");
  REQUIRE(moved);
  CHECK_FALSE(moved->ask);
  CHECK(moved->slot == 3999);
  CHECK(moved->node.address() == "127.0.0.1:6381");
  auto ask = parse_redirect("ASK 1 [::1]:7000");
  REQUIRE(ask);
  CHECK(ask->ask);
  CHECK(ask->node.host == "::1");
  CHECK(parse_redirect("MOVED 3999 :6381")->node.host.empty());
  CHECK_FALSE(parse_redirect("ERR MOVED 1 h:1"));
  CHECK_FALSE(parse_redirect("MOVED 16384 h:1"));
  CHECK_FALSE(parse_redirect("MOVED 1 h"));
  CHECK_FALSE(parse_redirect("CROSSSLOT Keys in request don't hash to the same slot"));
}
