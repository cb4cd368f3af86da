#include "core/lock/listing.hpp"

#include <algorithm>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "core/lock/scripts.hpp"
#include "core/net/cluster.hpp"
#include "core/util/duration.hpp"
#include "core/util/glob.hpp"

namespace redlock {

namespace {

// Reads out per server at once: enough to keep it busy while SCAN goes on, far below the
// transport's bound on unanswered requests.
constexpr std::size_t kMaxReads = 8;
// SCAN calls per pattern and server: with COUNT 1000, a keyspace of 100 million keys.
constexpr std::size_t kMaxScans = 100000;

Result failed(Failure failure, std::string error) {
  Result r;
  r.failure = failure;
  r.error = std::move(error);
  return r;
}

class Listing {
 public:
  Listing(Network& network, const ListOptions& options)
      : network_(network),
        options_(options),
        patterns_(scan_patterns(options.prefix, options.pattern)),
        servers_(network.size()) {}
  ~Listing() { *alive_ = false; }
  Listing(const Listing&) = delete;
  Listing& operator=(const Listing&) = delete;

  ListResult run();

 private:
  // One keyspace walked with SCAN: a standalone member's, or one master's of a Cluster member.
  struct Walk {
    std::string node;  // a Cluster member's master (Request::node); empty for the others
    std::size_t pattern = 0;
    std::string cursor = "0";
    std::size_t scans = 0;
    bool scanning = false;  // a SCAN is out
    bool scanned = false;   // every pattern walked to its end
  };
  struct Server {
    std::vector<Walk> walks;  // none while a Cluster member's masters are being learnt
    bool mapping = false;     // a Cluster member's CLUSTER SLOTS is out
    std::size_t reads = 0;    // reads out
    std::vector<std::string> queued;
    std::set<std::string> found;
    std::map<std::string, LockReading> readings;
    std::optional<Result> failure;
    TimePoint finished = kNever;

    bool scanned() const {
      return !mapping && std::all_of(walks.begin(), walks.end(), [](const Walk& w) { return w.scanned; });
    }
    bool done() const { return failure || (scanned() && reads == 0 && queued.empty()); }
  };

  // Sends what SERVER is due: reads of full batches (of what is left, once scanned), the next SCAN.
  void pump(std::size_t server);
  void send(std::size_t server, Request request, std::function<void(Result)> on);
  // Sends SERVER's reads of full batches (of what is left, once scanned).
  void pump_reads(std::size_t server);
  void on_map(std::size_t server, Result r);
  void on_scan(std::size_t server, std::size_t walk, Result r);
  void on_read(std::size_t server, std::vector<std::string> keys, Result r);
  void fail(std::size_t server, Result r);
  // Found is full: stop looking further on SERVER.
  void stop_scanning(std::size_t server);
  ListResult merge() const;
  // Each server's reading of KEY: empty for a server that failed, "none" where KEY was not found.
  std::vector<std::optional<LockReading>> readings_of(const std::string& key) const;

  Network& network_;
  const ListOptions& options_;
  std::vector<std::string> patterns_;
  std::vector<Server> servers_;
  std::map<std::string, FoundKey> targets_;  // every key read, from any server: what it stands for
  bool truncated_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

void Listing::send(std::size_t server, Request request, std::function<void(Result)> on) {
  network_.send(server, std::move(request), [this, alive = alive_, server, on = std::move(on)](Result r) {
    if (!*alive || servers_[server].failure) return;
    if (r.ok() && network_.role(server) == "replica")
      r = failed(Failure::Replica, "a replica: it never counts as a vote");
    if (!r.ok()) return fail(server, std::move(r));
    on(std::move(r));
    if (servers_[server].done() && servers_[server].finished == kNever) servers_[server].finished = network_.now();
  });
}

void Listing::pump_reads(std::size_t i) {
  Server& s = servers_[i];
  // A Cluster node refuses a script whose keys are in more than one slot (CROSSSLOT): one lock
  // (its keys share its hash tag) per read there.
  const std::size_t batch = network_.cluster(i) ? 1 : options_.batch;
  while (!s.failure && s.reads < kMaxReads && (s.queued.size() >= batch || (s.scanned() && !s.queued.empty()))) {
    const std::size_t take = std::min(batch, s.queued.size());
    std::vector<std::string> keys(s.queued.end() - static_cast<std::ptrdiff_t>(take), s.queued.end());
    s.queued.resize(s.queued.size() - take);
    std::vector<std::string> argv;
    argv.reserve(keys.size() * 3);
    for (const auto& key : keys) {
      LockKeys k = derive_keys(key);
      argv.insert(argv.end(), {k.lock, k.owner, k.fence});
    }
    ++s.reads;
    // Routed by its first key: on a Cluster member, to the master that owns the lock's slot,
    // whichever master's SCAN found it.
    // The keys go with the answer: a Cluster member's masters answer in their own order.
    send(i, Request::eval(kListScript, std::move(argv), {}),
         [this, i, keys = std::move(keys)](Result r) mutable { on_read(i, std::move(keys), std::move(r)); });
  }
}

void Listing::pump(std::size_t i) {
  pump_reads(i);
  Server& s = servers_[i];
  if (s.failure || s.mapping || s.reads >= kMaxReads) return;
  for (std::size_t w = 0; w < s.walks.size(); ++w) {
    Walk& walk = s.walks[w];
    if (walk.scanning || walk.scanned) continue;
    walk.scanning = true;
    ++walk.scans;
    Request scan = Request::command(
        {"SCAN", walk.cursor, "MATCH", patterns_[walk.pattern], "COUNT", std::to_string(options_.scan_count)});
    scan.node = walk.node;
    send(i, std::move(scan), [this, i, w](Result r) { on_scan(i, w, std::move(r)); });
  }
}

void Listing::on_map(std::size_t i, Result r) {
  Server& s = servers_[i];
  s.mapping = false;
  std::vector<ClusterNode> masters;
  try {
    masters = SlotMap::parse(r.reply).masters();
  } catch (const std::exception& e) {
    return fail(i, failed(Failure::Protocol, std::string("unexpected reply to CLUSTER SLOTS: ") + e.what()));
  }
  if (masters.empty()) return fail(i, failed(Failure::Reply, "the cluster's slot map names no master"));
  for (const auto& m : masters) s.walks.push_back(Walk{.node = m.address()});
  pump(i);
}

void Listing::on_scan(std::size_t i, std::size_t w, Result r) {
  Server& s = servers_[i];
  Walk& walk = s.walks[w];
  const Reply& reply = r.reply;
  if (reply.type != Reply::Type::Array || reply.elements.size() != 2 || reply.elements[1].type != Reply::Type::Array) {
    return fail(i, failed(Failure::Protocol, "unexpected reply to SCAN"));
  }
  walk.scanning = false;
  for (const Reply& key : reply.elements[1].elements) {
    auto found = found_key(key.str, options_.prefix, options_.pattern);
    if (!found || !s.found.insert(found->read).second) continue;
    s.queued.push_back(found->read);
    targets_.emplace(found->read, std::move(*found));
  }
  walk.cursor = reply.elements[0].str;
  // A walk stopped (the bound on locks reached) while this SCAN was out stays stopped.
  if (!walk.scanned && (walk.cursor == "0" || walk.scans >= kMaxScans)) {
    truncated_ = truncated_ || walk.cursor != "0";
    walk.cursor = "0";
    walk.scans = 0;
    walk.scanned = ++walk.pattern == patterns_.size();
  }
  if (s.found.size() >= options_.max_locks) stop_scanning(i);
  pump(i);
}

void Listing::stop_scanning(std::size_t i) {
  for (auto& walk : servers_[i].walks) {
    truncated_ = truncated_ || !walk.scanned;
    walk.scanned = true;
  }
}

void Listing::on_read(std::size_t i, std::vector<std::string> keys, Result r) {
  Server& s = servers_[i];
  --s.reads;
  const Reply& reply = r.reply;
  if (reply.type != Reply::Type::Array || reply.elements.size() != keys.size()) {
    return fail(i, failed(Failure::Protocol, "unexpected reply to a redlock script"));
  }
  for (std::size_t k = 0; k < keys.size(); ++k) {
    auto reading = parse_lock_reading(reply.elements[k]);
    if (!reading) return fail(i, failed(Failure::Protocol, "unexpected reply to a redlock script"));
    if (reading->type != "none" || reading->fence > 0) s.readings.emplace(std::move(keys[k]), std::move(*reading));
  }
  pump(i);
}

void Listing::fail(std::size_t i, Result r) {
  Server& s = servers_[i];
  s.failure = std::move(r);
  s.finished = network_.now();
  s.queued.clear();
  s.readings.clear();
}

ListResult Listing::run() {
  const TimePoint start = network_.now();
  for (std::size_t i = 0; i < servers_.size(); ++i) {
    if (!network_.cluster(i)) {
      servers_[i].walks.emplace_back();
      pump(i);
      continue;
    }
    // A Cluster member's keys are spread over its masters: each is walked, once the map names them.
    servers_[i].mapping = true;
    Request map = Request::command({"CLUSTER", "SLOTS"});
    map.node = kAnyNode;
    send(i, std::move(map), [this, i](Result r) { on_map(i, std::move(r)); });
  }
  auto all_done = [this] {
    return std::all_of(servers_.begin(), servers_.end(), [](const Server& s) { return s.done(); });
  };
  network_.run_until(all_done, start + options_.time_limit);
  for (std::size_t i = 0; i < servers_.size(); ++i) {
    if (servers_[i].done()) continue;
    fail(i, failed(Failure::Timeout, "the listing did not end within " + format_duration(options_.time_limit)));
  }
  std::vector<std::optional<Result>> outcomes;
  for (const auto& s : servers_) outcomes.push_back(s.failure);
  check_duplicates(outcomes);
  ListResult res = merge();
  res.elapsed = network_.now() - start;
  for (std::size_t i = 0; i < servers_.size(); ++i) {
    const Server& s = servers_[i];
    ServerReport& rep = res.servers.emplace_back();
    rep.server = network_.describe(i);
    rep.role = network_.role(i);
    rep.resolved = network_.resolved(i);
    rep.ok = !s.failure;
    rep.result = s.failure ? Answer::Failed : Answer::Listed;
    if (s.failure) rep.failure = s.failure->failure;
    if (s.failure) rep.error = s.failure->error;
    rep.latency = s.finished - start;
  }
  return res;
}

std::vector<std::optional<LockReading>> Listing::readings_of(const std::string& key) const {
  std::vector<std::optional<LockReading>> readings(servers_.size());
  for (std::size_t i = 0; i < servers_.size(); ++i) {
    if (servers_[i].failure) continue;
    auto it = servers_[i].readings.find(key);
    readings[i] = it == servers_[i].readings.end() ? LockReading{} : it->second;
  }
  return readings;
}

// Another kind of data under the prefix (a hash, a set, a string without an expiry) without a
// fence is not a lock.
bool a_lock(const std::vector<std::optional<LockReading>>& readings) {
  return std::any_of(readings.begin(), readings.end(),
                     [](const auto& r) { return r && (lock_like(r->type, r->ttl_ms) || r->fence > 0); });
}

struct SemaphoreReadings {
  std::vector<std::optional<LockReading>> limits;
  std::vector<std::pair<std::size_t, std::vector<std::optional<LockReading>>>> slots;
};

// A lock's row: a mutex, or the shared mode's while its readers hold (the lock holds their marker,
// no one's token).
ListedLock judge_mutex(const std::string& name, const std::string& key,
                       const std::vector<std::optional<LockReading>>& readings) {
  ListedLock row{name, key, judge_lock(readings), "mutex", std::nullopt, {}};
  if (row.verdict.token == kSharedMarker) {
    row.mode = "shared";
    row.verdict.token.reset();
  }
  return row;
}

ListResult Listing::merge() const {
  ListResult res;
  res.truncated = truncated_;
  res.tally.total = servers_.size();
  std::set<std::string> keys;
  for (const auto& s : servers_) {
    if (s.failure) continue;
    ++res.tally.yes;
    for (const auto& entry : s.readings) keys.insert(entry.first);
  }
  res.tally.failed = res.tally.total - res.tally.yes;
  res.no_quorum = res.tally.yes < res.tally.needed();
  std::map<std::string, SemaphoreReadings> semaphores;
  for (const auto& key : keys) {
    const FoundKey& found = targets_.at(key);
    auto readings = readings_of(key);
    if (found.limit) semaphores[found.lock].limits = std::move(readings);
    if (found.slot) semaphores[found.lock].slots.emplace_back(*found.slot, std::move(readings));
    if (!found.semaphore() && a_lock(readings)) {
      res.locks.push_back(judge_mutex(key.substr(options_.prefix.size()), key, readings));
    }
  }
  for (const auto& [key, s] : semaphores) {
    res.locks.push_back(judge_semaphore(key.substr(options_.prefix.size()), key, s.limits, s.slots));
  }
  std::sort(res.locks.begin(), res.locks.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return res;
}

// The limit on most servers that hold one.
std::optional<std::size_t> majority_limit(const std::vector<std::optional<LockReading>>& limits) {
  std::map<std::string, std::size_t> votes;
  for (const auto& r : limits) {
    if (r && r->type == "string" && r->value) ++votes[*r->value];
  }
  const auto most =
      std::max_element(votes.begin(), votes.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  if (most == votes.end() || most->first.empty() || most->first.size() > 9 ||
      most->first.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return static_cast<std::size_t>(std::stoul(most->first));
}

}  // namespace

std::vector<std::string> scan_patterns(const std::string& prefix, const std::string& pattern) {
  const std::string keys = glob_escape(prefix) + pattern;
  if (keys == "*") return {keys};
  return {keys, "{" + keys + "}:redlock:*"};
}

namespace {

// What KEY stands for, whatever its name.
std::optional<FoundKey> what_key(const std::string& key) {
  auto helper = direct_helper_of(key);
  if (!helper) return FoundKey{key, key, std::nullopt, false};
  if (helper->word == "slot") return FoundKey{key, helper->lock, slot_number(key), false};
  if (helper->word == "limit") return FoundKey{key, helper->lock, std::nullopt, true};
  if (helper->word != "fence") return std::nullopt;
  // A fencing counter counts for its lock: a mutex, or a semaphore's slot.
  auto counted = direct_helper_of(helper->lock);
  if (!counted) return FoundKey{helper->lock, helper->lock, std::nullopt, false};
  if (counted->word == "slot") return FoundKey{helper->lock, counted->lock, slot_number(helper->lock), false};
  return std::nullopt;
}

}  // namespace

std::optional<FoundKey> found_key(const std::string& key, const std::string& prefix, const std::string& pattern) {
  auto found = what_key(key);
  if (!found) return std::nullopt;
  const std::string& lock = found->lock;
  if (lock.size() <= prefix.size() || lock.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  if (!glob_match(pattern, std::string_view(lock).substr(prefix.size()))) return std::nullopt;
  return found;
}

ListedLock judge_semaphore(const std::string& name, const std::string& key,
                           const std::vector<std::optional<LockReading>>& limits,
                           const std::vector<std::pair<std::size_t, std::vector<std::optional<LockReading>>>>& slots) {
  ListedLock row{name, key, {}, "semaphore", majority_limit(limits), {}};
  bool unknown = false;
  bool free = true;
  for (const auto& [slot, readings] : slots) {
    LockVerdict v = judge_lock(readings);
    row.verdict.fence = std::max(row.verdict.fence, v.fence);
    row.verdict.servers_held = std::max(row.verdict.servers_held, v.servers_held);
    unknown = unknown || v.state == LockState::Unknown;
    free = free && v.state == LockState::Free;
    if (v.state == LockState::Held) row.holders.push_back({slot, std::move(v)});
  }
  std::sort(row.holders.begin(), row.holders.end(), [](const auto& a, const auto& b) { return a.slot < b.slot; });
  row.verdict.state = unknown                ? LockState::Unknown
                      : !row.holders.empty() ? LockState::Held
                      : free                 ? LockState::Free
                                             : LockState::Partial;
  return row;
}

ListResult list_locks(Network& network, const ListOptions& options) {
  Listing listing(network, options);
  return listing.run();
}

}  // namespace redlock
