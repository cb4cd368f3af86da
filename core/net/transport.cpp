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
#include "core/net/sentinel.hpp"
#include "core/util/error.hpp"
#include "core/util/text.hpp"

namespace redlock {

namespace {

// Replies to requests that timed out are still read (and dropped) so that later replies stay in
// order. A connection with requests the server may still run is never replaced: a frozen server runs
// what it has received when it wakes up, and a second connection could be served first, letting the
// release of an earlier attempt delete the lock a later attempt took with the same token. Past this
// many unanswered requests, new ones fail at once until the server catches up.
constexpr std::size_t kMaxAbandoned = 32;
// A subscription that broke is re-established no sooner than this.
constexpr Duration kResubscribeDelay = std::chrono::seconds(1);
// Subscriptions are not on anyone's critical path: a busy server gets at least this long to confirm
// one, so that it does not flap (and its waiter fall back to polling) under load.
constexpr Duration kMinSubscribeDeadline = std::chrono::seconds(1);

Failure classify_error_reply(const std::string& text) {
  // A server that wants a password answers a request of more than ten words from a client that
  // has given none with this instead of NOAUTH (the shared mode's scripts name more keys).
  if (text.starts_with("NOAUTH") || text.starts_with("WRONGPASS") || text.starts_with("NOPERM") ||
      text.starts_with("ERR Protocol error: unauthenticated")) {
    return Failure::Auth;
  }
  return Failure::Reply;
}

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

// One connection to one server. Requests are pipelined; replies come back in order and are
// matched to the front of the pending queue.
class Transport::Connection {
 public:
  // Node: the commands of a Cluster member to one of its nodes.
  enum class Role { Commands, Subscriber, Node };

  Connection(Transport& owner, std::size_t index, Role role) : owner_(owner), index_(index), role_(role) {}

  const std::string& run_id() const { return run_id_; }
  const std::string& server_role() const { return server_role_; }
  const std::string& peer() const { return peer_; }
  const std::vector<std::string>& linked() const { return linked_; }
  bool duplicate() const { return duplicate_; }
  std::string duplicate_message() const { return duplicate_ ? duplicate_message_ : std::string(); }
  // Connecting, with the name not yet resolved to an address.
  bool resolving() const { return stream_ && !asking_ && !connected_ && stream_->peer().empty(); }
  // A Sentinel member's master once it said it is one; else the endpoint connected to.
  std::string resolved() const {
    if (!url().is_sentinel()) return peer_;
    if (!confirmed_ || !target_) return {};
    std::string out = target_->host.find(':') != std::string::npos ? "[" + target_->host + "]" : target_->host;
    return out + ":" + std::to_string(target_->port);
  }
  bool subscribed() const { return subscribed_; }
  // A Sentinel member's master, once it said it is one.
  std::optional<ServerUrl> master() const { return confirmed_ ? target_ : std::nullopt; }

  // A Cluster member's node at TARGET.
  void aim(ServerUrl target) { target_ = std::move(target); }

  void send(Request request, ResultCallback done, TimePoint now, TimePoint deadline) {
    if (duplicate_) {
      finish(done, Failure::Duplicate, duplicate_message_, Duration{});
      return;
    }
    if (connected_ && abandoned() >= kMaxAbandoned) {
      finish(done, Failure::Timeout,
             "no answer to the last " + std::to_string(abandoned()) + " requests; none sent until it answers",
             Duration{});
      return;
    }
    if (stale_ && stream_ && !asking_ && pending_.empty()) {
      // The master the sentinels named may be one no more: ask them again. Nothing of ours is
      // unanswered on this connection, so no later request can overtake an earlier one.
      drop_master();
    }
    if (!stream_) open(now);
    Pending p;
    p.kind = Pending::Kind::Request;
    p.done = std::move(done);
    p.sent = now;
    // A server answers in order: behind an earlier request it has not answered by that one's
    // deadline, this one cannot be answered by its own either. It is sent all the same (a server
    // that wakes must run it in order: a release after its acquire) but given up on at the next
    // turn of the loop, unless its answer is readable by then: a frozen server costs a command one
    // --timeout, not one per round (status, then the stored limit; a probe, then the attempt).
    p.behind = abandoned() > 0;
    p.deadline = p.behind ? now : deadline;
    p.cpu_wait = owner_.cpu_wait();
    p.eval_sent = request.with_body;
    p.request = std::move(request);
    if (url().is_sentinel() && (!confirmed_ || stale_)) {
      // Sent once the sentinels named the master and it said it is one (ROLE); when that master
      // may be one no more, once what it was sent is answered and the sentinels asked again.
      unsent_.push_back(std::move(p));
    } else {
      queue(std::move(p), now);
    }
    drive(now);
  }

  void subscribe(std::vector<std::string> channels, ChannelCallback on_message) {
    channels_ = std::move(channels);
    on_message_ = std::move(on_message);
    next_open_ = TimePoint{};
  }

  // Opens a subscriber connection that is due; called on every turn of the loop.
  void maintain(TimePoint now) {
    if (role_ != Role::Subscriber || stream_ || channels_.empty() || now < next_open_) return;
    open(now);
    if (!stream_) {  // a Sentinel member whose master is not known yet
      next_open_ = now + kResubscribeDelay;
      return;
    }
    // One SUBSCRIBE each: a refusal refuses the whole command, and only the first channel must be allowed.
    for (const auto& channel : channels_) {
      Pending p;
      p.kind = Pending::Kind::Subscribe;
      p.channel = channel;
      p.sent = now;
      p.deadline = now + std::max(owner_.options_.timeout, kMinSubscribeDeadline);
      encode_argv({"SUBSCRIBE", channel});
      pending_.push_back(std::move(p));
    }
    drive(now);
  }

  // The poll events this connection waits for, or 0 when it has nothing to do.
  short events() const {
    if (!stream_ || stream_->fd() < 0) return 0;
    if (!connected_) return want_write_ ? POLLOUT : POLLIN;
    // Always readable interest: an idle connection that the server closed is noticed at once.
    short ev = POLLIN;
    if (out_pos_ < out_.size() || want_write_) ev |= POLLOUT;
    return ev;
  }
  int fd() const { return stream_ ? stream_->fd() : -1; }

  // The earliest deadline of a request still waited for.
  TimePoint next_deadline() const {
    TimePoint t = kNever;
    for (const auto& p : pending_) {
      if (p.done || p.kind == Pending::Kind::Subscribe || asking_) t = std::min(t, p.deadline);
    }
    for (const auto& p : unsent_) t = std::min(t, p.deadline);
    if (role_ == Role::Subscriber && !stream_ && !channels_.empty()) t = std::min(t, next_open_);
    return t;
  }

  // Nothing reaches a server before its connection is made (and, for TLS, its handshake done).
  bool flushed() const { return !stream_ || !connected_ || asking_ || (out_pos_ == out_.size() && held_.empty()); }

  void expire(TimePoint now) {
    // A deadline measures the server, not our scheduling: on a loaded host the reply may have
    // been waiting in the socket while we waited for a CPU. Before anything is given up on, what
    // is readable is read (without blocking: a frozen server still costs --timeout, no more), and
    // only a request still unanswered after a read that came after its deadline has timed out.
    // Likewise the time we were ready to run but had no CPU is not the server's: a request's
    // deadline moves on by that much before it counts as passed.
    if (overdue(now)) {
      drive(now);
      const Duration waited = owner_.cpu_wait();
      for (auto& p : pending_) {
        if (!p.done || now < p.deadline) continue;
        p.deadline += waited - p.cpu_wait;
        p.cpu_wait = waited;
      }
    }
    expire_unresolved(now);
    std::size_t abandoned = 0;
    for (auto& p : pending_) {
      if (p.kind == Pending::Kind::Subscribe && now >= p.deadline) {
        fail(Failure::Timeout, "no subscription confirmed within " + ms_text(p.deadline - p.sent), now);
        return;
      }
      if (p.done && now >= p.deadline) {
        auto done = std::move(p.done);
        p.done = nullptr;
        std::string why = p.behind    ? "no answer to an earlier request within " + ms_text(owner_.options_.timeout)
                          : connected_ ? "no answer within " + ms_text(owner_.options_.timeout)
                          : endpoint().scheme == ServerUrl::Scheme::Tls
                              ? "connect or TLS handshake timed out after " + ms_text(owner_.options_.timeout) +
                                    " (is it a TLS port?)"
                              : "connect timed out after " + ms_text(owner_.options_.timeout);
        finish(done, Failure::Timeout, why, now - p.sent);
        if (url().is_sentinel()) stale_ = true;
      }
      if (!p.done) ++abandoned;
    }
    // Before the connection is up nothing has reached the server, so starting over is safe.
    if (!connected_ && abandoned > kMaxAbandoned) fail(Failure::Timeout, "too many unanswered requests", now);
  }

  // Whether a request (or a subscription) waited for has reached its deadline by NOW.
  bool overdue(TimePoint now) const {
    return std::any_of(pending_.begin(), pending_.end(), [now](const Pending& p) {
      return (p.done || p.kind == Pending::Kind::Subscribe) && now >= p.deadline;
    });
  }

  // Requests sent and given up on whose replies are still to come.
  std::size_t abandoned() const {
    return static_cast<std::size_t>(std::count_if(pending_.begin(), pending_.end(), [](const Pending& p) {
      return !p.done && p.kind == Pending::Kind::Request;
    }));
  }

  // Moves bytes: finishes connecting, writes what is queued, reads and dispatches replies.
  void drive(TimePoint now) {
    if (!stream_) return;
    if (!connected_) {
      auto st = stream_->connect();
      // The endpoint is known before the connect finishes (and changes when the next address is
      // tried): a second name of a configured server is caught even when that server never answers.
      if (role_ != Role::Subscriber && !asking_ && stream_->peer() != peer_) {
        peer_ = stream_->peer();
        if (role_ == Role::Commands && owner_.note_peer(index_)) return fail(Failure::Duplicate, duplicate_message_, now);
      }
      want_write_ = st == Stream::Status::WantWrite;
      if (st == Stream::Status::WantRead || st == Stream::Status::WantWrite) return;
      if (st != Stream::Status::Ok) {
        // The TLS layer words its failures "TLS …"; anything else failed before the handshake.
        auto failure = stream_->tls_failure() ? Failure::Tls : Failure::Connect;
        fail(failure, stream_->error(), now);
        return;
      }
      connected_ = true;
      want_write_ = false;
    }
    if (out_pos_ < out_.size()) {
      std::size_t written = 0;
      auto st = stream_->write(std::string_view(out_).substr(out_pos_), written);
      out_pos_ += written;
      if (out_pos_ == out_.size()) {
        out_.clear();
        out_pos_ = 0;
      }
      if (st == Stream::Status::Closed) return fail(Failure::Closed, "connection closed by the server", now);
      if (st == Stream::Status::Failed) return fail(stream_failure(), stream_->error(), now);
    }
    in_.clear();
    auto st = stream_->read(in_);
    if (!in_.empty()) {
      reader_->feed(in_.data(), in_.size());
      // Latency is counted to when the reply was read: a warm connection can answer within the
      // same call that sent the request.
      if (!dispatch(Clock::now())) return;
    }
    want_write_ = st == Stream::Status::WantWrite;
    if (st == Stream::Status::Closed) return fail(Failure::Closed, "connection closed by the server", now);
    if (st == Stream::Status::Failed) return fail(stream_failure(), stream_->error(), now);
  }

  // The TLS layer words its failures "TLS …"; anything else is the socket's.
  Failure stream_failure() const { return stream_->tls_failure() ? Failure::Tls : Failure::Io; }

  // Marks this connection as a second connection to a server already configured.
  void set_duplicate(std::string message) {
    duplicate_ = true;
    duplicate_message_ = std::move(message);
  }

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
    Duration cpu_wait{};  // this process's wait for a CPU until then (read_cpu_wait)
    Request request;
    bool eval_sent = false;
    bool behind = false;  // sent behind an earlier request still unanswered past its deadline
  };

  const ServerUrl& url() const { return owner_.servers_[index_]; }
  // Where the connection goes: the member's URL, or the master its sentinels named.
  const ServerUrl& endpoint() const { return target_ ? *target_ : url(); }

  void reset_stream(std::unique_ptr<Stream> stream) {
    stream_ = std::move(stream);
    scripts_run_.clear();
    reader_ = std::make_unique<ReplyReader>();
    connected_ = false;
    want_write_ = false;
    out_.clear();
    out_pos_ = 0;
    held_.clear();
    selecting_ = false;
  }

  void open(TimePoint now) {
    if (url().is_sentinel() && role_ == Role::Commands && !target_) return ask_sentinel(now);
    // A subscriber goes where the commands go, once their master is confirmed.
    if (url().is_sentinel() && role_ == Role::Subscriber) target_ = owner_.commands_[index_]->master();
    // A Cluster member's subscriber goes to the master of its channel's slot (the lock's).
    if (url().is_cluster() && role_ == Role::Subscriber) target_ = owner_.cluster_node_for(index_, channels_.front());
    if ((url().is_sentinel() || url().is_cluster()) && !target_) return;
    auto stream = open_plain_stream(endpoint());
    if (endpoint().scheme == ServerUrl::Scheme::Tls) stream = owner_.tls_->wrap(std::move(stream), endpoint());
    reset_stream(std::move(stream));
    confirmed_ = false;

    const auto& user = endpoint().user ? endpoint().user : owner_.options_.user;
    const auto& password = endpoint().password ? endpoint().password : owner_.options_.password;
    if (password) {
      if (user) {
        encode_argv({"AUTH", *user, *password});
      } else {
        encode_argv({"AUTH", *password});
      }
      push_prelude(Pending::Kind::Auth, now);
    }
    if (role_ == Role::Subscriber) return;
    if (endpoint().db != 0) {
      encode_argv({"SELECT", std::to_string(endpoint().db)});
      push_prelude(Pending::Kind::Select, now);
      // After a SELECT that fails, the server runs what follows in database 0: a release --force
      // would delete a lock there. Requests wait for its +OK (a round trip, once per connection).
      selecting_ = true;
    }
    // The run_id tells two URLs of one server apart from two servers; asked once per connection,
    // in the same round trip as the first request.
    encode_argv({"INFO", "server"});
    push_prelude(Pending::Kind::Info, now);
    // A replica never counts as a vote: its role comes in the same round trip too.
    encode_argv({"ROLE"});
    push_prelude(Pending::Kind::Role, now);
  }

  void push_prelude(Pending::Kind kind, TimePoint now) {
    Pending p;
    p.kind = kind;
    p.sent = now;
    p.deadline = now + owner_.options_.timeout;
    pending_.push_back(std::move(p));
  }

  void encode_argv(const std::vector<std::string>& argv) { encode_command(argv, out_); }

  // Encodes P's request (and the WAIT its vote needs) and waits for the answer.
  void queue(Pending p, TimePoint now) {
    p.wait_for = wait_count(p.request);
    // A NOSCRIPT would be answered only after the WAIT behind it had taken its time: a vote that
    // needs WAIT sends the script itself until this connection has run it once.
    if (p.wait_for > 0 && !ran(p.request.script)) p.eval_sent = true;
    encode(p.request, p.eval_sent);
    const int n = p.wait_for;
    const TimePoint deadline = p.deadline;
    const TimePoint sent = p.sent;
    pending_.push_back(std::move(p));
    if (n == 0) return;
    // Within the request's own deadline, with a quarter of it to spare for the answer: the server
    // tells us how many replicas confirmed before we give up on it.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    encode_command({"WAIT", std::to_string(n), std::to_string(std::max<long long>(1, left * 3 / 4))},
                   selecting_ ? held_ : out_);
    Pending w;
    w.kind = Pending::Kind::Wait;
    w.wait_for = n;
    w.sent = sent;
    w.deadline = deadline;
    pending_.push_back(std::move(w));
  }

  // The replicas that must confirm REQUEST before it counts: --member-wait, else 1 when ROLE lists
  // replicas or the sentinels know one they could promote; none for a standalone server or a
  // request that is no vote.
  int wait_count(const Request& request) const {
    if (!(url().is_sentinel() || url().is_cluster()) || !request.replicated) return 0;
    if (owner_.options_.member_wait) return *owner_.options_.member_wait;
    return std::max(replicas_, promotable_) > 0 ? 1 : 0;
  }

  void encode(const Request& request, bool full_script) {
    std::string& to = selecting_ ? held_ : out_;
    if (!request.script) {
      encode_command(request.argv, to);
      return;
    }
    std::vector<std::string> argv;
    argv.reserve(request.argv.size() + 2);
    argv.emplace_back(full_script ? "EVAL" : "EVALSHA");
    argv.emplace_back(full_script ? request.script->body : request.script->sha1);
    argv.insert(argv.end(), request.argv.begin(), request.argv.end());
    encode_command(argv, to);
  }

  // Hands every complete reply to its request. Returns false when the connection failed.
  bool dispatch(TimePoint now) {
    for (;;) {
      std::optional<Reply> reply;
      try {
        reply = reader_->next();
      } catch (const std::exception& e) {
        fail(Failure::Protocol, std::string("not a Redis server? ") + e.what(), now);
        return false;
      }
      if (!reply) return true;
      if (role_ == Role::Subscriber) {
        if (!on_pubsub(*reply, now)) return false;
        continue;
      }
      if (pending_.empty()) {
        fail(Failure::Protocol, "not a Redis server? a reply nobody asked for", now);
        return false;
      }
      Pending p = std::move(pending_.front());
      pending_.pop_front();
      if (!on_reply(std::move(p), std::move(*reply), now)) return false;
      if (ask_again(now)) return false;
    }
  }

  // A Sentinel member whose master may be one no more, once all it was sent is answered (so that
  // nothing of ours can run there after what goes to the next): the sentinels are asked again for
  // the requests that wait. True when the connection was replaced.
  bool ask_again(TimePoint now) {
    if (!url().is_sentinel() || role_ != Role::Commands || !stale_ || asking_ || !pending_.empty()) return false;
    drop_master();
    if (!unsent_.empty()) {
      open(now);
      drive(now);
    }
    return true;
  }

  // One reply to the request P that was first in line. Returns false when the connection failed.
  bool on_reply(Pending p, Reply reply, TimePoint now) {
    switch (p.kind) {
      case Pending::Kind::Auth:
      case Pending::Kind::Select:
        if (reply.is_error()) {
          prelude_refused(p.kind, reply.str, now);
          return false;
        }
        if (p.kind == Pending::Kind::Select) {
          selecting_ = false;
          out_ += held_;
          held_.clear();
          drive_write_only(now);
        }
        break;
      case Pending::Kind::Info:
        if (!reply.is_error()) {
          run_id_ = parse_run_id(reply.str);
          if (!run_id_.empty() && role_ == Role::Commands) owner_.note_run_id(index_);
        }
        break;
      case Pending::Kind::Role:  // refused (an ACL): unknown, as before it was asked
        if (reply.type == Reply::Type::Array && !reply.elements.empty()) {
          server_role_ = reply.elements[0].str == "slave" ? "replica" : reply.elements[0].str;
          if (reply.elements.size() > 2) replicas_ = static_cast<int>(reply.elements[2].elements.size());
          linked_ = linked_nodes(reply);
        }
        if (url().is_sentinel() && role_ == Role::Commands && !confirm_master(now)) return false;
        if (role_ == Role::Commands) owner_.note_group();
        break;
      case Pending::Kind::Subscribe:
        break;
      case Pending::Kind::Sentinel:
        return on_sentinel_reply(reply, now);
      case Pending::Kind::Replicas:
        promotable_ = promotable_replicas(reply);
        break;
      case Pending::Kind::Wait:
        on_wait_reply(std::move(p), reply, now);
        break;
      case Pending::Kind::Request:
        on_request_reply(std::move(p), std::move(reply), now);
        break;
    }
    return stream_ != nullptr;  // a callback may have failed us
  }

  bool ran(const Script* script) const {
    return !script || std::find(scripts_run_.begin(), scripts_run_.end(), script) != scripts_run_.end();
  }

  void on_request_reply(Pending p, Reply reply, TimePoint now) {
    const bool noscript = reply.is_error() && reply.str.starts_with("NOSCRIPT");
    if (!noscript && !ran(p.request.script)) scripts_run_.push_back(p.request.script);
    if (noscript && p.request.script && !p.eval_sent && p.done &&
        !p.request.interest.abandoned()) {
      // The server lost its script cache (restart, SCRIPT FLUSH): send the script itself.
      p.eval_sent = true;
      queue(std::move(p), now);  // a WAIT queued after the EVALSHA is answered to nobody
      drive_write_only(now);
      return;
    }
    // A master turned replica refuses writes: the sentinels know where the master went.
    if (url().is_sentinel() && reply.is_error() && reply.str.find("READONLY") != std::string::npos) stale_ = true;
    if (!p.done) return;
    Result r;
    if (duplicate_) {
      r.failure = Failure::Duplicate;
      r.error = duplicate_message_;
    } else if (reply.is_error()) {
      r.failure = classify_error_reply(reply.str);
      r.error = reply.str;
    } else {
      r.reply = std::move(reply);
    }
    r.latency = now - p.sent;
    if (p.wait_for > 0 && !pending_.empty() && pending_.front().kind == Pending::Kind::Wait) {
      // Told once WAIT has answered, which comes next on this connection.
      pending_.front().answer = std::move(r);
      pending_.front().done = std::move(p.done);
      return;
    }
    p.done(std::move(r));
  }

  // WAIT's answer to the vote before it: the vote counts when enough replicas have it.
  void on_wait_reply(Pending p, const Reply& reply, TimePoint now) {
    if (!p.done || !p.answer) return;
    if (!p.answer->ok()) return p.done(std::move(*p.answer));
    const auto confirmed = reply.as_integer();
    if (reply.is_error()) {
      finish(p.done, classify_error_reply(reply.str),
             "WAIT refused (" + reply.str + "): the vote cannot be confirmed; --member-wait 0 counts it unconfirmed",
             now - p.sent);
    } else if (!confirmed || *confirmed < p.wait_for) {
      if (url().is_sentinel()) stale_ = true;  // perhaps its replica was promoted: ask the sentinels again
      finish(p.done, Failure::Reply,
             std::string(kWaitShort) + std::to_string(confirmed.value_or(0)) + " of " + std::to_string(p.wait_for) +
                 " replicas confirmed the write in time; its vote does not count",
             now - p.sent);
    } else {
      p.answer->latency = now - p.sent;
      p.done(std::move(*p.answer));
    }
  }

  // AUTH refused, or SELECT: by the ACL (NOPERM) an authentication failure, else a database this
  // server cannot give (out of range, cluster mode), which no retry mends: a configuration error.
  void prelude_refused(Pending::Kind kind, const std::string& reply, TimePoint now) {
    const std::string what = kind == Pending::Kind::Auth ? "AUTH" : "SELECT";
    if (kind == Pending::Kind::Auth || classify_error_reply(reply) == Failure::Auth) {
      fail(Failure::Auth, what + " refused: " + reply, now);
    } else {
      fail(Failure::Config,
           url().redacted() + ": the server has no database " + std::to_string(url().db) + " (SELECT: " + reply + ")",
           now);
    }
  }

  void drive_write_only(TimePoint now) {
    if (!connected_ || out_pos_ == out_.size()) return;
    std::size_t written = 0;
    auto st = stream_->write(std::string_view(out_).substr(out_pos_), written);
    out_pos_ += written;
    if (st == Stream::Status::Failed) fail(stream_failure(), stream_->error(), now);
  }

  bool on_pubsub(const Reply& reply, TimePoint now) {
    if (reply.is_error()) {
      const bool later_channel = !pending_.empty() && pending_.front().kind == Pending::Kind::Subscribe &&
                                 pending_.front().channel != channels_.front();
      if (!later_channel) {
        fail(classify_error_reply(reply.str), "SUBSCRIBE refused: " + reply.str, now);
        return false;
      }
      const std::string channel = pending_.front().channel;
      pending_.pop_front();
      if (on_message_) on_message_(index_, channel, "refused: " + reply.str);
      return true;
    }
    if (!pending_.empty() && pending_.front().kind == Pending::Kind::Auth) {
      pending_.pop_front();  // AUTH's +OK
      return true;
    }
    if (reply.type != Reply::Type::Array || reply.elements.size() < 3) return true;
    const std::string& kind = reply.elements[0].str;
    if (kind == "subscribe") {
      if (!pending_.empty()) pending_.pop_front();
      if (reply.elements[1].str != channels_.front()) return true;
      subscribed_ = true;
      if (on_message_) on_message_(index_, channels_.front(), "subscribed");
    } else if (kind == "message" && on_message_) {
      on_message_(index_, reply.elements[1].str, reply.elements[2].str);
    }
    return true;
  }

  static std::string parse_run_id(const std::string& info) {
    auto pos = info.find("run_id:");
    if (pos == std::string::npos) return {};
    pos += 7;
    auto end = info.find_first_of("\r\n", pos);
    return info.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
  }

  static void finish(const ResultCallback& done, Failure failure, std::string error, Duration latency) {
    if (!done) return;
    Result r;
    r.failure = failure;
    r.error = std::move(error);
    r.latency = latency;
    done(std::move(r));
  }

  // A Sentinel member: asks its sentinels in turn, from the last that answered, for the master.
  void ask_sentinel(TimePoint now) {
    const ServerUrl sentinel = url().sentinel(sentinel_next_ % url().sentinels.size());
    auto stream = open_plain_stream(sentinel);
    if (sentinel.scheme == ServerUrl::Scheme::Tls) stream = owner_.tls_->wrap(std::move(stream), sentinel);
    reset_stream(std::move(stream));
    asking_ = true;
    confirmed_ = false;
    if (sentinel.password) {
      encode_argv({"AUTH", *sentinel.password});
      push_prelude(Pending::Kind::Auth, now);
    }
    // The replicas first, in the same round trip: the master's answer opens the next connection.
    encode_argv({"SENTINEL", "REPLICAS", url().master_name});
    push_prelude(Pending::Kind::Replicas, now);
    encode_argv({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", url().master_name});
    push_prelude(Pending::Kind::Sentinel, now);
  }

  // The nodes ROLE names: a master's replicas, a replica's master ("host:port" each).
  static std::vector<std::string> linked_nodes(const Reply& role) {
    std::vector<std::string> out;
    const auto& e = role.elements;
    if (e[0].str == "master" && e.size() > 2) {
      for (const auto& r : e[2].elements) {
        if (r.elements.size() >= 2) out.push_back(r.elements[0].str + ":" + r.elements[1].str);
      }
    } else if (e[0].str == "slave" && e.size() > 2) {
      out.push_back(e[1].str + ":" + std::to_string(e[2].integer));
    }
    return out;
  }

  // The sentinel's answer: the master's address, then a connection to it (false: this one is over).
  bool on_sentinel_reply(const Reply& reply, TimePoint now) {
    if (reply.type != Reply::Type::Array || reply.elements.size() != 2 || !reply.elements[1].as_integer()) {
      sentinel_failed(reply.is_error() ? reply.str : "it knows no master named " + url().master_name, now);
      return false;
    }
    const auto port = *reply.elements[1].as_integer();
    target_ = url().master_at(reply.elements[0].str, static_cast<int>(port));
    asking_ = false;
    sentinels_tried_ = 0;
    pending_.clear();
    stream_.reset();
    open(now);
    drive(now);
    return false;
  }

  // The sentinel asked did not answer: the next one is asked, until each has been once.
  void sentinel_failed(const std::string& why, TimePoint now) {
    const std::size_t n = url().sentinels.size();
    sentinel_error_ = url().sentinel_address(sentinel_next_ % n) + ": " + why;
    asking_ = false;
    pending_.clear();
    close_stream();
    sentinel_next_ = (sentinel_next_ + 1) % n;
    if (++sentinels_tried_ >= n) {
      sentinels_tried_ = 0;
      return fail_unsent(Failure::Connect,
                         "no sentinel named the master " + url().master_name + " (" + sentinel_error_ + ")", now);
    }
    if (unsent_.empty()) return;
    ask_sentinel(now);
    drive(now);
  }

  // ROLE of the master a sentinel named: the requests waiting for it go out, or, when it is no
  // master (a failover under way), they fail and the sentinels are asked again next time.
  bool confirm_master(TimePoint now) {
    if (!server_role_.empty() && server_role_ != "master") {
      fail(Failure::Replica,
           endpoint().redacted() + ", named by the sentinels as the master " + url().master_name + ", is a " +
               server_role_,
           now);
      return false;
    }
    confirmed_ = true;
    stale_ = false;
    auto waiting = std::move(unsent_);
    unsent_.clear();
    for (auto& p : waiting) queue(std::move(p), now);
    drive_write_only(now);
    return stream_ != nullptr;
  }

  void close_stream() {
    stream_.reset();
    reader_.reset();
    out_.clear();
    out_pos_ = 0;
    connected_ = false;
  }

  // Forgets the master the sentinels named; the next request asks them again.
  void drop_master() {
    close_stream();
    pending_.clear();
    target_.reset();
    confirmed_ = false;
    stale_ = false;
  }

  // The requests no master was found for in time fail; a sentinel that has not answered by the
  // deadline of its question costs the next one's turn.
  void expire_unresolved(TimePoint now) {
    if (asking_ &&
        std::any_of(pending_.begin(), pending_.end(), [now](const Pending& p) { return now >= p.deadline; })) {
      sentinel_failed("no answer within " + ms_text(owner_.options_.timeout), now);
    }
    bool expired = false;
    for (auto it = unsent_.begin(); it != unsent_.end();) {
      if (now < it->deadline) {
        ++it;
        continue;
      }
      auto done = std::move(it->done);
      const Duration waited = now - it->sent;
      it = unsent_.erase(it);
      expired = true;
      finish(done, Failure::Timeout,
             "the master " + url().master_name + " not found within " + ms_text(owner_.options_.timeout) +
                 (sentinel_error_.empty() ? "" : " (" + sentinel_error_ + ")"),
             waited);
    }
    // Nothing of ours has reached a master that has not confirmed its role: it may be dropped.
    if (expired && unsent_.empty() && !asking_ && !confirmed_ && stream_) drop_master();
  }

  void fail_unsent(Failure failure, const std::string& error, TimePoint now) {
    auto waiting = std::move(unsent_);
    unsent_.clear();
    for (auto& p : waiting) finish(p.done, failure, error, now - p.sent);
  }

  // Drops the connection: every request still waited for fails with FAILURE; the next send opens
  // a new connection (a subscription is re-established a little later). A Sentinel member asks
  // its sentinels again.
  void fail(Failure failure, std::string error, TimePoint now) {  // by value: it may live in stream_
    if (asking_) return sentinel_failed(error, now);
    if (url().is_sentinel()) {
      target_.reset();
      confirmed_ = false;
      stale_ = false;
      fail_unsent(failure, error, now);
    }
    auto pending = std::move(pending_);
    pending_.clear();
    close_stream();
    if (role_ == Role::Subscriber) {
      if (subscribed_ && on_message_) on_message_(index_, channels_.front(), "unsubscribed");
      subscribed_ = false;
      next_open_ = now + kResubscribeDelay;
    }
    // A vote that waits for its WAIT holds its callback in the WAIT's entry: told too.
    for (auto& p : pending) {
      if (p.kind == Pending::Kind::Request || p.kind == Pending::Kind::Wait) {
        finish(p.done, failure, error, now - p.sent);
      }
    }
  }

  Transport& owner_;
  std::size_t index_;
  Role role_;
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
      c = std::make_unique<Connection>(owner_, index_, Connection::Role::Node);
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
    commands_.push_back(std::make_unique<Connection>(*this, i, Connection::Role::Commands));
    clusters_.push_back(servers_[i].is_cluster() ? std::make_unique<ClusterMember>(*this, i) : nullptr);
  }
}

Transport::~Transport() = default;

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

std::vector<Transport::Connection*> Transport::cluster_connections() const {
  std::vector<Connection*> out;
  for (const auto& m : clusters_) {
    if (m) m->connections(out);
  }
  return out;
}

std::optional<ServerUrl> Transport::cluster_node_for(std::size_t server, const std::string& channel) {
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
      subscribers_.push_back(std::make_unique<Connection>(*this, i, Connection::Role::Subscriber));
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

void Transport::note_group() {
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
