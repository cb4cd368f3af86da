#include "core/net/transport.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>

#include "core/net/cluster.hpp"
#include "core/util/error.hpp"
#include "core/util/text.hpp"

namespace redlock {

namespace {

// How long this process has been ready to run but waiting for a CPU, from the kernel's schedstat
// (zero where it does not say).
Duration read_cpu_wait() {
  int fd = open("/proc/self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Duration::zero();
  char buf[96];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  buf[n > 0 ? n : 0] = '\0';
  char* end = nullptr;
  std::strtoull(buf, &end, 10);  // time on a CPU; the run-queue wait follows
  return std::chrono::nanoseconds(std::strtoull(end, nullptr, 10));
}

}  // namespace

std::string_view failure_name(Failure f) {
  switch (f) {
    case Failure::None:
      return "none";
    case Failure::Timeout:
      return "timeout";
    case Failure::Connect:
      return "connect";
    case Failure::Tls:
      return "tls";
    case Failure::Auth:
      return "auth";
    case Failure::Io:
      return "io";
    case Failure::Closed:
      return "closed";
    case Failure::Protocol:
      return "protocol";
    case Failure::Reply:
      return "reply";
    case Failure::Duplicate:
      return "duplicate";
    case Failure::Replica:
      return "replica";
    case Failure::Config:
      return "config";
  }
  return "unknown";
}

Request Request::eval(const Script& script, std::vector<std::string> keys, std::vector<std::string> args) {
  Request r;
  r.script = &script;
  r.argv.reserve(1 + keys.size() + args.size());
  r.argv.push_back(std::to_string(keys.size()));
  for (auto& k : keys) r.argv.push_back(std::move(k));
  for (auto& a : args) r.argv.push_back(std::move(a));
  return r;
}

Request Request::command(std::vector<std::string> argv) {
  Request r;
  r.argv = std::move(argv);
  return r;
}

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

// Failures after which the slot may have moved (a failover): the map is learnt again.
bool map_may_be_stale(const Result& r) {
  return r.failure == Failure::Connect || r.failure == Failure::Closed || r.failure == Failure::Io ||
         r.failure == Failure::Timeout ||
         (r.failure == Failure::Reply && (r.error.starts_with("CLUSTERDOWN") || r.error.starts_with("TRYAGAIN")));
}

}  // namespace

// A Cluster member: its vote is given by the master that owns the slot of the request's key. The
// slot map comes from CLUSTER SLOTS, asked of the seeds (then of the nodes the map named) in turn;
// requests wait for it within their own deadline. A MOVED updates the map and re-sends the request
// to the node named, an ASK sends it there once after ASKING, each within the same deadline.
class Transport::ClusterMember {
 public:
  ClusterMember(Transport& owner, std::size_t index) : owner_(owner), index_(index) {}

  void send(Request request, ResultCallback done, TimePoint now) {
    auto r = std::make_shared<Routed>();
    r->request = std::move(request);
    r->done = std::move(done);
    r->sent = now;
    r->deadline = now + owner_.options_.timeout;
    route(r, now);
  }

  // Requests still waiting for the map past their deadline fail.
  void expire(TimePoint now) {
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (now < (*it)->deadline) {
        ++it;
        continue;
      }
      auto r = *it;
      it = waiting_.erase(it);
      finish(*r, Failure::Timeout,
             "the cluster's slot map not learnt within " + ms_text(owner_.options_.timeout) +
                 (error_.empty() ? "" : " (" + error_ + ")"),
             now);
    }
  }

  TimePoint next_deadline() const {
    TimePoint t = kNever;
    for (const auto& r : waiting_) t = std::min(t, r->deadline);
    return t;
  }

  void connections(std::vector<Connection*>& out) const {
    for (const auto& [address, c] : nodes_) out.push_back(c.get());
  }

  bool resolving() const { return !map_ && (asking_ || !waiting_.empty()); }
  const std::string& resolved() const { return answered_; }
  const std::string& role() const { return role_; }
  const std::optional<SlotMap>& map() const { return map_; }

  // The master of KEY's slot as a URL with the member's credentials; the map is asked for when unknown.
  std::optional<ServerUrl> node_for(const std::string& key, TimePoint now) {
    if (!map_) {
      ask_map(now);
      return std::nullopt;
    }
    auto node = map_->owner(key_slot(key));
    if (!node) return std::nullopt;
    return url().master_at(node->host, node->port);
  }

 private:
  struct Routed {
    Request request;
    ResultCallback done;
    TimePoint sent;
    TimePoint deadline;
    int redirects = 0;
    std::optional<ClusterNode> ask;  // an ASK to follow: this node, once, after ASKING
  };

  const ServerUrl& url() const { return owner_.servers_[index_]; }

  void finish(Routed& r, Failure failure, std::string error, TimePoint now) {
    Result res;
    res.failure = failure;
    res.error = std::move(error);
    res.latency = now - r.sent;
    if (r.done) r.done(std::move(res));
  }

  Connection& node(const ClusterNode& n) {
    auto& c = nodes_[n.address()];
    if (!c) {
      c = owner_.connection(index_, ConnectionRole::Node);
      c->aim(url().master_at(n.host, n.port));
    }
    return *c;
  }

  void route(const std::shared_ptr<Routed>& r, TimePoint now) {
    if (!duplicate_.empty()) return finish(*r, Failure::Duplicate, duplicate_, now);
    if (!map_) {
      waiting_.push_back(r);
      return ask_map(now);
    }
    if (stale_) ask_map(now);
    const int slot = request_slot(r->request);
    const auto target = r->ask ? r->ask : map_->owner(slot);
    if (!target) {
      stale_ = true;
      return finish(*r, Failure::Reply, "no node of the cluster serves slot " + std::to_string(slot), now);
    }
    Connection& c = node(*target);
    if (r->ask) c.send(Request::command({"ASKING"}), [](Result) {}, now, r->deadline);
    c.send(
        r->request, [this, r, target](Result res) { on_result(r, *target, std::move(res)); }, now, r->deadline);
  }

  void on_result(const std::shared_ptr<Routed>& r, const ClusterNode& from, Result res) {
    const TimePoint now = Clock::now();
    if (res.failure == Failure::Reply) {
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
    answered_ = from.address();
    role_ = nodes_[from.address()]->server_role();
    res.latency = now - r->sent;
    if (r->done) r->done(std::move(res));
  }

  // Where the map is asked for: the seeds, then every node the last map named.
  std::vector<ClusterNode> candidates() const {
    std::vector<ClusterNode> out;
    for (const auto& seed : url().seeds) out.push_back(ClusterNode{seed.host, seed.port, 0});
    if (map_) {
      for (auto& n : map_->nodes()) out.push_back(std::move(n));
    }
    return out;
  }

  void ask_map(TimePoint now) {
    if (asking_) return;
    asking_ = true;
    const auto all = candidates();
    const ClusterNode n = all[next_ % all.size()];
    node(n).send(
        Request::command({"CLUSTER", "SLOTS"}), [this, n](Result res) { on_map(n, std::move(res)); }, now,
        now + owner_.options_.timeout);
  }

  void on_map(const ClusterNode& from, Result res) {
    const TimePoint now = Clock::now();
    asking_ = false;
    std::optional<SlotMap> map;
    if (res.ok()) {
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
      return fail_waiting(Failure::Config, url().redacted() + ": " + from.address() + " is no cluster node (" +
                                                res.error + ")", now);
    }
    ++next_;
    if (++tried_ >= candidates().size()) {
      tried_ = 0;
      return fail_waiting(Failure::Connect, "no node of the cluster gave its slot map (" + error_ + ")", now);
    }
    if (!waiting_.empty() || stale_) ask_map(now);
  }

  void learnt(SlotMap map, TimePoint now) {
    map_ = std::move(map);
    stale_ = false;
    tried_ = 0;
    error_.clear();
    duplicate_ = owner_.cluster_overlap(index_);
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& r : waiting) route(r, now);
  }

  void fail_waiting(Failure failure, const std::string& error, TimePoint now) {
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& r : waiting) finish(*r, failure, error, now);
  }

  Transport& owner_;
  std::size_t index_;
  std::map<std::string, std::unique_ptr<Connection>> nodes_;  // by "host:port"
  std::optional<SlotMap> map_;
  bool asking_ = false;  // a CLUSTER SLOTS is out
  bool stale_ = false;   // the map is to be learnt again (a MOVED, a failed node)
  std::size_t next_ = 0;
  std::size_t tried_ = 0;
  std::string error_;  // why the last node asked for the map gave none
  std::deque<std::shared_ptr<Routed>> waiting_;
  std::string answered_;  // the node that answered last, and its role
  std::string role_;
  std::string duplicate_;
};

Transport::Transport(std::vector<ServerUrl> servers, TransportOptions options)
    : servers_(std::move(servers)), options_(std::move(options)) {
  bool any_tls = std::any_of(servers_.begin(), servers_.end(),
                             [](const ServerUrl& u) { return u.uses_tls(); });
  if (any_tls) tls_ = std::make_unique<TlsContext>(options_.tls);
  for (std::size_t i = 0; i < servers_.size(); ++i) {
    commands_.push_back(connection(i, ConnectionRole::Commands));
    clusters_.push_back(servers_[i].is_cluster() ? std::make_unique<ClusterMember>(*this, i) : nullptr);
  }
}

Transport::~Transport() = default;

std::unique_ptr<Connection> Transport::connection(std::size_t server, ConnectionRole role) {
  ConnectionConfig c;
  c.server = server;
  c.url = servers_[server];
  c.role = role;
  c.timeout = options_.timeout;
  c.user = options_.user;
  c.password = options_.password;
  c.tls = tls_.get();
  c.member_wait = options_.member_wait;
  return std::make_unique<Connection>(std::move(c), static_cast<ConnectionObserver&>(*this));
}

Duration Transport::cpu_wait() {
  if (!cpu_wait_) cpu_wait_ = read_cpu_wait();
  return *cpu_wait_;
}

std::size_t Transport::size() const {
  return servers_.size();
}

TimePoint Transport::now() const {
  return Clock::now();
}

void Transport::send(std::size_t server, Request request, ResultCallback done) {
  const TimePoint now = Clock::now();
  if (clusters_.at(server)) return clusters_[server]->send(std::move(request), std::move(done), now);
  commands_.at(server)->send(std::move(request), std::move(done), now, now + options_.timeout);
}

void Transport::run_until(const std::function<bool()>& done, TimePoint deadline) {
  std::vector<pollfd> fds;
  std::vector<Connection*> owners;
  for (;;) {
    cpu_wait_.reset();  // read afresh once per turn, when a deadline needs it
    TimePoint now = Clock::now();
    TimePoint wake = deadline;
    for (auto* group : {&commands_, &subscribers_}) {
      for (auto& c : *group) {
        c->expire(now);
        c->maintain(now);
        wake = std::min(wake, c->next_deadline());
      }
    }
    for (auto& m : clusters_) {
      if (!m) continue;
      m->expire(now);
      wake = std::min(wake, m->next_deadline());
    }
    for (auto* c : cluster_connections()) {
      c->expire(now);
      wake = std::min(wake, c->next_deadline());
    }
    if (done() || now >= deadline) {
      cpu_wait_.reset();
      return;
    }

    fds.clear();
    owners.clear();
    for (auto* group : {&commands_, &subscribers_}) {
      for (auto& c : *group) owners.push_back(c.get());
    }
    for (auto* c : cluster_connections()) owners.push_back(c);
    std::erase_if(owners, [](Connection* c) { return c->events() == 0; });
    for (auto* c : owners) fds.push_back(pollfd{c->fd(), c->events(), 0});

    auto wait = std::max(Duration::zero(), wake - now);
    auto secs = std::chrono::duration_cast<std::chrono::seconds>(wait);
    timespec ts{static_cast<time_t>(secs.count()),
                static_cast<long>(std::chrono::duration_cast<std::chrono::nanoseconds>(wait - secs).count())};
    int rc = ppoll(fds.data(), fds.size(), &ts, wait_mask_ ? &*wait_mask_ : nullptr);
    if (rc < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorKind::Internal, std::string("ppoll: ") + std::strerror(errno));
    }
    now = Clock::now();
    for (std::size_t i = 0; i < owners.size(); ++i) {
      if (fds[i].revents != 0) owners[i]->drive(now);
    }
  }
}

void Transport::flush(TimePoint deadline) {
  run_until(
      [this] {
        const auto nodes = cluster_connections();
        return std::all_of(commands_.begin(), commands_.end(), [](const auto& c) { return c->flushed(); }) &&
               std::all_of(nodes.begin(), nodes.end(), [](const auto* c) { return c->flushed(); });
      },
      deadline);
}

std::vector<Connection*> Transport::cluster_connections() const {
  std::vector<Connection*> out;
  for (const auto& m : clusters_) {
    if (m) m->connections(out);
  }
  return out;
}

std::optional<ServerUrl> Transport::subscriber_target(std::size_t server, const std::string& channel) {
  if (servers_[server].is_sentinel()) return commands_[server]->master();
  return clusters_.at(server)->node_for(channel, Clock::now());
}

std::string Transport::cluster_overlap(std::size_t server) const {
  const auto& map = clusters_.at(server)->map();
  const ServerUrl& url = servers_[server];
  for (const auto& node : map->nodes()) {
    const std::string address = url.master_at(node.host, node.port).address();
    for (std::size_t j = 0; j < servers_.size(); ++j) {
      if (j == server) continue;
      bool shared = servers_[j].address() == address;
      if (clusters_[j] && clusters_[j]->map()) {
        for (const auto& other : clusters_[j]->map()->nodes())
          shared = shared || servers_[j].master_at(other.host, other.port).address() == address;
      }
      if (!shared) continue;
      return url.redacted() + " has the node " + node.address() + " in common with " + servers_[j].redacted() +
             ": it would count one vote twice";
    }
  }
  return {};
}

void Transport::subscribe(const std::string& channel, MessageCallback on_message) {
  subscribe_channels(std::vector<std::vector<std::string>>(servers_.size(), {channel}),
                     [on_message = std::move(on_message)](std::size_t server, const std::string&,
                                                          std::string_view message) { on_message(server, message); });
}

void Transport::subscribe_channels(std::vector<std::vector<std::string>> channels, ChannelCallback on_message) {
  if (subscribers_.empty()) {
    for (std::size_t i = 0; i < servers_.size(); ++i) {
      subscribers_.push_back(connection(i, ConnectionRole::Subscriber));
    }
  }
  for (std::size_t i = 0; i < subscribers_.size(); ++i)
    subscribers_[i]->subscribe(std::move(channels.at(i)), on_message);
  TimePoint now = Clock::now();
  for (auto& s : subscribers_) s->maintain(now);
}

std::size_t Transport::subscribed() const {
  return static_cast<std::size_t>(
      std::count_if(subscribers_.begin(), subscribers_.end(), [](const auto& s) { return s->subscribed(); }));
}

void Transport::unsubscribe() {
  subscribers_.clear();
}

std::string Transport::describe(std::size_t server) const {
  return servers_.at(server).redacted();
}

void Transport::set_wait_sigmask(const sigset_t* mask) {
  if (mask) {
    wait_mask_ = *mask;
  } else {
    wait_mask_.reset();
  }
}

bool Transport::resolving() const {
  return std::any_of(commands_.begin(), commands_.end(), [](const auto& c) { return c->resolving(); }) ||
         std::any_of(clusters_.begin(), clusters_.end(), [](const auto& m) { return m && m->resolving(); });
}

int Transport::database(std::size_t server) const {
  return servers_.at(server).db;
}

std::string Transport::role(std::size_t server) const {
  if (clusters_.at(server)) return clusters_[server]->role();
  return commands_.at(server)->server_role();
}

std::string Transport::duplicate_of(std::size_t server) const {
  return commands_.at(server)->duplicate_message();
}

std::string Transport::resolved(std::size_t server) const {
  if (clusters_.at(server)) return clusters_[server]->resolved();
  return commands_.at(server)->resolved();
}

bool Transport::note_peer(std::size_t server) {
  // Two names that reach one endpoint (localhost and 127.0.0.1) are one server, known as soon as
  // both are connected, long before either answers; the run_id check covers the rest.
  const std::string& peer = commands_[server]->peer();
  if (peer.empty()) return false;
  for (std::size_t j = 0; j < commands_.size(); ++j) {
    if (j == server || commands_[j]->duplicate() || commands_[j]->peer() != peer) continue;
    commands_[server]->set_duplicate(servers_[server].redacted() + " is the same Redis server as " +
                                     servers_[j].redacted() + " (both reach " + peer +
                                     "): it would count one vote twice");
    return true;
  }
  return false;
}

void Transport::note_role(std::size_t) {
  // A standalone member that is a node of a listed Sentinel group (its master's replica, by either
  // one's ROLE) would vote twice for one group, or not at all: refused, as a server listed twice.
  for (std::size_t s = 0; s < commands_.size(); ++s) {
    if (servers_[s].is_sentinel() || commands_[s]->duplicate()) continue;
    const auto& node = *commands_[s];
    for (std::size_t g = 0; g < commands_.size(); ++g) {
      if (!servers_[g].is_sentinel()) continue;
      const std::string master = commands_[g]->resolved();
      const auto& replicas = commands_[g]->linked();
      const bool of_group = !master.empty() && !node.peer().empty() &&
                            (std::find(replicas.begin(), replicas.end(), node.peer()) != replicas.end() ||
                             std::find(node.linked().begin(), node.linked().end(), master) != node.linked().end());
      if (!of_group) continue;
      commands_[s]->set_duplicate(servers_[s].redacted() + " is a node of the Sentinel group " +
                                  servers_[g].redacted() + " (its master " + master +
                                  "): a group is one member, one vote");
      break;
    }
  }
}

void Transport::note_run_id(std::size_t server) {
  const std::string& id = commands_[server]->run_id();
  for (std::size_t j = 0; j < commands_.size(); ++j) {
    if (j == server || commands_[j]->run_id() != id) continue;
    commands_[server]->set_duplicate(servers_[server].redacted() + " is the same Redis server as " +
                                     servers_[j].redacted() + " (run_id " + id + "): it would count one vote twice");
    return;
  }
}

}  // namespace redlock
