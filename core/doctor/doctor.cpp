#include "core/doctor/doctor.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <exception>
#include <functional>
#include <set>

#include "core/lock/keys.hpp"
#include "core/lock/scripts.hpp"
#include "core/lock/token.hpp"
#include "core/net/cluster.hpp"
#include "core/net/fanout.hpp"
#include "core/net/sentinel.hpp"
#include "core/util/duration.hpp"
#include "core/util/glob.hpp"
#include "core/util/setting.hpp"

namespace redlock {

namespace {

// Long enough for the probe's pipeline to finish on any sane --timeout; short enough that a probe
// key whose release was refused disappears soon.
constexpr Duration kProbeTtl = std::chrono::seconds(10);
// TIME is asked this many times; the answer with the shortest round trip places a clock best.
constexpr int kTimeRounds = 3;
// The summary of a check that had no server to ask.
constexpr const char* kNobodyToAsk = "no server to ask (none answered, or none let us in)";

std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "2 of 5 servers are", "1 of 5 servers is".
std::string are(std::size_t n, std::size_t of) {
  return servers_text(n, of) + (n == 1 ? " is" : " are");
}

// How long D is, without its sign (the caller says ahead or behind). Latencies and skews:
// fractions of a millisecond matter here, unlike for TTLs.
std::string ms_text(Duration d) {
  double ms = to_ms(d);
  if (ms >= 1000.0 || ms <= -1000.0) return format_duration(d < Duration::zero() ? -d : d);
  char buf[32];
  std::snprintf(buf, sizeof buf, ms < 10.0 && ms > -10.0 ? "%.2fms" : "%.0fms", ms < 0 ? -ms : ms);
  return buf;
}

std::string failure_text(const Result& r) {
  // The transport's own errors often begin with the failure's name already ("connect: refused").
  std::string name(failure_name(r.failure));
  return r.error.starts_with(name + ":") ? r.error : name + ": " + r.error;
}

// The server answered the command, if only to refuse it; a refused AUTH or SELECT is no answer,
// since no lock command could run there either.
bool answered(const Result& r) {
  return r.ok() || r.failure == Failure::Reply || (r.failure == Failure::Auth && r.error.starts_with("NOPERM"));
}

// The servers that answered the first request and are not a second URL of another.
bool askable(const ServerFacts& f) {
  return f.reachable && !f.duplicate;
}

// A server that said it is no master (a replica) never counts as a vote, as the lock commands
// count; one that would not tell is counted, as they count it.
bool not_a_master(const ServerFacts& f) {
  return f.role && *f.role != "master";
}

// Which servers have a vote: askable, no replica, and not a run_id already counted (one server
// listed twice is one vote, as acquire counts it, which refuses the list).
std::vector<bool> voters(const std::vector<ServerFacts>& servers) {
  std::vector<bool> out(servers.size(), false);
  std::set<std::string> seen;
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const ServerFacts& f = servers[i];
    out[i] = askable(f) && !not_a_master(f) && (!f.run_id || seen.insert(*f.run_id).second);
  }
  return out;
}

// The member server I belongs to (see ServerFacts::member).
std::size_t member_of(const std::vector<ServerFacts>& servers, std::size_t i) {
  return servers[i].member.value_or(i);
}

std::optional<std::int64_t> to_int(std::string_view text) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

void read_role(ServerFacts& f, const Result& r) {
  if (!r.ok()) {
    f.role_error = failure_text(r);
    return;
  }
  const Reply& reply = r.reply;
  if (reply.type != Reply::Type::Array || reply.elements.empty()) {
    f.role_error = "unexpected reply to ROLE";
    return;
  }
  f.role = reply.elements[0].str;
  if (*f.role == "master" && reply.elements.size() >= 3 && reply.elements[2].type == Reply::Type::Array) {
    f.replicas = reply.elements[2].elements.size();
  } else if (*f.role == "slave" && reply.elements.size() >= 3) {
    auto port = reply.elements[2].as_integer();
    f.master_of = reply.elements[1].str + ":" + (port ? std::to_string(*port) : "?");
  }
}

void read_info_server(ServerFacts& f, const Result& r) {
  if (!r.ok() || r.reply.type != Reply::Type::String) {
    f.info_error = r.ok() ? "unexpected reply to INFO" : failure_text(r);
    return;
  }
  auto info = parse_info(r.reply.str);
  if (auto it = info.find("run_id"); it != info.end()) f.run_id = it->second;
  if (auto it = info.find("redis_version"); it != info.end()) f.version = it->second;
  if (auto it = info.find("uptime_in_seconds"); it != info.end()) f.uptime_s = to_int(it->second);
}

// A 0/1 field of an INFO section into FLAG, or why not into ERROR.
void read_info_flag(const Result& r, const std::string& section, const std::string& field, std::optional<bool>& flag,
                    std::string& error) {
  if (!r.ok() || r.reply.type != Reply::Type::String) {
    error = r.ok() ? "unexpected reply to INFO" : failure_text(r);
    return;
  }
  auto info = parse_info(r.reply.str);
  if (auto it = info.find(field); it != info.end()) {
    flag = it->second != "0";
  } else {
    error = "INFO " + section + " has no " + field;
  }
}

void read_info_persistence(ServerFacts& f, const Result& r) {
  read_info_flag(r, "persistence", "aof_enabled", f.aof, f.persistence_error);
}

void read_info_cluster(ServerFacts& f, const Result& r) {
  read_info_flag(r, "cluster", "cluster_enabled", f.cluster_enabled, f.cluster_error);
}

void read_cluster_state(ServerFacts& f, const Result& r) {
  if (!r.ok() || r.reply.type != Reply::Type::String) {
    f.cluster_state_error = r.ok() ? "unexpected reply to CLUSTER INFO" : failure_text(r);
    return;
  }
  auto info = parse_info(r.reply.str);
  if (auto it = info.find("cluster_state"); it != info.end()) {
    f.cluster_state = it->second;
  } else {
    f.cluster_state_error = "CLUSTER INFO has no cluster_state";
  }
}

void read_appendfsync(ServerFacts& f, const Result& r) {
  if (!r.ok()) {
    f.config_error = failure_text(r);
  } else if (r.reply.type == Reply::Type::Array && r.reply.elements.size() == 2) {
    f.appendfsync = r.reply.elements[1].str;
  } else {
    f.config_error = "CONFIG GET appendfsync gave no value";
  }
}

// CONFIG GET maxmemory*: name and value pairs.
void read_memory(ServerFacts& f, const Result& r) {
  if (!r.ok()) {
    f.memory_error = failure_text(r);
    return;
  }
  const auto& e = r.reply.elements;
  for (std::size_t k = 0; r.reply.type == Reply::Type::Array && k + 1 < e.size(); k += 2) {
    if (e[k].str == "maxmemory-policy") f.maxmemory_policy = e[k + 1].str;
    if (e[k].str == "maxmemory") f.maxmemory = e[k + 1].as_integer();
  }
  if (!f.maxmemory_policy) f.memory_error = "CONFIG GET maxmemory* gave no maxmemory-policy";
}

void read_time(ServerFacts& f, const Result& r, TimePoint sent) {
  if (!answered(r)) {
    if (!f.clock) f.clock_error = failure_text(r);
    return;
  }
  if (!f.round_trip || r.latency < *f.round_trip) f.round_trip = r.latency;
  if (!r.ok()) {
    f.clock_error = failure_text(r);
    return;
  }
  std::optional<std::int64_t> seconds, micros;
  if (r.reply.type == Reply::Type::Array && r.reply.elements.size() == 2) {
    seconds = r.reply.elements[0].as_integer();
    micros = r.reply.elements[1].as_integer();
  }
  if (!seconds || !micros) {
    f.clock_error = "unexpected reply to TIME";
    return;
  }
  if (f.clock && f.clock->round_trip <= r.latency) return;
  f.clock = ClockSample{*seconds * 1000000 + *micros, sent, r.latency};
  f.clock_error.clear();
}

// TIME alone, so that nothing queued before it lengthens its round trip, kTimeRounds times.
void read_clocks(Network& network, const std::vector<bool>& ask, std::vector<ServerFacts>& facts) {
  for (int round = 0; round < kTimeRounds; ++round) {
    Fanout time(
        network, ask, [](std::size_t) { return std::vector<Request>{Request::command({"TIME"})}; },
        Fanout::timed(network));
    time.wait();
    for (std::size_t i = 0; i < facts.size(); ++i) {
      if (ask[i]) read_time(facts[i], *time.result(i, 0), time.sent(i));
    }
  }
}

// The probe requests, in the order they are sent (each depends on the ones before it).
enum Probe : std::size_t {
  kRole,
  kInfoServer,
  kInfoPersistence,
  kConfigFsync,
  kInfoCluster,
  kConfigMemory,
  kWait,
  kAcquire,
  kExtend,
  kStatus,
  kList,
  kScan,
  kFence,
  kRelease,
  kCleanup,
  kLeftOver,
  kSubscribe,
  kUnsubscribe,
  kClusterInfo,  // a Cluster member's masters only
  kProbeCount
};

const char* probe_name(std::size_t k) {
  switch (k) {
    case kAcquire:
      return "acquire script";
    case kExtend:
      return "extend script";
    case kStatus:
      return "status script";
    case kList:
      return "list script";
    case kScan:
      return "SCAN (list)";
    case kFence:
      return "fence script";
    case kRelease:
      return "release script";
    case kLeftOver:
      return "status script (sent as EVALSHA)";
    case kSubscribe:
      return "SUBSCRIBE";
    default:
      return "";
  }
}

std::vector<Request> probe_requests(const LockKeys& keys, const std::string& token, bool cluster_node) {
  const std::string ttl_ms = std::to_string(std::chrono::duration_cast<Millis>(kProbeTtl).count());
  std::vector<Request> r(kProbeCount);
  r[kRole] = Request::command({"ROLE"});
  r[kInfoServer] = Request::command({"INFO", "server"});
  r[kInfoPersistence] = Request::command({"INFO", "persistence"});
  r[kConfigFsync] = Request::command({"CONFIG", "GET", "appendfsync"});
  r[kInfoCluster] = Request::command({"INFO", "cluster"});
  r[kConfigMemory] = Request::command({"CONFIG", "GET", "maxmemory*"});
  // Answers at once (no replica to wait for): whether a vote can be confirmed at all.
  r[kWait] = Request::command({"WAIT", "0", "0"});
  // With an owner record and a channel, so that every key, command and channel the lock commands
  // touch is exercised: the owner key is written, the wake-up channel published on.
  // The fencing counter it makes expires as soon as the lock does, should the clean-up be refused.
  r[kAcquire] = Request::eval(kAcquireScript, {keys.lock, keys.fence, keys.owner},
                              {token, ttl_ms + " " + ttl_ms, "0 redlock doctor", keys.channel});
  // As `extend` without a TTL sends it: it reads the owner record and the lock's PTTL too.
  r[kExtend] = Request::eval(kExtendScript, {keys.lock, keys.owner}, {token, ttl_ms, "1", keys.channel});
  r[kStatus] = Request::eval(kStatusScript, {keys.lock, keys.owner, keys.fence}, {});
  // What `list` runs: its script, and SCAN under the prefix (the probe key's own name).
  r[kList] = Request::eval(kListScript, {keys.lock, keys.owner, keys.fence}, {});
  r[kScan] = Request::command({"SCAN", "0", "MATCH", glob_escape(keys.lock), "COUNT", "10"});
  // Proposing 0 reads the counter and never writes it.
  r[kFence] = Request::eval(kFenceScript, {keys.fence}, {"0", ttl_ms});
  r[kRelease] = Request::eval(kReleaseScript, {keys.lock, keys.owner}, {token, keys.channel, "0", "released"});
  // All sent as EVAL, which redlock uses after a NOSCRIPT and for what it does not wait for: the
  // probes depend on their order, and the EVAL that answers a NOSCRIPT would go at the end of
  // the pipeline, after the clean-up and the look for what is left.
  for (std::size_t k : {kAcquire, kExtend, kStatus, kList, kFence, kRelease}) r[k].with_body = true;
  // The fencing counter outlives a release by design (it expires only unused); this key is thrown
  // away, so its counter goes too, if taking the lock made one.
  r[kCleanup] = Request::command({"DEL", keys.fence});
  // A script refused half-way has done what came before the refusal: look for what is left. As
  // EVALSHA, the way redlock sends its scripts first: the status script is cached by now.
  r[kLeftOver] = Request::eval(kStatusScript, {keys.lock, keys.owner, keys.fence}, {});
  r[kSubscribe] = Request::command({"SUBSCRIBE", keys.channel});
  // Back to normal mode; redlock itself never unsubscribes, so a refusal here is not reported.
  r[kUnsubscribe] = Request::command({"UNSUBSCRIBE", keys.channel});
  // Whether the cluster serves at all (a standalone server refuses the question).
  r[kClusterInfo] = Request::command({"CLUSTER", "INFO"});
  if (!cluster_node) r.pop_back();
  return r;
}

void read_probe(ServerFacts& f, const Fanout& batch, std::size_t i) {
  f.probed = true;
  for (std::size_t k = kAcquire; k <= kSubscribe; ++k) {
    const Result& r = *batch.result(i, k);
    // A refused DEL leaves a key, reported below.
    if (k == kCleanup && !r.ok()) continue;
    if (r.ok()) continue;
    // An answer that tells the server's state (CLUSTERDOWN...) is no refusal: the probe did not get through.
    const bool state = r.failure == Failure::Reply && server_state_error(r.error);
    if ((answered(r) || r.failure == Failure::Auth) && !state) {
      f.denied.push_back(std::string(probe_name(k)) + ": " + r.error);
    } else if (f.probed) {
      f.probed = false;
      f.probe_error = std::string(probe_name(k)) + ": " + failure_text(r);
    }
  }
  // The status script answers {type, value, PTTL, owner record, fencing counter}.
  const Result& left = *batch.result(i, kLeftOver);
  f.probe_key_left = left.ok() && left.reply.type == Reply::Type::Array && left.reply.elements.size() == 5 &&
                     (left.reply.elements[0].str != "none" || left.reply.elements[3].type == Reply::Type::String ||
                      left.reply.elements[4].as_integer().value_or(0) != 0);
}

// One SCAN answer: {next cursor, keys}. Counts the fencing counters under PREFIX among the keys.
void read_scan(ServerFacts& f, const Result& r, const std::string& prefix, std::string& cursor) {
  const bool shaped = r.ok() && r.reply.type == Reply::Type::Array && r.reply.elements.size() == 2 &&
                      r.reply.elements[1].type == Reply::Type::Array;
  if (!shaped) {
    f.fence_scan_error = r.ok() ? "unexpected reply to SCAN" : failure_text(r);
    f.fence_keys.reset();
    return;
  }
  for (const Reply& key : r.reply.elements[1].elements) {
    if (fence_key_under(key.str, prefix)) ++*f.fence_keys;
  }
  cursor = r.reply.elements[0].str;
  f.fence_scan_complete = cursor == "0";
}

// SCANs every server in ASK at once, round after round, until each one's cursor comes back to 0,
// within kFenceScanRounds rounds and kFenceScanBudget (what is counted by then is a lower bound).
void count_fences(Network& network, std::vector<bool> ask, const std::string& prefix, std::vector<ServerFacts>& facts) {
  const std::string pattern = fence_key_pattern(prefix);
  std::vector<std::string> cursors(facts.size(), "0");
  for (std::size_t i = 0; i < facts.size(); ++i) {
    if (ask[i]) facts[i].fence_keys = 0;
  }
  const TimePoint until = network.now() + kFenceScanBudget;
  for (int round = 0; round < kFenceScanRounds && network.now() < until; ++round) {
    if (std::find(ask.begin(), ask.end(), true) == ask.end()) return;
    Fanout scan(
        network, ask,
        [&](std::size_t i) {
          return std::vector<Request>{
              Request::command({"SCAN", cursors[i], "MATCH", pattern, "COUNT", std::to_string(kFenceScanCount)})};
        },
        Fanout::timed(network));
    scan.wait();
    for (std::size_t i = 0; i < facts.size(); ++i) {
      if (!ask[i]) continue;
      read_scan(facts[i], *scan.result(i, 0), prefix, cursors[i]);
      ask[i] = facts[i].fence_keys && !facts[i].fence_scan_complete;
    }
  }
}

// One sentinel's answers about one member's master: CKQUORUM's, then REPLICAS'.
void read_sentinel(SentinelFacts& f, const std::string& address, const Result& quorum, const Result& replicas) {
  if (!answered(quorum)) {
    f.silent.push_back(address + ": " + failure_text(quorum));
    return;
  }
  ++f.answered;
  if (quorum.ok()) {
    ++f.quorum_ok;
  } else if (quorum.error.starts_with("NOQUORUM")) {
    f.no_quorum.push_back(address + ": " + quorum.error);
  } else {
    f.refused.push_back(address + ": " + quorum.error);
  }
  if (replicas.ok() && replicas.reply.type == Reply::Type::Array) {
    f.replicas = std::max(f.replicas.value_or(0), promotable_replicas(replicas.reply));
  }
}

// Every seed sentinel at once (FACT_OF: a member's index to its facts'), CKQUORUM and REPLICAS of each master it is
// asked about in one pipeline.
void ask_sentinels(SentinelSeeds& sentinels, const std::vector<std::size_t>& fact_of, std::vector<ServerFacts>& facts) {
  for (const auto& seed : sentinels.seeds) {
    for (const auto& q : seed.questions) {
      ServerFacts& f = facts[fact_of.at(q.member)];
      if (!f.sentinels) f.sentinels.emplace();
      ++f.sentinels->listed;
    }
  }
  Network& network = sentinels.network;
  Fanout batch(
      network,
      [&](std::size_t k) {
        std::vector<Request> requests;
        for (const auto& q : sentinels.seeds[k].questions) {
          requests.push_back(Request::command({"SENTINEL", "CKQUORUM", q.master_name}));
          requests.push_back(Request::command({"SENTINEL", "REPLICAS", q.master_name}));
        }
        return requests;
      },
      Fanout::timed(network));
  batch.wait();
  for (std::size_t k = 0; k < sentinels.seeds.size(); ++k) {
    const auto& questions = sentinels.seeds[k].questions;
    for (std::size_t n = 0; n < questions.size(); ++n) {
      read_sentinel(*facts[fact_of.at(questions[n].member)].sentinels, sentinels.seeds[k].address,
                    *batch.result(k, 2 * n), *batch.result(k, 2 * n + 1));
    }
  }
}

template <typename Note>
Verdict worst_of(const std::vector<Note>& notes) {
  Verdict v = Verdict::Ok;
  for (const auto& n : notes) v = worst(v, n.verdict);
  return v;
}

// How many servers have a note at least this bad.
std::size_t count_notes(const std::vector<ServerNote>& notes, Verdict at_least) {
  std::vector<std::size_t> servers;
  for (const auto& n : notes) {
    if (n.verdict >= at_least) servers.push_back(n.server);
  }
  std::sort(servers.begin(), servers.end());
  return static_cast<std::size_t>(std::unique(servers.begin(), servers.end()) - servers.begin());
}

std::size_t count_askable(const std::vector<ServerFacts>& servers) {
  return static_cast<std::size_t>(std::count_if(servers.begin(), servers.end(), askable));
}

}  // namespace

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Ok:
      return "ok";
    case Verdict::Unknown:
      return "unknown";
    case Verdict::Warn:
      return "warn";
    case Verdict::Fail:
      return "fail";
  }
  return "unknown";
}

Verdict worst(Verdict a, Verdict b) {
  return std::max(a, b);
}

std::map<std::string, std::string, std::less<>> parse_info(std::string_view text) {
  std::map<std::string, std::string, std::less<>> fields;
  while (!text.empty()) {
    auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) continue;
    fields.emplace(std::string(line.substr(0, colon)), std::string(line.substr(colon + 1)));
  }
  return fields;
}

std::optional<ClockSkew> measure_skew(const std::vector<std::optional<ClockSample>>& samples) {
  // Each clock's offset from our monotonic clock at the middle of its round trip: the epoch of the
  // monotonic clock is arbitrary, but it is the same for every server, so differences are skews.
  std::vector<std::optional<Duration>> offset(samples.size());
  std::vector<Duration> known;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (!samples[i]) continue;
    const ClockSample& s = *samples[i];
    TimePoint middle = s.sent + s.round_trip / 2;
    offset[i] =
        std::chrono::duration_cast<Duration>(std::chrono::microseconds(s.server_us)) - middle.time_since_epoch();
    known.push_back(*offset[i]);
  }
  if (known.size() < 2) return std::nullopt;

  ClockSkew skew;
  bool first = true;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (!offset[i]) continue;
    if (first || *offset[i] > *offset[skew.ahead]) skew.ahead = i;
    if (first || *offset[i] < *offset[skew.behind]) skew.behind = i;
    first = false;
  }
  skew.skew = *offset[skew.ahead] - *offset[skew.behind];
  skew.uncertainty = samples[skew.ahead]->round_trip / 2 + samples[skew.behind]->round_trip / 2;
  std::sort(known.begin(), known.end());
  const Duration median = known[(known.size() - 1) / 2];
  skew.offsets.resize(samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (offset[i]) skew.offsets[i] = *offset[i] - median;
  }
  return skew;
}

Check check_reachable(const std::vector<ServerFacts>& servers) {
  Check c;
  c.name = "reachable";
  const std::size_t n = count_members(servers);
  const std::size_t needed = quorum_size(n);
  const std::vector<bool> votes = voters(servers);
  const std::vector<bool> members = member_votes(servers);
  const std::size_t up = static_cast<std::size_t>(std::count(members.begin(), members.end(), true));
  for (std::size_t i = 0; i < servers.size(); ++i) {
    if (votes[i]) {
      continue;
    } else if (!servers[i].reachable) {
      c.notes.push_back({i, Verdict::Warn, servers[i].error});
    } else if (not_a_master(servers[i])) {
      const std::string& role = *servers[i].role;
      c.notes.push_back(
          {i, Verdict::Warn, "a " + (role == "slave" ? "replica" : role) + ": it never counts as a vote"});
    } else {
      c.notes.push_back({i, Verdict::Warn, "a second URL of a server already counted: no vote of its own"});
    }
  }
  c.summary = servers_text(up, n) + " answered; a quorum is " + std::to_string(needed);
  if (up == n) return c;
  if (up >= needed) {
    c.verdict = Verdict::Warn;
    std::size_t spare = up - needed;
    c.advice = spare == 0 ? "Locks still work, but one more failed server stops every acquire (exit 69)."
                          : "Locks still work; " + plural(spare, "more server", "more servers") +
                                " may fail before acquires stop (exit 69).";
    return c;
  }
  c.verdict = Verdict::Fail;
  for (auto& note : c.notes) note.verdict = Verdict::Fail;
  c.summary += ": no lock can be taken";
  c.advice = "Fewer than a quorum answered: every acquire fails with exit 69 until enough servers are back.";
  return c;
}

Check check_fault_tolerance(std::size_t servers) {
  Check c;
  c.name = "fault-tolerance";
  const std::size_t needed = quorum_size(servers);
  const std::size_t spare = servers > needed ? servers - needed : 0;
  c.summary =
      plural(servers, "server", "servers") + ", a quorum of " + std::to_string(needed) + ": " +
      (spare == 0 ? "no failed server is tolerated" : "tolerates " + plural(spare, "failed server", "failed servers"));
  if (spare == 0) {
    c.verdict = Verdict::Warn;
    c.summary += servers == 1 ? "; losing it stops every lock" : "; losing any one stops every lock";
  } else if (servers % 2 == 0) {
    c.verdict = Verdict::Warn;
    c.summary += ", no more than " + plural(servers - 1, "server", "servers") + " would";
  }
  if (c.verdict != Verdict::Ok) {
    c.advice =
        "Redlock needs a majority: N servers tolerate (N-1)/2 failed ones, so an even N adds a server to fail "
        "without adding a failure it survives. Use an odd number, at least 3 (3 tolerate 1, 5 tolerate 2).";
  }
  return c;
}

Check check_master(const std::vector<ServerFacts>& servers) {
  Check c;
  c.name = "master";
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const ServerFacts& f = servers[i];
    if (!askable(f)) continue;
    if (!f.role) {
      c.notes.push_back({i, Verdict::Unknown, "ROLE refused or failed (" + f.role_error + ")"});
    } else if (*f.role == "master" && f.cluster_member) {
      // With replicas its votes wait for WAIT (member-wait); without, it is a standalone master's vote.
    } else if (*f.role == "master" && f.sentinel_member) {
      if (f.replicas == 0) {
        c.notes.push_back({i, Verdict::Warn, "a Sentinel group's master without replicas: a failover loses its locks"});
      }
    } else if (*f.role == "master") {
      if (f.replicas > 0) {
        c.notes.push_back({i, Verdict::Warn, "a master with " + plural(f.replicas, "replica", "replicas")});
      }
    } else if (*f.role == "slave") {
      c.notes.push_back({i, Verdict::Fail, "a replica" + (f.master_of.empty() ? "" : " of " + f.master_of)});
    } else {
      c.notes.push_back({i, Verdict::Fail, "a " + *f.role + ", not a master"});
    }
  }
  c.verdict = worst_of(c.notes);
  const std::size_t asked = count_askable(servers);
  switch (c.verdict) {
    case Verdict::Ok:
      c.summary = std::any_of(servers.begin(), servers.end(), [](const ServerFacts& f) { return f.sentinel_member; })
                      ? "every server is a master (a Sentinel group's with replicas, the others without)"
                  : std::any_of(servers.begin(), servers.end(), [](const ServerFacts& f) { return f.cluster_member; })
                      ? "every server is a master (a Cluster member's with or without replicas, the others without)"
                      : "every server is a master without replicas";
      break;
    case Verdict::Unknown:
      c.summary = "some servers would not tell their role";
      break;
    default:
      c.summary = are(count_notes(c.notes, Verdict::Warn), asked) + " not independent masters";
      c.advice =
          "Redlock needs independent masters. A replica refuses the lock's writes; a master that fails over "
          "to its replica can grant a lock twice, because replication is asynchronous. List masters only, "
          "with no failover between them, or a group as one sentinel:// member, whose votes wait until a "
          "replica has them.";
  }
  return c;
}

namespace {

// The verdict of C from its notes, and the summary (and advice) that goes with it.
void conclude(Check& c, const std::string& ok, const std::string& unknown, const std::string& bad,
              const std::string& advice) {
  c.verdict = worst_of(c.notes);
  c.summary = c.verdict == Verdict::Ok ? ok : c.verdict == Verdict::Unknown ? unknown : bad;
  if (c.verdict >= Verdict::Warn) c.advice = advice;
}

}  // namespace

namespace {

// A Cluster member's master: the cluster must serve (cluster_state:ok), or it refuses every command.
void note_cluster_state(Check& c, std::size_t i, const ServerFacts& f, std::size_t& down) {
  if (!f.cluster_state) {
    c.notes.push_back({i, Verdict::Unknown, "CLUSTER INFO refused or failed (" + f.cluster_state_error + ")"});
  } else if (*f.cluster_state != "ok") {
    ++down;
    c.notes.push_back({i, Verdict::Fail,
                       f.node + " says cluster_state:" + *f.cluster_state + ": the cluster refuses commands until ok"});
  }
}

}  // namespace

Check check_cluster(const std::vector<ServerFacts>& servers) {
  Check c;
  c.name = "cluster";
  std::size_t standalone = 0, nodes = 0, down = 0;
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const ServerFacts& f = servers[i];
    if (!askable(f)) continue;
    if (f.cluster_member) {
      note_cluster_state(c, i, f, down);
      continue;
    }
    ++standalone;
    if (!f.cluster_enabled) {
      c.notes.push_back({i, Verdict::Unknown, "INFO cluster refused or failed (" + f.cluster_error + ")"});
    } else if (*f.cluster_enabled) {
      ++nodes;
      c.notes.push_back({i, Verdict::Fail, "a node of a Redis Cluster (cluster_enabled:1)"});
    }
  }
  const bool members = standalone < count_askable(servers);
  std::string bad = nodes ? are(nodes, standalone) + " nodes of a Redis Cluster" : "";
  if (down) bad += (bad.empty() ? "" : "; ") + plural(down, "master", "masters") + " of Cluster members not serving";
  conclude(c,
           members ? "no standalone server is a cluster node; every Cluster member's masters say cluster_state:ok"
                   : "no server is a cluster node",
           "some servers would not say whether they are cluster nodes, or their cluster's state", bad,
           std::string(nodes ? "A cluster node holds the keys of its own slots only and answers the others with "
                               "MOVED, and two nodes of one cluster are not independent votes. List standalone "
                               "masters, Sentinel groups, or the cluster as one cluster:// member. "
                             : "") +
               (down ? "A cluster that is not ok (slots without a master, a majority of masters unreachable) "
                       "refuses every command: that member gives no vote until it is ok again."
                     : ""));
  return c;
}

Check check_eviction(const std::vector<ServerFacts>& servers) {
  Check c;
  c.name = "eviction";
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const ServerFacts& f = servers[i];
    if (!askable(f)) continue;
    if (!f.maxmemory_policy) {
      c.notes.push_back({i, Verdict::Unknown, "maxmemory-policy unknown (" + f.memory_error + ")"});
    } else if (*f.maxmemory_policy != "noeviction") {
      const bool limited = f.maxmemory.value_or(1) != 0;
      c.notes.push_back({i, limited ? Verdict::Fail : Verdict::Warn,
                         "maxmemory-policy " + *f.maxmemory_policy +
                             (limited ? ": it evicts keys when full" : ", no maxmemory yet: it would evict keys")});
    }
  }
  conclude(c, "no server evicts keys (maxmemory-policy noeviction)",
           "some servers would not tell their maxmemory-policy",
           are(count_notes(c.notes, Verdict::Warn), count_askable(servers)) + " allowed to evict keys",
           "An evicted lock is a lost lock: another client takes it while its holder still acts. Set "
           "maxmemory-policy noeviction (writes then fail when memory is full, which is a failed server).");
  return c;
}

Check check_member_wait(const std::vector<ServerFacts>& servers, const DoctorOptions& options) {
  Check c;
  c.name = "member-wait";
  const int wanted = options.member_wait_replicas.value_or(0);
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const ServerFacts& f = servers[i];
    if (!askable(f) || !(f.sentinel_member || f.cluster_member)) continue;
    if (!f.wait_error.empty()) {
      c.notes.push_back({i, options.member_wait() ? Verdict::Fail : Verdict::Warn,
                         "WAIT refused (" + f.wait_error + ")" +
                             (options.member_wait() ? ": its votes cannot be confirmed and never count"
                                                    : ": its votes count unconfirmed (--member-wait 0)")});
    } else if (f.role == "master" && f.replicas < static_cast<std::size_t>(wanted)) {
      c.notes.push_back(
          {i, Verdict::Fail,
           "--member-wait " + std::to_string(wanted) + ", but " + (f.node.empty() ? "its master" : f.node) + " has " +
               plural(f.replicas, "replica", "replicas") + ": WAIT cannot confirm its votes, which never count"});
    }
  }
  conclude(
      c,
      "every Sentinel or Cluster member's master answers WAIT" +
          std::string(wanted ? " and has the replicas --member-wait names" : "") + " (or there is none)",
      "", are(count_notes(c.notes, Verdict::Warn), count_askable(servers)) + " members whose votes WAIT cannot confirm",
      "A Sentinel or Cluster member's vote counts once WAIT confirms a replica has it, since a failover loses "
      "what the promoted replica lacked. Where the service refuses WAIT, or a master has fewer replicas than "
      "--member-wait names, that member cannot vote; --member-wait 0 counts its votes unconfirmed, and a "
      "failover may then lose a held lock.");
  return c;
}

namespace {

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

// One Sentinel member's note: what its sentinels said, and the worst of it.
ServerNote sentinel_note(std::size_t i, const SentinelFacts& s) {
  ServerNote note{i, Verdict::Ok, {}};
  if (s.answered == 0) {
    note.verdict = Verdict::Fail;
    note.text = "no sentinel of " + std::to_string(s.listed) + " answered (" + joined(s.silent) +
                "): nobody can fail its master over, or name it";
    return note;
  }
  note.text = std::to_string(s.answered) + " of " + plural(s.listed, "sentinel", "sentinels") + " answered";
  if (!s.silent.empty()) {
    note.verdict = Verdict::Warn;
    note.text += " (silent: " + joined(s.silent) + ")";
  }
  if (s.quorum_ok == 0 && !s.no_quorum.empty()) {
    note.verdict = Verdict::Fail;
    note.text += "; no failover possible: " + joined(s.no_quorum);
  } else if (!s.no_quorum.empty()) {
    note.verdict = worst(note.verdict, Verdict::Warn);
    note.text += "; CKQUORUM OK from " + std::to_string(s.quorum_ok) + ", not from " + joined(s.no_quorum);
  } else if (s.quorum_ok == 0) {
    note.verdict = worst(note.verdict, Verdict::Unknown);
    note.text += "; CKQUORUM refused (" + joined(s.refused) + ")";
  } else {
    note.text += "; CKQUORUM OK (the quorum and the majority for a failover can be reached)";
  }
  if (!s.replicas) {
    note.text += "; replicas unknown (SENTINEL REPLICAS refused)";
  } else if (*s.replicas == 0) {
    note.verdict = worst(note.verdict, Verdict::Warn);
    note.text += "; no replica they could promote: a failover loses its locks";
  } else {
    note.text += "; " + plural(static_cast<std::size_t>(*s.replicas), "replica", "replicas") + " they could promote";
  }
  return note;
}

}  // namespace

Check check_sentinel(const std::vector<ServerFacts>& servers) {
  Check c;
  c.name = "sentinel";
  std::size_t members = 0;
  for (std::size_t i = 0; i < servers.size(); ++i) {
    if (!servers[i].sentinels || servers[i].duplicate) continue;
    ++members;
    c.notes.push_back(sentinel_note(i, *servers[i].sentinels));
  }
  if (members == 0) {
    c.summary = "no Sentinel member";
    return c;
  }
  const std::string of = " of " + plural(members, "Sentinel member", "Sentinel members");
  conclude(c,
           "every seed sentinel of " + plural(members, "Sentinel member", "Sentinel members") +
               " answered, can fail its master over, and knows a replica to promote",
           "some sentinels would not run SENTINEL CKQUORUM",
           std::to_string(count_notes(c.notes, Verdict::Warn)) + of +
               (worst_of(c.notes) == Verdict::Fail ? " cannot be failed over" : " short of sentinels or replicas"),
           "A group whose sentinels cannot reach their quorum and a majority cannot fail its master over: when "
           "the master dies, the member stays down. A seed sentinel that does not answer costs its turn (up to " +
               setting_name(Setting::Timeout) +
               ") whenever the member's master is looked up, and brings the group closer to no failover. A "
               "group without a replica to promote loses its locks in a failover, and its votes count "
               "unconfirmed. Restart the sentinels (or list those that run), and give every group a replica.");
  return c;
}

Check check_distinct(const std::vector<ServerFacts>& servers) {
  Check c;
  c.name = "distinct";
  std::map<std::string, std::size_t> first_with;
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const ServerFacts& f = servers[i];
    if (!f.reachable) continue;
    if (f.duplicate) {
      c.notes.push_back({i, Verdict::Fail, f.error});
      continue;
    }
    if (!f.run_id) {
      c.notes.push_back({i, Verdict::Unknown, "INFO server refused or failed, no run_id (" + f.info_error + ")"});
      continue;
    }
    auto [it, fresh] = first_with.emplace(*f.run_id, i);
    if (!fresh) {
      c.notes.push_back(
          {i, Verdict::Fail, "the same Redis server as " + servers[it->second].server + " (run_id " + *f.run_id + ")"});
    }
  }
  c.verdict = worst_of(c.notes);
  switch (c.verdict) {
    case Verdict::Ok:
      c.summary = plural(first_with.size(), "distinct server", "distinct servers") + " (by run_id)";
      break;
    case Verdict::Unknown:
      c.summary = "some servers would not tell their run_id";
      c.advice = "Without INFO, redlock cannot tell two URLs of one server apart; allow INFO to the lock's user.";
      break;
    default:
      c.summary = "a server is listed more than once";
      c.advice =
          "One server listed twice counts one vote twice, so two clients could both win a quorum. Every "
          "lock command refuses such a list (exit 78): list each server once.";
  }
  return c;
}

Check check_persistence(const std::vector<ServerFacts>& servers, const DoctorOptions& options) {
  Check c;
  c.name = "persistence";
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const ServerFacts& f = servers[i];
    if (!askable(f)) continue;
    if (!f.aof) {
      c.notes.push_back({i, Verdict::Unknown, "INFO persistence refused or failed (" + f.persistence_error + ")"});
    } else if (!*f.aof) {
      c.notes.push_back({i, Verdict::Warn, "appendonly no: a restart forgets the locks it granted"});
    } else if (!f.appendfsync) {
      c.notes.push_back({i, Verdict::Unknown,
                         "appendonly yes, appendfsync unknown (CONFIG GET refused or failed: " + f.config_error + ")"});
    } else if (*f.appendfsync != "always") {
      c.notes.push_back(
          {i, Verdict::Warn,
           "appendonly yes, appendfsync " + *f.appendfsync + ": a crash loses the last locks it granted"});
    }
  }
  c.verdict = worst_of(c.notes);
  const std::string ttl = format_duration(options.ttl);
  switch (c.verdict) {
    case Verdict::Ok:
      c.summary = "every server writes each lock to disk before it answers (appendfsync always)";
      break;
    case Verdict::Unknown:
      c.summary = "some servers would not tell how they persist";
      c.advice = "Without appendfsync always, a restarted server must stay out for the longest TTL (" + ttl +
                 "); allow CONFIG GET and INFO to check it here.";
      break;
    default:
      c.summary = servers_text(count_notes(c.notes, Verdict::Warn), count_askable(servers)) +
                  " can forget locks in a crash or restart";
      c.advice = "Without appendfsync always, a restarted server must stay out for the longest TTL (" + ttl +
                 "): back too soon and empty, it can give a lock that is still held to a second client, and "
                 "fencing tokens can repeat. Either set appendonly yes and appendfsync always, or keep a server "
                 "that went down from starting again until " +
                 ttl + " have passed.";
  }
  return c;
}

Check check_clock(const std::vector<ServerFacts>& servers, const std::optional<ClockSkew>& skew,
                  const DoctorOptions& options) {
  Check c;
  c.name = "clock";
  const Duration allowance = drift_allowance(options.ttl, options.drift);
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const ServerFacts& f = servers[i];
    if (askable(f) && !f.clock)
      c.notes.push_back({i, Verdict::Unknown, "TIME refused or failed (" + f.clock_error + ")"});
  }
  const std::string budget = "the drift allowance for " + setting_name(Setting::Ttl) + " " +
                             format_duration(options.ttl) + " is " + ms_text(allowance);
  if (!skew) {
    c.verdict = worst_of(c.notes);
    c.summary = c.verdict == Verdict::Ok ? "fewer than two clocks to compare" : "fewer than two clocks answered";
    return c;
  }
  // Only what the round trips cannot explain counts.
  const Duration measured = std::max(Duration::zero(), skew->skew - skew->uncertainty);
  if (measured > allowance) {
    for (std::size_t i = 0; i < servers.size(); ++i) {
      const auto& offset = skew->offsets[i];
      if (!offset || (*offset < allowance / 2 && *offset > -allowance / 2)) continue;
      c.notes.push_back({i, Verdict::Warn,
                         "its clock is " + ms_text(*offset) + (*offset > Duration::zero() ? " ahead of" : " behind") +
                             " the median server's"});
    }
    c.advice =
        "Redis expires keys by its own wall clock: a clock this far off is not synchronised, and when it is "
        "stepped into line the locks it holds expire that much early (or late). Run NTP or chrony on every "
        "server, slewing rather than stepping the clock.";
  }
  c.verdict = worst(worst_of(c.notes), measured > allowance ? Verdict::Warn : Verdict::Ok);
  c.summary = "the clocks differ by " + ms_text(skew->skew) + " (±" + ms_text(skew->uncertainty) + "); " + budget;
  return c;
}

Check check_uptime(const std::vector<ServerFacts>& servers, const DoctorOptions& options) {
  Check c;
  c.name = "uptime";
  const std::string ttl = format_duration(options.ttl);
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const ServerFacts& f = servers[i];
    if (!askable(f)) continue;
    if (!f.uptime_s) {
      c.notes.push_back({i, Verdict::Unknown, "INFO server refused or failed (" + f.info_error + ")"});
      continue;
    }
    if (std::chrono::seconds(*f.uptime_s) >= options.ttl) continue;
    // A server that keeps every write on disk came back with its locks.
    if (f.aof == true && f.appendfsync == "always") continue;
    c.notes.push_back(
        {i, Verdict::Warn,
         "up for " + std::to_string(*f.uptime_s) + "s, less than " + setting_name(Setting::Ttl) + " " + ttl});
  }
  c.verdict = worst_of(c.notes);
  switch (c.verdict) {
    case Verdict::Ok:
      c.summary = "every server has been up longer than the longest TTL (" + ttl + ") or keeps its locks on disk";
      break;
    case Verdict::Unknown:
      c.summary = "some servers would not tell their uptime";
      break;
    default:
      c.summary = servers_text(count_notes(c.notes, Verdict::Warn), count_askable(servers)) + " started less than " +
                  ttl + " ago";
      c.advice =
          "A server that came back empty within the longest TTL may have granted a lock that another client "
          "still holds. If it crashed, keep it out until " +
          ttl + " have passed since it went down.";
  }
  return c;
}

Check check_acl(const std::vector<ServerFacts>& servers, const std::string& probe_key) {
  Check c;
  c.name = "acl";
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const ServerFacts& f = servers[i];
    if (!askable(f)) continue;
    if (f.role && *f.role != "master") {
      // A replica refuses every write (READONLY) whatever the ACL; the master check says why.
      c.notes.push_back({i, Verdict::Unknown, "a " + *f.role + " refuses writes: the ACL cannot be probed here"});
    } else if (!f.denied.empty()) {
      std::string text = "refused: ";
      for (std::size_t k = 0; k < f.denied.size(); ++k) text += (k ? "; " : "") + f.denied[k];
      c.notes.push_back({i, Verdict::Fail, text});
    } else if (!f.probed) {
      c.notes.push_back({i, Verdict::Unknown, "probe unfinished (" + f.probe_error + ")"});
    }
    if (f.probe_key_left) {
      c.notes.push_back({i, Verdict::Warn,
                         "the probe could not delete all its keys: the lock expires within " +
                             format_duration(kProbeTtl) + ", and so does the fencing counter " +
                             derive_keys(probe_key).fence + " unless TIME is refused"});
    }
  }
  c.verdict = worst_of(c.notes);
  const std::string where = "probed on the throw-away key '" + probe_key + "'";
  switch (c.verdict) {
    case Verdict::Ok:
      c.summary = "every command, key and channel redlock uses is allowed (" + where + ")";
      break;
    case Verdict::Unknown:
      c.summary = "the probe did not finish everywhere (" + where + ")";
      break;
    case Verdict::Warn:
      c.summary = "the probe key was left behind (" + where + ")";
      break;
    case Verdict::Fail:
      c.summary = "the ACL refuses what redlock needs on " +
                  plural(count_notes(c.notes, Verdict::Fail), "server", "servers") + " (" + where + ")";
      c.advice =
          "The lock's user needs EVALSHA and EVAL; GET, SET, INCR, PEXPIRE, PTTL, TYPE, DEL, TIME, PUBLISH "
          "and PUBSUB (called by the scripts), and ZADD, ZREM, ZRANGE and EXISTS for the waiters' queue; "
          "SUBSCRIBE; SCAN for list; on the keys KEY and {KEY}:redlock:* and the channels {KEY}:redlock:wake*, "
          "for KEY = prefix + NAME.";
  }
  return c;
}

std::string fence_key_pattern(const std::string& prefix) {
  std::string escaped;
  for (char ch : prefix) {
    if (ch == '*' || ch == '?' || ch == '[' || ch == ']' || ch == '\\') escaped += '\\';
    escaped += ch;
  }
  // "{PREFIX…}:redlock:fence" and "PREFIX…{tag}…:redlock:fence" alike; fence_key_under sorts them out.
  return (escaped.empty() ? "*" : "*" + escaped + "*") + ":redlock:fence";
}

bool fence_key_under(std::string_view key, std::string_view prefix) {
  constexpr std::string_view kSuffix = ":redlock:fence";
  if (key.size() < kSuffix.size() || key.substr(key.size() - kSuffix.size()) != kSuffix) return false;
  return key.starts_with(prefix) || (key.starts_with("{") && key.substr(1).starts_with(prefix));
}

Check check_fences(const std::vector<ServerFacts>& servers, const std::string& prefix) {
  Check c;
  c.name = "fences";
  std::optional<std::size_t> most;
  bool complete = true;
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const ServerFacts& f = servers[i];
    if (!askable(f)) continue;
    if (f.clock_error.find("NOPERM") != std::string::npos) {
      c.notes.push_back({i, Verdict::Warn, "TIME refused: fencing counters never expire here"});
    }
    if (!f.fence_keys) {
      c.notes.push_back({i, Verdict::Unknown, "not counted (" + f.fence_scan_error + ")"});
      continue;
    }
    most = std::max(most.value_or(0), *f.fence_keys);
    complete = complete && f.fence_scan_complete;
  }
  c.verdict = worst_of(c.notes);
  if (count_askable(servers) == 0) {
    c.verdict = Verdict::Unknown;
    c.summary = kNobodyToAsk;
  } else if (!most) {
    c.verdict = worst(c.verdict, Verdict::Unknown);
    c.summary = "the fencing counters could not be counted anywhere (SCAN refused or failed)";
  } else {
    c.summary = std::string(complete ? "" : "at least ") + plural(*most, "fencing counter", "fencing counters") +
                " under the prefix '" + prefix + "' (the most on one server, one per NAME); each expires after " +
                "--fence-ttl (30d) without an acquisition";
  }
  if (c.verdict == Verdict::Warn) {
    c.advice =
        "A counter is only given an expiry where the lock's user may run TIME (its clock is where a "
        "counter that expired starts again). Allow it: ACL SETUSER ... +time.";
  }
  return c;
}

Check check_latency(const std::vector<ServerFacts>& servers, const DoctorOptions& options) {
  Check c;
  c.name = "latency";
  const Duration limit = options.timeout / 2;
  Duration slowest{}, slowest_first{};
  std::size_t measured = 0;
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const ServerFacts& f = servers[i];
    if (!askable(f) || (!f.round_trip && !f.first_latency)) continue;
    ++measured;
    Duration rtt = f.round_trip.value_or(Duration::zero());
    Duration first = f.first_latency.value_or(Duration::zero());
    slowest = std::max(slowest, rtt);
    slowest_first = std::max(slowest_first, first);
    if (rtt > limit || first > limit) {
      c.notes.push_back(
          {i, Verdict::Warn, "round trip " + ms_text(rtt) + ", first request (connect included) " + ms_text(first)});
    }
  }
  if (measured == 0) {
    c.verdict = Verdict::Unknown;
    c.summary = kNobodyToAsk;
    return c;
  }
  c.verdict = worst_of(c.notes);
  c.summary = "slowest round trip " + ms_text(slowest) + ", first request (connect included) " +
              ms_text(slowest_first) + "; " + (c.verdict == Verdict::Ok ? "under" : "above") + " half of " +
              setting_name(Setting::Timeout) + " " + format_duration(options.timeout);
  if (c.verdict != Verdict::Ok) {
    c.advice = "A server that takes longer than " + setting_name(Setting::Timeout) +
               " to answer counts as failed, and every invocation connects anew. Raise " +
               setting_name(Setting::Timeout) + " (per request, connect included) or use servers closer by.";
  }
  return c;
}

std::size_t count_members(const std::vector<ServerFacts>& servers) {
  std::set<std::size_t> members;
  for (std::size_t i = 0; i < servers.size(); ++i) members.insert(member_of(servers, i));
  return members.size();
}

std::vector<bool> member_votes(const std::vector<ServerFacts>& servers) {
  const std::vector<bool> votes = voters(servers);
  std::map<std::size_t, std::size_t> at;  // member -> its entry in OUT
  std::vector<bool> out;
  for (std::size_t i = 0; i < servers.size(); ++i) {
    auto [it, fresh] = at.emplace(member_of(servers, i), out.size());
    if (fresh) out.push_back(true);
    out[it->second] = out[it->second] && votes[i];
  }
  return out;
}

std::string key_in_slots(const std::string& base, const std::vector<std::pair<int, int>>& slots) {
  auto served = [&](const std::string& key) {
    const int slot = key_slot(key);
    return std::any_of(slots.begin(), slots.end(),
                       [slot](const auto& r) { return r.first <= slot && slot <= r.second; });
  };
  if (slots.empty() || served(base)) return base;
  for (int n = 0; n < kProbeKeyTries; ++n) {
    std::string key = base + ":" + std::to_string(n);
    if (served(key)) return key;
  }
  return base;
}

DoctorReport assess(std::vector<ServerFacts> facts, const DoctorOptions& options) {
  DoctorReport report;
  report.servers = std::move(facts);
  std::vector<std::optional<ClockSample>> samples;
  for (const auto& f : report.servers) samples.push_back(askable(f) ? f.clock : std::nullopt);
  report.skew = measure_skew(samples);

  const auto& s = report.servers;
  report.checks = {
      check_reachable(s),
      check_fault_tolerance(count_members(s)),
      check_master(s),
      check_distinct(s),
      check_persistence(s, options),
      check_clock(s, report.skew, options),
      check_uptime(s, options),
      check_acl(s, options.probe_key),
      check_fences(s, options.prefix),
      check_latency(s, options),
      check_cluster(s),
      check_eviction(s),
      check_member_wait(s, options),
      check_sentinel(s),
  };
  const std::vector<bool> votes = member_votes(s);
  report.reachable.total = votes.size();
  report.reachable.yes = static_cast<std::size_t>(std::count(votes.begin(), votes.end(), true));
  report.reachable.failed = report.reachable.total - report.reachable.yes;
  report.no_quorum = report.reachable.yes < report.reachable.needed();
  // With no server to ask, the checks of what servers said have nothing to go on: unknown, not ok.
  if (count_askable(s) == 0) {
    for (auto& c : report.checks) {
      // How many servers are listed needs no answer, and the sentinels are asked apart from them.
      if (c.name == "reachable" || c.name == "fault-tolerance" || c.name == "sentinel" || c.verdict != Verdict::Ok)
        continue;
      c.verdict = Verdict::Unknown;
      c.summary = kNobodyToAsk;
      c.notes.clear();
      c.advice.clear();
    }
  }
  for (const auto& c : report.checks) report.verdict = worst(report.verdict, c.verdict);
  return report;
}

namespace {

// What doctor asks: a configured member, or one master of a Cluster member.
struct Target {
  std::size_t member = 0;
  std::string node;  // a Cluster member's master (Request::node); empty for the others
  std::vector<std::pair<int, int>> slots;
  std::optional<Result> failed;  // a Cluster member whose slot map could not be had
};

// The targets as the servers of a network: doctor's checks ask one server each.
class Targets final : public Network {
 public:
  Targets(Network& network, std::vector<Target> targets) : network_(network), targets_(std::move(targets)) {}

  std::size_t size() const override { return targets_.size(); }
  TimePoint now() const override { return network_.now(); }
  void send(std::size_t t, Request request, ResultCallback done) override {
    request.node = targets_[t].node;
    network_.send(targets_[t].member, std::move(request), std::move(done));
  }
  void run_until(const std::function<bool()>& done, TimePoint deadline) override { network_.run_until(done, deadline); }
  void flush(TimePoint deadline) override { network_.flush(deadline); }
  // Doctor's SUBSCRIBE is a probe request like the others: it never subscribes through this.
  void subscribe(const std::string&, ChannelCallback) override {}
  std::size_t subscribed() const override { return 0; }
  void unsubscribe() override {}
  std::string describe(std::size_t t) const override { return network_.describe(targets_[t].member); }
  bool resolving() const override { return network_.resolving(); }

  const Target& target(std::size_t t) const { return targets_[t]; }

 private:
  Network& network_;
  std::vector<Target> targets_;
};

// Every member as a target, a Cluster member as each master its slot map names (CLUSTER SLOTS,
// asked of each Cluster member at once, within the per-request deadline).
std::vector<Target> targets_of(Network& network) {
  std::vector<bool> clusters(network.size());
  for (std::size_t i = 0; i < network.size(); ++i) clusters[i] = network.cluster(i);
  Fanout maps(network, clusters, [](std::size_t) {
    Request map = Request::command({"CLUSTER", "SLOTS"});
    map.node = kAnyNode;
    return std::vector<Request>{std::move(map)};
  });
  maps.wait();
  std::vector<Target> out;
  for (std::size_t i = 0; i < network.size(); ++i) {
    if (!clusters[i]) {
      out.push_back(Target{i, {}, {}, std::nullopt});
      continue;
    }
    Result r = *maps.result(i, 0);
    std::vector<ClusterNode> masters;
    std::optional<SlotMap> map;
    try {
      if (r.ok()) map = SlotMap::parse(r.reply);
    } catch (const std::exception& e) {
      r = Result{Failure::Protocol, {}, std::string("unexpected reply to CLUSTER SLOTS: ") + e.what(), r.latency};
    }
    if (map) masters = map->masters();
    if (masters.empty() && r.ok()) r = Result{Failure::Reply, {}, "the cluster's slot map names no master", r.latency};
    if (masters.empty()) out.push_back(Target{i, {}, {}, std::move(r)});
    for (const auto& m : masters) out.push_back(Target{i, m.address(), map->slots_of(m), std::nullopt});
  }
  return out;
}

// The facts known before anything is asked of the targets: who they are, and the Cluster members
// whose map could not be had.
std::vector<ServerFacts> first_facts(const Targets& targets) {
  std::vector<ServerFacts> facts(targets.size());
  for (std::size_t t = 0; t < targets.size(); ++t) {
    ServerFacts& f = facts[t];
    const Target& target = targets.target(t);
    f.server = targets.describe(t);
    f.sentinel_member = f.server.starts_with("sentinel://");
    f.cluster_member = !target.node.empty();
    f.node = target.node;
    f.member = target.member;
    if (!target.failed) continue;
    f.duplicate = target.failed->failure == Failure::Duplicate;
    f.reachable = f.duplicate;
    f.error = failure_text(*target.failed);
  }
  return facts;
}

// First a PING: it opens the connections (connect, AUTH, SELECT and the transport's own INFO in
// one round trip), the cost every invocation of redlock pays. Which targets to ask further.
std::vector<bool> ping_targets(Targets& targets, std::vector<ServerFacts>& facts) {
  const std::size_t n = targets.size();
  std::vector<bool> to(n);
  for (std::size_t t = 0; t < n; ++t) to[t] = !targets.target(t).failed;
  Fanout ping(
      targets, to, [](std::size_t) { return std::vector<Request>{Request::command({"PING"})}; },
      Fanout::timed(targets));
  ping.wait();
  std::vector<bool> ask(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    if (!to[i]) continue;
    const Result& r = *ping.result(i, 0);
    ServerFacts& f = facts[i];
    if (r.failure == Failure::Duplicate) {
      f.reachable = f.duplicate = true;
      f.error = r.error;
    } else if (answered(r)) {
      f.reachable = true;
      f.first_latency = r.latency;
      ask[i] = true;
    } else {
      f.error = failure_text(r);
    }
  }
  return ask;
}

// The probes, each target's with a key of a slot it serves (a Cluster member's master answers
// MOVED for the others).
void probe_targets(Targets& targets, const std::vector<bool>& ask, const DoctorOptions& options,
                   std::vector<ServerFacts>& facts) {
  const std::string token = make_token();
  std::vector<LockKeys> keys;
  for (std::size_t t = 0; t < targets.size(); ++t)
    keys.push_back(derive_keys(key_in_slots(options.probe_key, targets.target(t).slots)));
  Fanout probe(
      targets, ask, [&](std::size_t t) { return probe_requests(keys[t], token, facts[t].cluster_member); },
      Fanout::timed(targets));
  probe.wait();
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (!ask[i]) continue;
    ServerFacts& f = facts[i];
    read_role(f, *probe.result(i, kRole));
    read_info_server(f, *probe.result(i, kInfoServer));
    read_info_persistence(f, *probe.result(i, kInfoPersistence));
    read_appendfsync(f, *probe.result(i, kConfigFsync));
    read_info_cluster(f, *probe.result(i, kInfoCluster));
    read_memory(f, *probe.result(i, kConfigMemory));
    if (f.cluster_member) read_cluster_state(f, *probe.result(i, kClusterInfo));
    const Result& wait = *probe.result(i, kWait);
    if ((f.sentinel_member || f.cluster_member) && !wait.ok() && answered(wait)) f.wait_error = wait.error;
    read_probe(f, probe, i);
  }
}

}  // namespace

DoctorReport run_doctor(Network& network, const DoctorOptions& options, SentinelSeeds* sentinels) {
  Targets targets(network, targets_of(network));
  std::vector<ServerFacts> facts = first_facts(targets);
  const std::vector<bool> ask = ping_targets(targets, facts);
  read_clocks(targets, ask, facts);
  probe_targets(targets, ask, options, facts);
  count_fences(targets, ask, options.prefix, facts);
  if (sentinels) {
    // A Sentinel member is one target: the first whose member it is.
    std::vector<std::size_t> fact_of(network.size());
    for (std::size_t t = targets.size(); t-- > 0;) fact_of[targets.target(t).member] = t;
    ask_sentinels(*sentinels, fact_of, facts);
  }
  return assess(std::move(facts), options);
}

std::string doctor_probe_key(const std::string& prefix) {
  return prefix + "redlock-doctor:" + make_token();
}

}  // namespace redlock
