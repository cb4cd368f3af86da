#include "core/net/cluster_member.hpp"

#include <algorithm>
#include <exception>
#include <utility>

#include "core/util/text.hpp"

namespace redlock {

namespace {

// Redirections one request may follow (MOVED, ASK) before it fails: a slot migrating while it is
// asked for takes two (ASK, then MOVED once it has moved); more is a map in flux.
constexpr int kMaxRedirects = 5;

// The slot a request is about: its route_key, else its first key (a script's KEYS[1], a command's
// first argument).
// Every key of one lock shares the lock's hash tag (keys_share_slot), so one slot serves them all.
int request_slot(const Request& r) {
  if (!r.route_key.empty()) return key_slot(r.route_key);
  if (r.script) return r.argv.size() > 1 && r.argv[0] != "0" ? key_slot(r.argv[1]) : 0;
  return r.argv.size() > 1 ? key_slot(r.argv[1]) : 0;
}

// CLUSTER SLOTS, as list and doctor send it (Request::node kAnyNode) and as the member itself does.
bool asks_slot_map(const Request& r) {
  return !r.script && r.argv.size() == 2 && r.argv[0] == "CLUSTER" && r.argv[1] == "SLOTS";
}

std::string unreachable(const ClusterNode& n) {
  return "the cluster's map gives no endpoint for the node " + n.address() +
         " (its endpoint is unknown: cluster-preferred-endpoint-type hostname without a hostname?)";
}

// Failures after which the slot may have moved (a failover): the map is learnt again.
bool map_may_be_stale(const Result& r) {
  return r.failure == Failure::Connect || r.failure == Failure::Closed || r.failure == Failure::Io ||
         r.failure == Failure::Timeout ||
         (r.failure == Failure::Reply && (r.error.starts_with("CLUSTERDOWN") || r.error.starts_with("TRYAGAIN")));
}

}  // namespace

ClusterMember::ClusterMember(ConnectionConfig config, ClusterMemberObserver& observer)
    : config_(std::move(config)), observer_(observer) {}

void ClusterMember::send(Request request, ResultCallback done, TimePoint now) {
  auto r = std::make_shared<Routed>();
  r->request = std::move(request);
  r->done = std::move(done);
  r->sent = now;
  r->deadline = now + config_.timeout;
  route(r, now);
}

void ClusterMember::expire(TimePoint now) {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (now < (*it)->deadline) {
      ++it;
      continue;
    }
    auto r = *it;
    it = waiting_.erase(it);
    finish(*r, Failure::Timeout,
           "the cluster's slot map not learnt within " + ms_text(config_.timeout) +
               (error_.empty() ? "" : " (" + error_ + ")"),
           now);
  }
}

TimePoint ClusterMember::next_deadline() const {
  TimePoint t = kNever;
  for (const auto& r : waiting_) t = std::min(t, r->deadline);
  return t;
}

void ClusterMember::connections(std::vector<CommandConnection*>& out) const {
  for (const auto& [address, c] : nodes_) out.push_back(c.get());
}

std::optional<ServerUrl> ClusterMember::node_for(const std::string& key, TimePoint now) {
  if (!map_) {
    ask_map(now);
    return std::nullopt;
  }
  auto node = map_->owner(key_slot(key));
  if (!node) return std::nullopt;
  return url().master_at(node->host, node->port);
}

void ClusterMember::finish(Routed& r, Failure failure, std::string error, TimePoint now) {
  Result res;
  res.failure = failure;
  res.error = std::move(error);
  res.latency = now - r.sent;
  if (r.done) r.done(std::move(res));
}

CommandConnection& ClusterMember::node(const ClusterNode& n) {
  auto& c = nodes_[n.address()];
  if (!c) {
    c = std::make_unique<CommandConnection>(config_, observer_);
    c->aim(url().master_at(n.host, n.port));
  }
  return *c;
}

void ClusterMember::route(const std::shared_ptr<Routed>& r, TimePoint now) {
  if (!duplicate_.empty()) return finish(*r, Failure::Duplicate, duplicate_, now);
  if (!map_) {
    waiting_.push_back(r);
    return ask_map(now);
  }
  if (stale_) ask_map(now);
  if (!r->request.node.empty()) return route_to_node(r, now);
  const int slot = request_slot(r->request);
  const auto target = r->ask ? r->ask : map_->owner(slot);
  if (!target) {
    stale_ = true;
    return finish(*r, Failure::Reply, "no node of the cluster serves slot " + std::to_string(slot), now);
  }
  if (!target->reachable()) {
    stale_ = true;
    return finish(*r, Failure::Connect, "slot " + std::to_string(slot) + ": " + unreachable(*target), now);
  }
  CommandConnection& c = node(*target);
  if (r->ask)
    c.send(
        Request::command({"ASKING"}), [](Result) {}, now, r->deadline);
  c.send(
      r->request, [this, r, target](Result res) { on_result(r, *target, std::move(res)); }, now, r->deadline);
}

void ClusterMember::route_to_node(const std::shared_ptr<Routed>& r, TimePoint now) {
  const auto nodes = r->request.node == kAnyNode ? map_->masters() : map_->nodes();
  const auto it = std::find_if(nodes.begin(), nodes.end(), [&](const ClusterNode& n) {
    return r->request.node == kAnyNode ? n.reachable() : n.address() == r->request.node;
  });
  if (it == nodes.end()) return finish(*r, Failure::Reply, r->request.node + " is no node of the cluster's map", now);
  if (!it->reachable()) return finish(*r, Failure::Connect, unreachable(*it), now);
  const ClusterNode target = *it;
  node(target).send(
      r->request, [this, r, target](Result res) { on_result(r, target, std::move(res)); }, now, r->deadline);
}

void ClusterMember::on_result(const std::shared_ptr<Routed>& r, const ClusterNode& from, Result res) {
  const TimePoint now = Clock::now();
  // A request for one node is that node's answer, a redirection included.
  if (res.failure == Failure::Reply && r->request.node.empty()) {
    if (auto redirect = parse_redirect(res.error)) {
      if (redirect->node.host.empty()) redirect->node.host = from.host;
      if (r->redirects < kMaxRedirects && now < r->deadline) {
        ++r->redirects;
        r->ask.reset();
        if (redirect->ask) {
          r->ask = redirect->node;
        } else {
          map_->move(redirect->slot, redirect->node);
          stale_ = true;  // the rest of the map may have changed too
        }
        return route(r, now);
      }
      res.error = "redirected " + std::to_string(r->redirects) + " times, no further (" + res.error + ")";
    }
  }
  if (map_may_be_stale(res)) stale_ = true;
  if (res.ok() && asks_slot_map(r->request)) resolve_endpoints(res.reply, from.host);
  answered_ = from.address();
  role_ = nodes_[from.address()]->server_role();
  res.latency = now - r->sent;
  if (r->done) r->done(std::move(res));
}

// Where the map is asked for: the seeds, then every node the last map named.
std::vector<ClusterNode> ClusterMember::candidates() const {
  std::vector<ClusterNode> out;
  for (const auto& seed : url().seeds) out.push_back(ClusterNode{seed.host, seed.port, 0});
  if (map_) {
    for (auto& n : map_->nodes()) {
      if (n.reachable()) out.push_back(std::move(n));
    }
  }
  return out;
}

void ClusterMember::ask_map(TimePoint now) {
  if (asking_) return;
  asking_ = true;
  const auto all = candidates();
  const ClusterNode n = all[next_ % all.size()];
  node(n).send(
      Request::command({"CLUSTER", "SLOTS"}), [this, n](Result res) { on_map(n, std::move(res)); }, now,
      now + config_.timeout);
}

void ClusterMember::on_map(const ClusterNode& from, Result res) {
  const TimePoint now = Clock::now();
  asking_ = false;
  std::optional<SlotMap> map;
  if (res.ok()) {
    resolve_endpoints(res.reply, from.host);
    try {
      map = SlotMap::parse(res.reply);
      if (map->ranges().empty()) res.error = "it serves no slot (is the cluster made yet?)";
    } catch (const std::exception& e) {
      res.error = e.what();
    }
  }
  if (map && !map->ranges().empty()) return learnt(std::move(*map), now);
  error_ = from.address() + ": " + res.error;
  if (res.error.find("cluster support disabled") != std::string::npos) {
    return fail_waiting(Failure::Config,
                        url().redacted() + ": " + from.address() + " is no cluster node (" + res.error + ")", now);
  }
  failure_ = tried_ == 0 || failure_ == res.failure ? res.failure : Failure::Connect;
  ++next_;
  if (++tried_ >= candidates().size()) {
    tried_ = 0;
    // A wrong password, TLS or something that is not Redis on every node is not waited out.
    const bool incurable = failure_ == Failure::Auth || failure_ == Failure::Tls || failure_ == Failure::Protocol;
    return fail_waiting(incurable ? failure_ : Failure::Connect,
                        "no node of the cluster gave its slot map (" + error_ + ")", now);
  }
  if (!waiting_.empty() || stale_) ask_map(now);
}

void ClusterMember::learnt(SlotMap map, TimePoint now) {
  map_ = std::move(map);
  stale_ = false;
  tried_ = 0;
  error_.clear();
  duplicate_ = observer_.cluster_overlap(config_.server);
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& r : waiting) route(r, now);
}

void ClusterMember::fail_waiting(Failure failure, const std::string& error, TimePoint now) {
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& r : waiting) finish(*r, failure, error, now);
}

}  // namespace redlock
