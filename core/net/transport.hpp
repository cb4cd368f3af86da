// The real network: one non-blocking connection per server (plus one per server for wake-up
// subscriptions), all driven by a single ppoll() loop. Each request carries its own deadline
// (--timeout, connect included), so a dead or frozen server costs at most that and never holds up
// the answers of the others.
#pragma once

#include <signal.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/net/cluster_member.hpp"
#include "core/net/connection.hpp"
#include "core/net/network.hpp"
#include "core/net/server_url.hpp"
#include "core/net/subscription.hpp"
#include "core/net/tls.hpp"

namespace redlock {

struct TransportOptions {
  Duration timeout = std::chrono::milliseconds(100);
  std::optional<std::string> user;      // for servers whose URL names none
  std::optional<std::string> password;  // likewise
  TlsOptions tls;
  // Sentinel and Cluster members: the replicas WAIT must confirm a vote on (--member-wait); unset: 1
  // when the master has replicas (ROLE), else 0.
  std::optional<int> member_wait;
};

class Transport final : public Network, private ClusterMemberObserver {
 public:
  // Throws a configuration error when a rediss:// server is listed and TLS cannot be set up.
  Transport(std::vector<ServerUrl> servers, TransportOptions options);
  ~Transport() override;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  std::size_t size() const override;
  TimePoint now() const override;
  void send(std::size_t server, Request request, ResultCallback done) override;
  void hold_writes(bool hold) override;
  void run_until(const std::function<bool()>& done, TimePoint deadline) override;
  void flush(TimePoint deadline) override;
  void subscribe(const std::string& channel, ChannelCallback on_event) override;
  void subscribe_channels(std::vector<std::vector<std::string>> channels, ChannelCallback on_event) override;
  std::size_t subscribed() const override;
  void unsubscribe() override;
  std::string describe(std::size_t server) const override;
  std::string role(std::size_t server) const override;
  std::string resolved(std::size_t server) const override;
  int database(std::size_t server) const override;
  bool cluster(std::size_t server) const override;
  bool fails_over(std::size_t server) const override;
  bool busy(std::size_t server) const override;
  bool resolving() const override;
  std::string duplicate_of(std::size_t server) const override;

  // The signal mask in force while waiting in ppoll() (signals blocked elsewhere are delivered only
  // there); nullptr leaves the mask alone.
  void set_wait_sigmask(const sigset_t* mask);

 private:
  // What SERVER's connections in ROLE (and, as Node, a Cluster member) are built from.
  ConnectionConfig connection_config(std::size_t server, ConnectionRole role) const;
  // This transport, as what its connections and Cluster members tell and ask.
  ClusterMemberObserver& observer() { return *this; }
  // Marks SERVER as a duplicate when another configured server reached the same endpoint; true if so.
  bool note_peer(std::size_t server) override;
  // Marks SERVER as a duplicate when another configured server has the same run_id.
  void note_run_id(std::size_t server) override;
  // Marks a standalone member that is a node of a listed Sentinel group as a duplicate.
  void note_role(std::size_t server) override;
  std::optional<ServerUrl> subscriber_target(std::size_t server, const std::string& channel) override;
  std::string cluster_overlap(std::size_t server) const override;
  // Every connection of the Cluster members, for the event loop.
  std::vector<CommandConnection*> cluster_connections() const;
  // This process's time waiting for a CPU (schedstat), read at most once per turn of the loop.
  Duration cpu_wait() override;
  bool holding_writes() const override { return holding_ > 0; }

  std::vector<ServerUrl> servers_;
  TransportOptions options_;
  std::unique_ptr<TlsContext> tls_;
  std::vector<std::unique_ptr<CommandConnection>> commands_;
  std::vector<std::unique_ptr<Subscription>> subscribers_;
  std::vector<std::unique_ptr<ClusterMember>> clusters_;  // by server; empty for the others
  std::optional<sigset_t> wait_mask_;
  std::optional<Duration> cpu_wait_;
  int holding_ = 0;                    // the Batches alive
  std::vector<std::size_t> held_for_;  // the servers sent to while holding
};

}  // namespace redlock
