// `doctor`: whether a set of servers suits Redlock. The facts are gathered over the Network
// interface (every failure a value: a dead server is a fact like any other); the verdicts are pure
// functions of those facts, so that each rule is unit-tested without a server.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/lock/quorum.hpp"
#include "core/net/network.hpp"
#include "core/util/clock.hpp"

namespace redlock {

// How a check came out, from best to worst. Unknown means a server would not say (an ACL that
// denies INFO or CONFIG): it is reported, and does not count as a warning.
enum class Verdict { Ok, Unknown, Warn, Fail };

std::string_view verdict_name(Verdict v);
Verdict worst(Verdict a, Verdict b);

// The "field:value" lines of an INFO reply; section headers and blank lines are skipped.
std::map<std::string, std::string, std::less<>> parse_info(std::string_view text);

// One answer to TIME, placed on our monotonic clock: the server read its clock somewhere between
// SENT and SENT + ROUND_TRIP, so the middle is the best guess, give or take half the round trip.
struct ClockSample {
  std::int64_t server_us = 0;  // the server's wall clock, microseconds since the epoch
  TimePoint sent{};
  Duration round_trip{};
};

struct ClockSkew {
  Duration skew{};         // between the clock furthest ahead and the one furthest behind
  Duration uncertainty{};  // how far off that measurement may be (half of each round trip)
  std::size_t ahead = 0;   // server indexes
  std::size_t behind = 0;
  // Each server's clock against the median server's; empty for servers without a sample.
  std::vector<std::optional<Duration>> offsets;
};

// Nothing when fewer than two servers gave a sample.
std::optional<ClockSkew> measure_skew(const std::vector<std::optional<ClockSample>>& samples);

// What the seed sentinels of a Sentinel member said: SENTINEL CKQUORUM (can they reach the quorum
// that detects a failure and the majority that authorises a failover?) and SENTINEL REPLICAS.
struct SentinelFacts {
  std::size_t listed = 0;              // the sentinels its URL lists
  std::size_t answered = 0;            // those that answered at all (a refusal is an answer)
  std::vector<std::string> silent;     // "HOST:PORT: why", each that did not
  std::size_t quorum_ok = 0;           // those whose CKQUORUM said OK
  std::vector<std::string> no_quorum;  // "HOST:PORT: NOQUORUM …", each that said it cannot be reached
  std::vector<std::string> refused;    // "HOST:PORT: error", each that answered CKQUORUM otherwise
  // The most replicas one sentinel could promote (the rule --member-wait's default follows);
  // none while no sentinel told.
  std::optional<int> replicas;
};

// What one server told us: a configured member, or one master of a Cluster member (each of them
// can own a lock's slot, so each is checked as a server is).
struct ServerFacts {
  std::string server;            // redacted URL (of the member, for a Cluster member's master)
  bool sentinel_member = false;  // a Sentinel group: its master is meant to have replicas
  bool cluster_member = false;   // a master of a Cluster member, as its slot map names it
  std::string node;              // that master's HOST:PORT
  // The configured member this is (a Cluster member's masters share it): members, not their
  // masters, are the votes the quorum counts. Nothing: a member of its own, at its own index.
  std::optional<std::size_t> member;
  bool reachable = false;                 // answered a command at all (an ACL refusal is an answer)
  bool duplicate = false;                 // the same server as another configured one
  std::string error;                      // why not reachable, or the duplicate's explanation
  std::optional<Duration> first_latency;  // the first request, connect included
  std::optional<Duration> round_trip;     // the best round trip on the open connection

  std::optional<std::string> role;  // ROLE: master, slave, sentinel
  std::size_t replicas = 0;         // a master's connected replicas
  std::string master_of;            // a replica's master, host:port
  std::string wait_error;           // a Sentinel member's master refused WAIT
  std::string role_error;

  std::optional<std::string> run_id;
  std::optional<std::string> version;
  std::optional<std::int64_t> uptime_s;
  std::string info_error;  // INFO server

  std::optional<bool> aof;
  std::string persistence_error;  // INFO persistence
  std::optional<std::string> appendfsync;
  std::string config_error;  // CONFIG GET appendfsync

  std::optional<bool> cluster_enabled;  // INFO cluster
  std::string cluster_error;
  std::optional<std::string> cluster_state;  // CLUSTER INFO, a Cluster member's master: "ok" or "fail"
  std::string cluster_state_error;
  std::optional<std::string> maxmemory_policy;  // CONFIG GET maxmemory*
  std::optional<std::int64_t> maxmemory;        // bytes; 0: no limit
  std::string memory_error;

  std::optional<ClockSample> clock;
  std::string clock_error;

  // The ACL probe: true once every probe request was answered; DENIED lists the refusals.
  bool probed = false;
  std::string probe_error;  // why the probe did not finish (timeout, connection lost)
  std::vector<std::string> denied;
  bool probe_key_left = false;  // the probe's lock, owner record or fencing counter is still there

  // The fencing counters under the prefix (SCAN); a lower bound unless the scan was complete.
  std::optional<std::size_t> fence_keys;
  bool fence_scan_complete = false;
  std::string fence_scan_error;  // why they could not be counted

  std::optional<SentinelFacts> sentinels;  // a Sentinel member whose sentinels were asked
};

// One server's line under a check.
struct ServerNote {
  std::size_t server = 0;
  Verdict verdict = Verdict::Ok;
  std::string text;
};

struct Check {
  // reachable, fault-tolerance, master, distinct, persistence, clock, uptime, acl, fences, latency,
  // cluster, eviction, member-wait, sentinel
  std::string name;
  Verdict verdict = Verdict::Ok;
  std::string summary;
  std::string advice;  // why it matters and what to do; empty when all is well
  std::vector<ServerNote> notes;
};

struct DoctorOptions {
  Duration ttl = std::chrono::seconds(30);  // the longest TTL the locks use
  Duration timeout = std::chrono::milliseconds(100);
  double drift = 0.01;
  std::string probe_key;  // a throw-away lock key; see doctor_probe_key()
  std::string prefix;     // --prefix: whose fencing counters are counted
  // --member-wait when given: the replicas WAIT must confirm each vote on.
  std::optional<int> member_wait_replicas;
  // Whether a Sentinel or Cluster member's votes wait for WAIT (all but --member-wait 0).
  bool member_wait() const { return member_wait_replicas.value_or(1) > 0; }
};

struct DoctorReport {
  std::vector<ServerFacts> servers;
  std::optional<ClockSkew> skew;
  std::vector<Check> checks;
  Tally reachable;  // yes: answered; failed: did not
  bool no_quorum = false;
  Verdict verdict = Verdict::Ok;
};

// The bounds of the count of fencing counters: SCAN rounds of COUNT kFenceScanCount (so at most
// kFenceScanRounds × kFenceScanCount keys looked at per server), and no new round after the budget.
inline constexpr int kFenceScanRounds = 100;
inline constexpr int kFenceScanCount = 1000;
inline constexpr Duration kFenceScanBudget = std::chrono::seconds(2);

// The checks, each a pure function of the facts.
Check check_reachable(const std::vector<ServerFacts>& servers);
// How many of SERVERS may fail with locks still taken: a warning when that is none (one or two
// servers) or no more than one server fewer would give (an even number).
Check check_fault_tolerance(std::size_t servers);
Check check_master(const std::vector<ServerFacts>& servers);
Check check_distinct(const std::vector<ServerFacts>& servers);
Check check_persistence(const std::vector<ServerFacts>& servers, const DoctorOptions& options);
Check check_clock(const std::vector<ServerFacts>& servers, const std::optional<ClockSkew>& skew,
                  const DoctorOptions& options);
Check check_uptime(const std::vector<ServerFacts>& servers, const DoctorOptions& options);
Check check_acl(const std::vector<ServerFacts>& servers, const std::string& probe_key);
// A server listed as a standalone master that is a node of a Redis Cluster: it holds a part of
// the keys only, and fails writes to the others with MOVED. A master of a Cluster member whose
// cluster_state is not ok: the cluster refuses every command while it is not.
Check check_cluster(const std::vector<ServerFacts>& servers);
// A server that may evict keys (maxmemory-policy other than noeviction): an evicted lock is a
// lost lock. Only a warning while no maxmemory is set.
Check check_eviction(const std::vector<ServerFacts>& servers);
Check check_member_wait(const std::vector<ServerFacts>& servers, const DoctorOptions& options);
// A Sentinel member whose sentinels cannot fail its master over (none answers, or CKQUORUM says the
// quorum or the majority cannot be reached) fails; one with a seed sentinel silent, or without a
// replica the sentinels could promote (a failover would lose its locks), warns. One note per
// Sentinel member, whatever its verdict; ok without any.
Check check_sentinel(const std::vector<ServerFacts>& servers);
// How many fencing counters there are under the prefix, one per NAME locked within its expiry; a
// warning where TIME is refused, since counters never expire there.
Check check_fences(const std::vector<ServerFacts>& servers, const std::string& prefix);
Check check_latency(const std::vector<ServerFacts>& servers, const DoctorOptions& options);

// The SCAN pattern that finds the fencing counters of the locks under PREFIX (and perhaps more:
// see fence_key_under), PREFIX's glob characters escaped.
std::string fence_key_pattern(const std::string& prefix);
// Whether KEY is the fencing counter of a lock whose key starts with PREFIX ("{KEY}:redlock:fence",
// or "KEY:redlock:fence" for a KEY with a hash tag of its own).
bool fence_key_under(std::string_view key, std::string_view prefix);

// How many members SERVERS are (a Cluster member's masters count once).
std::size_t count_members(const std::vector<ServerFacts>& servers);
// A member's vote is there when every server of it has one (a Cluster member's votes are cast by
// whichever master owns a lock's slot, so any of them may be needed): one entry per member, in
// the order of their first servers.
std::vector<bool> member_votes(const std::vector<ServerFacts>& servers);

// A key whose slot is among SLOTS (ranges first, last), BASE with ":N" appended for the first N
// that hashes there (at most kProbeKeyTries); BASE itself when SLOTS is empty or no N does (a
// BASE with a hash tag of its own has one slot whatever follows).
inline constexpr int kProbeKeyTries = 100000;
std::string key_in_slots(const std::string& base, const std::vector<std::pair<int, int>>& slots);

// Every check over FACTS, and the overall verdict.
DoctorReport assess(std::vector<ServerFacts> facts, const DoctorOptions& options);

// The seed sentinels of the Sentinel members, as servers of a network of their own: SEEDS[K] is
// server K of NETWORK (each sentinel once, however many members list it), asked about the master
// of each member its questions name.
struct SentinelQuestion {
  std::size_t member = 0;  // the Sentinel member's index among the servers
  std::string master_name;
};
struct SentinelSeed {
  std::string address;  // HOST:PORT, as it may be printed
  std::vector<SentinelQuestion> questions;
};
struct SentinelSeeds {
  Network& network;
  std::vector<SentinelSeed> seeds;
};

// Asks every server (a Cluster member: each master its slot map names, once CLUSTER SLOTS has
// answered; each request bounded by the transport's per-request deadline; a server that
// fails the first request is asked nothing more; the count of fencing counters by at most
// kFenceScanRounds rounds of SCAN and kFenceScanBudget) and, when SENTINELS is given, every seed
// sentinel at once (one pipeline each, within the same deadline), and assesses the answers. Never
// throws for a server's failure. The ACL probe takes and releases OPTIONS.probe_key and leaves no
// key behind.
DoctorReport run_doctor(Network& network, const DoctorOptions& options, SentinelSeeds* sentinels = nullptr);

// PREFIX + "redlock-doctor:" + 32 random hex characters: under the prefix, so that an ACL key
// pattern written for the locks covers it too.
std::string doctor_probe_key(const std::string& prefix);

}  // namespace redlock
