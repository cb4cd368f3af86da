#include "core/net/transport.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/net/cluster.hpp"
#include "core/util/error.hpp"

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

Transport::Transport(std::vector<ServerUrl> servers, TransportOptions options)
    : servers_(std::move(servers)), options_(std::move(options)) {
  bool any_tls = std::any_of(servers_.begin(), servers_.end(), [](const ServerUrl& u) { return u.uses_tls(); });
  if (any_tls) tls_ = std::make_unique<TlsContext>(options_.tls);
  for (std::size_t i = 0; i < servers_.size(); ++i) {
    auto config = connection_config(i, ConnectionRole::Commands);
    commands_.push_back(std::make_unique<CommandConnection>(std::move(config), observer()));
    clusters_.push_back(servers_[i].is_cluster()
                            ? std::make_unique<ClusterMember>(connection_config(i, ConnectionRole::Node), observer())
                            : nullptr);
  }
}

Transport::~Transport() = default;

ConnectionConfig Transport::connection_config(std::size_t server, ConnectionRole role) const {
  ConnectionConfig c;
  c.server = server;
  c.url = servers_[server];
  c.role = role;
  c.timeout = options_.timeout;
  c.user = options_.user;
  c.password = options_.password;
  c.tls = tls_.get();
  c.member_wait = options_.member_wait;
  return c;
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
  if (holding_ && std::find(held_for_.begin(), held_for_.end(), server) == held_for_.end()) held_for_.push_back(server);
  if (clusters_.at(server)) return clusters_[server]->send(std::move(request), std::move(done), now);
  commands_.at(server)->send(std::move(request), std::move(done), now, now + options_.timeout);
}

void Transport::hold_writes(bool hold) {
  // Batches nest: the requests leave when the outermost ends.
  holding_ = hold ? holding_ + 1 : holding_ - 1;
  if (holding_ > 0) return;
  const TimePoint now = Clock::now();
  for (const std::size_t server : std::exchange(held_for_, {})) {
    if (clusters_[server]) {
      std::vector<CommandConnection*> nodes;
      clusters_[server]->connections(nodes);
      for (auto* c : nodes) c->drive(now);
    } else {
      commands_[server]->drive(now);
    }
  }
}

void Transport::run_until(const std::function<bool()>& done, TimePoint deadline) {
  std::vector<pollfd> fds;
  std::vector<Connection*> owners;
  for (;;) {
    cpu_wait_.reset();  // read afresh once per turn, when a deadline needs it
    TimePoint now = Clock::now();
    TimePoint wake = deadline;
    for (auto& c : commands_) {
      c->expire(now);
      wake = std::min(wake, c->next_deadline());
    }
    for (auto& s : subscribers_) {
      s->expire(now);
      s->maintain(now);
      wake = std::min(wake, s->next_deadline());
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
    for (auto& c : commands_) owners.push_back(c.get());
    for (auto& s : subscribers_) owners.push_back(s.get());
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

std::vector<CommandConnection*> Transport::cluster_connections() const {
  std::vector<CommandConnection*> out;
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
    if (!node.reachable()) continue;  // no endpoint to compare
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

void Transport::subscribe(const std::string& channel, ChannelCallback on_event) {
  subscribe_channels(std::vector<std::vector<std::string>>(servers_.size(), {channel}), std::move(on_event));
}

void Transport::subscribe_channels(std::vector<std::vector<std::string>> channels, ChannelCallback on_event) {
  if (subscribers_.empty()) {
    for (std::size_t i = 0; i < servers_.size(); ++i) {
      subscribers_.push_back(
          std::make_unique<Subscription>(connection_config(i, ConnectionRole::Subscriber), observer()));
    }
  }
  for (std::size_t i = 0; i < subscribers_.size(); ++i) subscribers_[i]->subscribe(std::move(channels.at(i)), on_event);
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

bool Transport::cluster(std::size_t server) const {
  return clusters_.at(server) != nullptr;
}

bool Transport::fails_over(std::size_t server) const {
  return cluster(server) || servers_.at(server).is_sentinel();
}

bool Transport::busy(std::size_t server) const {
  if (!clusters_.at(server)) return commands_.at(server)->busy();
  std::vector<CommandConnection*> nodes;
  clusters_[server]->connections(nodes);
  return clusters_[server]->resolving() ||
         std::any_of(nodes.begin(), nodes.end(), [](const CommandConnection* c) { return c->busy(); });
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
