// A connection to one server, for one member: the byte stream and the replies read from it
// (Connection), and what is sent on it: a member's commands, or a Cluster member's commands to one
// of its nodes (CommandConnection, here), or its wake-up subscription (Subscription, in
// subscription.hpp). A connection knows only its own member: what it needs is in its
// ConnectionConfig, and what it must tell or ask the owner of every member (a second name of a
// configured server, where a subscription goes, this process's wait for a CPU) goes through its
// ConnectionObserver.
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
  // Requests are being gathered (Network::Batch): a commands connection queues what it is sent and
  // writes it when the owner drives it at the batch's end.
  virtual bool holding_writes() const { return false; }
};

// How an error reply counts: a refused credential is Failure::Auth, anything else Failure::Reply.
Failure classify_error_reply(const std::string& text);

// The byte stream to one server and the replies parsed from it; what the event loop asks of every
// connection.
class Connection {
 public:
  virtual ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // The poll events this connection waits for, or 0 when it has nothing to do.
  short events() const;
  int fd() const { return stream_ ? stream_->fd() : -1; }
  // Moves bytes: finishes connecting, writes what is queued, reads and hands on replies.
  void drive(TimePoint now);
  // Gives up on what waited past its deadline; called on every turn of the loop.
  virtual void expire(TimePoint now) = 0;
  // The earliest deadline this connection waits for.
  virtual TimePoint next_deadline() const = 0;

 protected:
  // OBSERVER outlives the connection.
  Connection(ConnectionConfig config, ConnectionObserver& observer);

  const ServerUrl& url() const { return config_.url; }
  // Where the connection goes: the member's URL, or the master (or node) found for it.
  const ServerUrl& endpoint() const { return target_ ? *target_ : url(); }
  // A new stream to TO (through TLS when its scheme says so); nothing of the last one is kept.
  void open_stream(const ServerUrl& to);
  // Encodes AUTH with the endpoint's credentials, else the configured ones; false when there are none.
  bool encode_auth();
  void encode_argv(const std::vector<std::string>& argv) { encode_command(argv, out_); }
  // TEXT with every password this connection may send shown as "***": a server may echo AUTH's
  // arguments in its refusal ("unknown command 'AUTH', with args beginning with: 'PASSWORD'").
  std::string without_passwords(std::string text) const;
  void close_stream();
  // The TLS layer words its failures "TLS …"; anything else is the socket's.
  Failure stream_failure() const { return stream_->tls_failure() ? Failure::Tls : Failure::Io; }

  // While connecting, the stream knows its endpoint (peer()): false when that failed the connection.
  virtual bool note_endpoint(TimePoint) { return true; }
  // One reply, in the order the server sent it: false when it failed the connection.
  virtual bool take(Reply reply, TimePoint now) = 0;
  // Drops the connection (ERROR by value: it may live in stream_).
  virtual void fail(Failure failure, std::string error, TimePoint now) = 0;

  ConnectionConfig config_;
  ConnectionObserver& observer_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<ReplyReader> reader_;
  bool connected_ = false;
  bool want_write_ = false;
  std::string out_;
  std::size_t out_pos_ = 0;
  // A Sentinel member: the master the sentinels named; a Cluster member: its node, or the master of
  // its subscription's slot.
  std::optional<ServerUrl> target_;

 private:
  // Hands every complete reply on. Returns false when the connection failed.
  bool dispatch(TimePoint now);

  std::string in_;
};

// A member's commands, pipelined: replies come back in order and are matched to the front of the
// pending queue. A Sentinel member's asks its sentinels for the master first.
class CommandConnection final : public Connection {
 public:
  // OBSERVER outlives the connection.
  CommandConnection(ConnectionConfig config, ConnectionObserver& observer);

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
  // A Sentinel member's master, once it said it is one.
  std::optional<ServerUrl> master() const { return confirmed_ ? target_ : std::nullopt; }

  // A Cluster member's node at TARGET.
  void aim(ServerUrl target) { target_ = std::move(target); }

  void send(Request request, ResultCallback done, TimePoint now, TimePoint deadline);

  void expire(TimePoint now) override;
  TimePoint next_deadline() const override;

  // Nothing reaches a server before its connection is made (and, for TLS, its handshake done).
  bool flushed() const { return !stream_ || !connected_ || asking_ || (out_pos_ == out_.size() && held_.empty()); }
  // Something of ours is unanswered here or waits to be sent (Network::busy).
  bool busy() const { return !pending_.empty() || !unsent_.empty(); }

  // Marks this connection as a second connection to a server already configured.
  void set_duplicate(std::string message);

 private:
  bool owes_us() const;

  struct Pending {
    enum class Kind { Auth, Select, Info, Role, Request, Sentinel, Replicas, Wait };
    Kind kind = Kind::Request;
    int wait_for = 0;              // Request: replicas WAIT must confirm (its reply comes next)
    std::optional<Result> answer;  // Wait: the request's own answer, told once WAIT has answered
    ResultCallback done;           // empty once abandoned
    TimePoint sent;
    TimePoint deadline;
    Duration cpu_wait{};  // this process's wait for a CPU until then (ConnectionObserver::cpu_wait)
    Request request;
    bool eval_sent = false;
    bool behind = false;  // sent behind an earlier request still unanswered past its deadline
  };

  bool note_endpoint(TimePoint now) override;
  bool take(Reply reply, TimePoint now) override;
  void fail(Failure failure, std::string error, TimePoint now) override;

  // Whether a request waited for has reached its deadline by NOW.
  bool overdue(TimePoint now) const;
  // Requests sent and given up on whose replies are still to come.
  std::size_t abandoned() const;
  // A new stream to TO, and nothing this connection knew of the last one's server.
  void restart(const ServerUrl& to);
  void open(TimePoint now);
  void push_prelude(Pending::Kind kind, TimePoint now);
  void queue(Pending p, TimePoint now);
  int wait_count(const Request& request) const;
  void encode(const Request& request, bool full_script);
  bool ask_again(TimePoint now);
  bool on_reply(Pending p, Reply reply, TimePoint now);
  bool ran(const Script* script) const;
  void on_request_reply(Pending p, Reply reply, TimePoint now);
  void on_wait_reply(Pending p, const Reply& reply, TimePoint now);
  void prelude_refused(Pending::Kind kind, const std::string& reply, TimePoint now);
  void drive_write_only(TimePoint now);
  void ask_sentinel(TimePoint now);
  bool on_sentinel_reply(const Reply& reply, TimePoint now);
  void sentinel_failed(const std::string& why, TimePoint now);
  bool confirm_master(TimePoint now);
  void drop_master();
  void expire_unresolved(TimePoint now);
  void fail_unsent(Failure failure, const std::string& error, TimePoint now);

  // Requests encoded while a SELECT is unanswered, sent after its +OK.
  std::string held_;
  bool selecting_ = false;
  std::deque<Pending> pending_;
  std::string run_id_;
  std::string peer_;  // the endpoint of the last connection (or the one being connected to)
  bool duplicate_ = false;
  std::string duplicate_message_;
  std::string server_role_;          // what ROLE said; empty while unknown
  int replicas_ = 0;                 // the replicas ROLE listed
  std::vector<std::string> linked_;  // what ROLE names: a master's replicas, a replica's master
  int promotable_ = 0;               // the replicas the sentinels could promote (SENTINEL REPLICAS)
  // Sentinel members: whether the master the sentinels named (target_) said it is one, whether it
  // may be one no more (a READONLY, a WAIT short of replicas, a timeout), the requests waiting for
  // it, and the questions to the sentinels (which one is next, how many asked in this turn).
  bool confirmed_ = false;
  bool stale_ = false;
  std::vector<const Script*> scripts_run_;  // scripts this connection's server answered (has cached)
  bool asking_ = false;
  std::deque<Pending> unsent_;
  std::size_t sentinel_next_ = 0;
  std::size_t sentinels_tried_ = 0;
  std::string sentinel_error_;
};

}  // namespace redlock
