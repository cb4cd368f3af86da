// One connection to one server, for one member: its commands (pipelined, each reply matched to the
// front of the queue), its wake-up subscription, or, for a Cluster member, its commands to one node.
// It knows only its own member: what it needs is in its ConnectionConfig, and what it must tell or
// ask the owner of every member (a second name of a configured server, where a subscription goes,
// this process's wait for a CPU) goes through its ConnectionObserver.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/lock/scripts.hpp"
#include "core/net/network.hpp"
#include "core/net/resp.hpp"
#include "core/net/server_url.hpp"
#include "core/net/stream.hpp"
#include "core/net/tls.hpp"
#include "core/util/clock.hpp"

namespace redlock {

enum class ConnectionRole {
  Commands,    // a member's requests
  Subscriber,  // a member's wake-up subscription
  Node,        // a Cluster member's requests to one of its nodes
};

// What a connection needs to know of its member.
struct ConnectionConfig {
  std::size_t server = 0;  // the member's index: what the observer and the subscription callback are told
  ServerUrl url;           // the member as configured
  ConnectionRole role = ConnectionRole::Commands;
  Duration timeout{};                   // each request's deadline (--timeout, connect included)
  std::optional<std::string> user;      // for servers whose URL names none
  std::optional<std::string> password;  // likewise
  const TlsContext* tls = nullptr;      // set whenever a rediss:// server (or sentinel) is configured
  // Sentinel and Cluster members: the replicas WAIT must confirm a vote on; unset: 1 when the
  // master has replicas (ROLE), else 0.
  std::optional<int> member_wait;
};

// What a connection tells the owner of every member, or asks it. SERVER is the connection's
// ConnectionConfig::server.
class ConnectionObserver {
 public:
  virtual ~ConnectionObserver() = default;
  // A commands connection reached a new endpoint (its peer()). True when that makes it a second
  // connection to a server already configured: the observer has marked it duplicate.
  virtual bool note_peer(std::size_t server) = 0;
  // A commands connection learnt its server's run_id (INFO).
  virtual void note_run_id(std::size_t server) = 0;
  // A commands connection learnt its server's role and linked nodes (ROLE).
  virtual void note_role(std::size_t server) = 0;
  // Where a Sentinel or Cluster member's subscriber goes for CHANNEL: the master the member's
  // commands confirmed, the master of the channel's slot; none while unknown.
  virtual std::optional<ServerUrl> subscriber_target(std::size_t server, const std::string& channel) = 0;
  // This process's time waiting for a CPU so far (schedstat): not the server's time.
  virtual Duration cpu_wait() = 0;
};

class Connection {
 public:
  // OBSERVER outlives the connection.
  Connection(ConnectionConfig config, ConnectionObserver& observer);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const std::string& run_id() const { return run_id_; }
  const std::string& server_role() const { return server_role_; }
  const std::string& peer() const { return peer_; }
  const std::vector<std::string>& linked() const { return linked_; }
  bool duplicate() const { return duplicate_; }
  std::string duplicate_message() const { return duplicate_ ? duplicate_message_ : std::string(); }
  // Connecting, with the name not yet resolved to an address.
  bool resolving() const { return stream_ && !asking_ && !connected_ && stream_->peer().empty(); }
  // A Sentinel member's master once it said it is one; else the endpoint connected to.
  std::string resolved() const;
  bool subscribed() const { return subscribed_; }
  // A Sentinel member's master, once it said it is one.
  std::optional<ServerUrl> master() const { return confirmed_ ? target_ : std::nullopt; }

  // A Cluster member's node at TARGET.
  void aim(ServerUrl target) { target_ = std::move(target); }

  void send(Request request, ResultCallback done, TimePoint now, TimePoint deadline);

  void subscribe(std::vector<std::string> channels, ChannelCallback on_message);

  // Opens a subscriber connection that is due; called on every turn of the loop.
  void maintain(TimePoint now);

  // The poll events this connection waits for, or 0 when it has nothing to do.
  short events() const;
  int fd() const { return stream_ ? stream_->fd() : -1; }

  // The earliest deadline of a request still waited for.
  TimePoint next_deadline() const;

  // Nothing reaches a server before its connection is made (and, for TLS, its handshake done).
  bool flushed() const { return !stream_ || !connected_ || asking_ || (out_pos_ == out_.size() && held_.empty()); }

  void expire(TimePoint now);

  // Whether a request (or a subscription) waited for has reached its deadline by NOW.
  bool overdue(TimePoint now) const;

  // Requests sent and given up on whose replies are still to come.
  std::size_t abandoned() const;

  // Moves bytes: finishes connecting, writes what is queued, reads and dispatches replies.
  void drive(TimePoint now);

  // The TLS layer words its failures "TLS …"; anything else is the socket's.
  Failure stream_failure() const { return stream_->tls_failure() ? Failure::Tls : Failure::Io; }

  // Marks this connection as a second connection to a server already configured.
  void set_duplicate(std::string message);

 private:
  struct Pending {
    enum class Kind { Auth, Select, Info, Role, Request, Subscribe, Sentinel, Replicas, Wait };
    Kind kind = Kind::Request;
    int wait_for = 0;              // Request: replicas WAIT must confirm (its reply comes next)
    std::optional<Result> answer;  // Wait: the request's own answer, told once WAIT has answered
    std::string channel;           // Subscribe: the channel asked for
    ResultCallback done;           // empty once abandoned
    TimePoint sent;
    TimePoint deadline;
    Duration cpu_wait{};  // this process's wait for a CPU until then (ConnectionObserver::cpu_wait)
    Request request;
    bool eval_sent = false;
    bool behind = false;  // sent behind an earlier request still unanswered past its deadline
  };

  const ServerUrl& url() const { return config_.url; }
  // Where the connection goes: the member's URL, or the master its sentinels named.
  const ServerUrl& endpoint() const { return target_ ? *target_ : url(); }

  void reset_stream(std::unique_ptr<Stream> stream);
  void open(TimePoint now);
  void push_prelude(Pending::Kind kind, TimePoint now);
  void encode_argv(const std::vector<std::string>& argv) { encode_command(argv, out_); }
  void queue(Pending p, TimePoint now);
  int wait_count(const Request& request) const;
  void encode(const Request& request, bool full_script);
  bool dispatch(TimePoint now);
  bool ask_again(TimePoint now);
  bool on_reply(Pending p, Reply reply, TimePoint now);
  bool ran(const Script* script) const;
  void on_request_reply(Pending p, Reply reply, TimePoint now);
  void on_wait_reply(Pending p, const Reply& reply, TimePoint now);
  void prelude_refused(Pending::Kind kind, const std::string& reply, TimePoint now);
  void drive_write_only(TimePoint now);
  bool on_pubsub(const Reply& reply, TimePoint now);
  void ask_sentinel(TimePoint now);
  bool on_sentinel_reply(const Reply& reply, TimePoint now);
  void sentinel_failed(const std::string& why, TimePoint now);
  bool confirm_master(TimePoint now);
  void close_stream();
  void drop_master();
  void expire_unresolved(TimePoint now);
  void fail_unsent(Failure failure, const std::string& error, TimePoint now);
  void fail(Failure failure, std::string error, TimePoint now);

  ConnectionConfig config_;
  ConnectionObserver& observer_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<ReplyReader> reader_;
  bool connected_ = false;
  bool want_write_ = false;
  std::string out_;
  std::size_t out_pos_ = 0;
  // Requests encoded while a SELECT is unanswered, sent after its +OK.
  std::string held_;
  bool selecting_ = false;
  std::string in_;
  std::deque<Pending> pending_;
  std::string run_id_;
  std::string peer_;  // the endpoint of the last connection (or the one being connected to)
  bool duplicate_ = false;
  std::string duplicate_message_;
  std::string server_role_;          // what ROLE said; empty while unknown
  int replicas_ = 0;                 // the replicas ROLE listed
  std::vector<std::string> linked_;  // what ROLE names: a master's replicas, a replica's master
  int promotable_ = 0;               // the replicas the sentinels could promote (SENTINEL REPLICAS)
  // Sentinel members: the master the sentinels named, whether it said it is one, whether it may
  // be one no more (a READONLY, a WAIT short of replicas, a timeout), the requests waiting for it,
  // and the questions to the sentinels (which one is next, how many asked in this turn).
  std::optional<ServerUrl> target_;
  bool confirmed_ = false;
  bool stale_ = false;
  std::vector<const Script*> scripts_run_;  // scripts this connection's server answered (has cached)
  bool asking_ = false;
  std::deque<Pending> unsent_;
  std::size_t sentinel_next_ = 0;
  std::size_t sentinels_tried_ = 0;
  std::string sentinel_error_;
  // Subscriber role only.
  std::vector<std::string> channels_;
  ChannelCallback on_message_;
  bool subscribed_ = false;
  TimePoint next_open_ = kNever;
};

}  // namespace redlock
