// A Cluster member: its vote is given by the master that owns the slot of the request's key. The
// slot map comes from CLUSTER SLOTS, asked of the seeds (then of the nodes the map named) in turn;
// requests wait for it within their own deadline. A MOVED updates the map and re-sends the request
// to the node named, an ASK sends it there once after ASKING, each within the same deadline. A
// request that names its node (Request::node: list's SCAN of each master, doctor's checks) goes
// there, once the map is known, and is never redirected.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/net/cluster.hpp"
#include "core/net/connection.hpp"
#include "core/net/network.hpp"
#include "core/net/server_url.hpp"
#include "core/util/clock.hpp"

namespace redlock {

// What a Cluster member asks the owner of every member; its nodes' connections tell and ask it
// what any connection does.
class ClusterMemberObserver : public ConnectionObserver {
 public:
  // Why Cluster member SERVER, whose slot map is known, would count a vote twice (a node of it
  // listed as a member of its own, or a node of another Cluster member); empty when it would not.
  virtual std::string cluster_overlap(std::size_t server) const = 0;
};

class ClusterMember {
 public:
  // CONFIG is the member's, as its nodes' connections get it; OBSERVER outlives the member.
  ClusterMember(ConnectionConfig config, ClusterMemberObserver& observer);
  ClusterMember(const ClusterMember&) = delete;
  ClusterMember& operator=(const ClusterMember&) = delete;

  void send(Request request, ResultCallback done, TimePoint now);

  // Requests still waiting for the map past their deadline fail.
  void expire(TimePoint now);

  TimePoint next_deadline() const;

  // Appends the connections to its nodes, for the event loop.
  void connections(std::vector<CommandConnection*>& out) const;

  bool resolving() const { return !map_ && (asking_ || !waiting_.empty()); }
  const std::string& resolved() const { return answered_; }
  const std::string& role() const { return role_; }
  const std::optional<SlotMap>& map() const { return map_; }

  // The master of KEY's slot as a URL with the member's credentials; the map is asked for when unknown.
  std::optional<ServerUrl> node_for(const std::string& key, TimePoint now);

 private:
  struct Routed {
    Request request;
    ResultCallback done;
    TimePoint sent;
    TimePoint deadline;
    int redirects = 0;
    std::optional<ClusterNode> ask;  // an ASK to follow: this node, once, after ASKING
  };

  const ServerUrl& url() const { return config_.url; }

  void finish(Routed& r, Failure failure, std::string error, TimePoint now);
  CommandConnection& node(const ClusterNode& n);
  void route(const std::shared_ptr<Routed>& r, TimePoint now);
  // A request for one node (Request::node), found among the nodes of the map.
  void route_to_node(const std::shared_ptr<Routed>& r, TimePoint now);
  void on_result(const std::shared_ptr<Routed>& r, const ClusterNode& from, Result res);
  std::vector<ClusterNode> candidates() const;

  void ask_map(TimePoint now);
  void on_map(const ClusterNode& from, Result res);
  void learnt(SlotMap map, TimePoint now);
  void fail_waiting(Failure failure, const std::string& error, TimePoint now);

  ConnectionConfig config_;
  ClusterMemberObserver& observer_;
  std::map<std::string, std::unique_ptr<CommandConnection>> nodes_;  // by "host:port"
  std::optional<SlotMap> map_;
  bool asking_ = false;  // a CLUSTER SLOTS is out
  bool stale_ = false;   // the map is to be learnt again (a MOVED, a failed node)
  std::size_t next_ = 0;
  std::size_t tried_ = 0;
  std::string error_;                // why the last node asked for the map gave none
  Failure failure_ = Failure::None;  // how every node asked for it since the last map failed, or Connect
  std::deque<std::shared_ptr<Routed>> waiting_;
  std::string answered_;  // the node that answered last, and its role
  std::string role_;
  std::string duplicate_;
};

}  // namespace redlock
