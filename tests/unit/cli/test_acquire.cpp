#include <doctest/doctest.h>

#include "cli/usage_error.hpp"

#include <cmath>

#include "cli/commands.hpp"

using namespace redlock;
using namespace redlock::cli;

namespace {

AcquireOptions named(const std::string& name) {
  AcquireOptions o;
  o.name = name;
  return o;
}

// The usage error that planning O throws; empty when it throws none.
std::string plan_error(const AcquireOptions& o, const GlobalOptions& global = {}) {
  return usage_error_of([&] { plan_acquire(o, global); });
}

}  // namespace

TEST_CASE("acquire's plan: the defaults, the prefix, the owner") {
  GlobalOptions global;
  global.prefix = "locks:";
  AcquirePlan plan = plan_acquire(named("job"), global);
  CHECK(plan.spec.keys.lock == "locks:job");
  CHECK(plan.spec.keys.fence == "{locks:job}:redlock:fence");
  CHECK(plan.spec.ttl == std::chrono::seconds(30));
  CHECK(plan.wait.wait);
  CHECK(plan.wait.deadline == kNever);
  CHECK(plan.wait.retry_delay == std::chrono::milliseconds(200));
  CHECK_FALSE(plan.spec.owner.empty());
  CHECK(plan.limit == 0);
  AcquireOptions o = named("job");
  o.owner = "alice";
  o.ttl = "1m30s";
  o.limit = 3;
  plan = plan_acquire(o, {});
  CHECK(plan.spec.owner == "alice");
  CHECK(plan.spec.ttl == std::chrono::seconds(90));
  CHECK(plan.limit == 3);
}

TEST_CASE("acquire's plan: -n and -w exclude each other unless one is a flag and the other a variable") {
  AcquireOptions o = named("job");
  o.nonblock = true;
  o.wait = "5s";
  CHECK(plan_error(o).find("exclude each other") != std::string::npos);
  GlobalOptions global;
  global.words = {"acquire", "job", "-w", "5s"};  // -n came from REDLOCK_NONBLOCK
  AcquirePlan plan = plan_acquire(o, global);
  CHECK(plan.wait.wait);
  CHECK(plan.wait.deadline != kNever);
  global.words = {"acquire", "--nonblock", "job"};  // --wait came from REDLOCK_WAIT
  plan = plan_acquire(o, global);
  CHECK_FALSE(plan.wait.wait);
  global.words = {"acquire", "-n", "--wait=5s", "job"};
  CHECK(plan_error(o, global).find("exclude each other") != std::string::npos);
}

TEST_CASE("acquire's plan: what cannot work is a usage error before any server is asked") {
  AcquireOptions o = named("job");
  o.ttl = "1ms";
  CHECK(plan_error(o).find("leaves no validity") != std::string::npos);
  o = named("job");
  o.drift = std::nan("");
  CHECK(plan_error(o).find("--drift") != std::string::npos);
  o.drift = 0.6;
  CHECK(plan_error(o).find("--drift") != std::string::npos);
  o = named("job");
  o.fence_ttl = "30m";
  CHECK(plan_error(o).find("--fence-ttl") != std::string::npos);
  o = named("job");
  o.retry_delay = "soon";
  CHECK(plan_error(o).find("--retry-delay") != std::string::npos);
  CHECK(plan_error(named("job")).empty());
}
