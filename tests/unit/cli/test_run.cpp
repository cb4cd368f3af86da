#include <doctest/doctest.h>

#include "cli/usage_error.hpp"

#include "cli/run.hpp"

using namespace redlock;
using namespace redlock::cli;

namespace {

RunOptions running(std::vector<std::string> argv, const std::string& ttl = "30s") {
  RunOptions o;
  o.acquire.name = "job";
  o.acquire.ttl = ttl;
  o.argv = std::move(argv);
  return o;
}

// The usage error that planning O throws; empty when it throws none.
std::string plan_error(const RunOptions& o, const GlobalOptions& global = {}) {
  return usage_error_of([&] { plan_run(o, global); });
}

}  // namespace

TEST_CASE("run's plan: renewal every third of the TTL, the command stopped before the validity ends") {
  RunPlan plan = plan_run(running({"true"}), {});
  CHECK(plan.argv == std::vector<std::string>{"true"});
  CHECK(plan.renew == std::chrono::seconds(10));
  CHECK(plan.kill_after == std::chrono::seconds(5));
  CHECK(plan.signal == SIGTERM);
  // A lock taken with no more validity than the time to stop the command is given back.
  CHECK(plan.acquire.spec.min_validity > plan.kill_after);
  CHECK_FALSE(plan.min_hold);
  CHECK_FALSE(plan.max_hold);
  // --kill-after longer than a third of the TTL is cut to it.
  plan = plan_run(running({"true"}, "3s"), {});
  CHECK(plan.kill_after == std::chrono::seconds(1));
  CHECK(plan.renew == std::chrono::seconds(1));
}

TEST_CASE("run's plan: -c STR runs in $SHELL, -- CMD beats a REDLOCK_COMMAND, not a -c flag") {
  RunOptions o = running({});
  o.command = "echo hi";
  RunPlan plan = plan_run(o, {});
  REQUIRE(plan.argv.size() == 3);
  CHECK(plan.argv[1] == "-c");
  CHECK(plan.argv[2] == "echo hi");
  o.argv = {"date"};
  CHECK(plan_run(o, {}).argv == std::vector<std::string>{"date"});  // -c from the environment
  GlobalOptions global;
  global.words = {"run", "job", "-c", "echo hi"};
  CHECK(plan_error(o, global).find("not both") != std::string::npos);
  CHECK(plan_error(running({})).find("run needs a command") != std::string::npos);
}

TEST_CASE("run's plan: options that cannot work together are usage errors") {
  RunOptions o = running({"true"}, "10s");
  o.renew = "10s";
  CHECK(plan_error(o).find("must be shorter than --ttl") != std::string::npos);
  CHECK(plan_error(running({"true"}, "30ms")).find("too short for run") != std::string::npos);
  o = running({"true"});
  o.min_hold = "2s";
  o.max_hold = "1s";
  CHECK(plan_error(o).find("shorter than --min-hold") != std::string::npos);
  o.max_hold = "3s";
  RunPlan plan = plan_run(o, {});
  CHECK(plan.min_hold == std::chrono::seconds(2));
  CHECK(plan.max_hold == std::chrono::seconds(3));
  o = running({"true"});
  o.signal = "NOPE";
  CHECK(plan_error(o).find("--signal") != std::string::npos);
}
