#include <doctest/doctest.h>

#include "core/net/sentinel.hpp"

using namespace redlock;

namespace {

// One entry of SENTINEL REPLICAS' answer, from its field and value pairs.
Reply entry(std::initializer_list<const char*> fields) {
  std::vector<Reply> e;
  for (const char* f : fields) e.push_back(Reply::string(f));
  return Reply::array(std::move(e));
}

}  // namespace

TEST_CASE("promotable_replicas: replicas seen replicating, down ones however long") {
  const Reply up = entry({"flags", "slave", "role-reported", "slave", "master-host", "10.0.0.1"});
  const Reply down_a_while = entry({"flags", "s_down,slave", "role-reported", "slave", "master-host", "10.0.0.1",
                                    "s-down-time", "5000", "down-after-milliseconds", "1000"});
  // A stopped replica comes back with a link that looks fresh, and Sentinel may promote it.
  const Reply down_long = entry({"flags", "s_down,slave", "role-reported", "slave", "master-host", "10.0.0.1",
                                 "s-down-time", "100001", "down-after-milliseconds", "1000"});
  const Reply never_read = entry({"flags", "slave", "role-reported", "slave", "master-host", "?"});
  const Reply a_master = entry({"flags", "slave", "role-reported", "master", "master-host", "10.0.0.1"});
  CHECK(promotable_replicas(Reply::array({up, down_a_while, down_long})) == 3);
  CHECK(promotable_replicas(Reply::array({never_read, a_master})) == 0);
  CHECK(promotable_replicas(Reply::array({})) == 0);
  CHECK(promotable_replicas(Reply::error("NOPERM")) == 0);
}
