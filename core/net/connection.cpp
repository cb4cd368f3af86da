#include "core/net/connection.hpp"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <utility>

#include "core/net/sentinel.hpp"
#include "core/util/text.hpp"

namespace redlock {

namespace {

// Replies to requests that timed out are still read (and dropped) so that later replies stay in
// order. A connection with requests the server may still run is never replaced: a frozen server runs
// what it has received when it wakes up, and a second connection could be served first, letting the
// release of an earlier attempt delete the lock a later attempt took with the same token. Past this
// many unanswered requests, new ones fail at once until the server catches up.
constexpr std::size_t kMaxAbandoned = 32;

std::string parse_run_id(const std::string& info) {
  auto pos = info.find("run_id:");
  if (pos == std::string::npos) return {};
  pos += 7;
  auto end = info.find_first_of("\r\n", pos);
  return info.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
}

void finish(const ResultCallback& done, Failure failure, std::string error, Duration latency) {
  if (!done) return;
  Result r;
  r.failure = failure;
  r.error = std::move(error);
  r.latency = latency;
  done(std::move(r));
}

// The nodes ROLE names: a master's replicas, a replica's master ("host:port" each).
std::vector<std::string> linked_nodes(const Reply& role) {
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

}  // namespace

Failure classify_error_reply(const std::string& text) {
  // A server that wants a password answers a request of more than ten words from a client that
  // has given none with this instead of NOAUTH (the shared mode's scripts name more keys).
  if (text.starts_with("NOAUTH") || text.starts_with("WRONGPASS") || text.starts_with("NOPERM") ||
      text.starts_with("ERR Protocol error: unauthenticated")) {
    return Failure::Auth;
  }
  return Failure::Reply;
}

Connection::Connection(ConnectionConfig config, ConnectionObserver& observer)
    : config_(std::move(config)), observer_(observer) {}

Connection::~Connection() = default;

short Connection::events() const {
  if (!stream_ || stream_->fd() < 0) return 0;
  if (!connected_) return want_write_ ? POLLOUT : POLLIN;
  // Always readable interest: an idle connection that the server closed is noticed at once.
  short ev = POLLIN;
  if (out_pos_ < out_.size() || want_write_) ev |= POLLOUT;
  return ev;
}

void Connection::drive(TimePoint now) {
  if (!stream_) return;
  if (!connected_) {
    auto st = stream_->connect();
    // The endpoint is known before the connect finishes (and changes when the next address is
    // tried): a second name of a configured server is caught even when that server never answers.
    if (!note_endpoint(now)) return;
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

void Connection::open_stream(const ServerUrl& to) {
  stream_ = open_plain_stream(to);
  if (to.scheme == ServerUrl::Scheme::Tls) stream_ = config_.tls->wrap(std::move(stream_), to);
  reader_ = std::make_unique<ReplyReader>();
  connected_ = false;
  want_write_ = false;
  out_.clear();
  out_pos_ = 0;
}

bool Connection::encode_auth() {
  const auto& user = endpoint().user ? endpoint().user : config_.user;
  const auto& password = endpoint().password ? endpoint().password : config_.password;
  if (!password) return false;
  if (user) {
    encode_argv({"AUTH", *user, *password});
  } else {
    encode_argv({"AUTH", *password});
  }
  return true;
}

std::string Connection::without_passwords(std::string text) const {
  // Redis quotes a refused command's first arguments (AUTH's are the user and the password), cut
  // at 128 bytes: nothing of them is shown.
  constexpr std::string_view kQuoted = "with args beginning with:";
  if (const std::size_t at = text.find(kQuoted); at != std::string::npos)
    text.replace(at + kQuoted.size(), std::string::npos, " ***");
  // A password quoted some other way; one shorter than 4 bytes would mask every such word instead.
  for (const auto* secret : {&config_.password, &url().password, &url().sentinel_password, &endpoint().password}) {
    if (!*secret || (*secret)->size() < 4) continue;
    for (std::size_t at = text.find(**secret); at != std::string::npos; at = text.find(**secret, at + 3)) {
      text.replace(at, (*secret)->size(), "***");
    }
  }
  return text;
}

void Connection::close_stream() {
  stream_.reset();
  reader_.reset();
  out_.clear();
  out_pos_ = 0;
  connected_ = false;
}

bool Connection::dispatch(TimePoint now) {
  for (;;) {
    std::optional<Reply> reply;
    try {
      reply = reader_->next();
    } catch (const std::exception& e) {
      fail(Failure::Protocol, std::string("not a Redis server? ") + e.what(), now);
      return false;
    }
    if (!reply) return true;
    if (!take(std::move(*reply), now)) return false;
  }
}

CommandConnection::CommandConnection(ConnectionConfig config, ConnectionObserver& observer)
    : Connection(std::move(config), observer) {}

std::string CommandConnection::resolved() const {
  if (!url().is_sentinel()) return peer_;
  if (!confirmed_ || !target_) return {};
  std::string out = target_->host.find(':') != std::string::npos ? "[" + target_->host + "]" : target_->host;
  return out + ":" + std::to_string(target_->port);
}

void CommandConnection::send(Request request, ResultCallback done, TimePoint now, TimePoint deadline) {
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
  p.cpu_wait = observer_.cpu_wait();
  p.eval_sent = request.with_body;
  p.request = std::move(request);
  if (url().is_sentinel() && (!confirmed_ || (stale_ && !owes_us()))) {
    // Sent once the sentinels named the master and it said it is one (ROLE); when that master
    // may be one no more, once what it was sent is answered and the sentinels asked again.
    unsent_.push_back(std::move(p));
  } else {
    queue(std::move(p), now);
  }
  if (!observer_.holding_writes()) drive(now);
}

// Something this master was sent is still unanswered past its deadline (a vote behind a WAIT that
// outlasted it): what follows goes to this master in order behind it, above all the release that
// undoes that vote. Sent to the master the sentinels name next instead, it would wait for their
// answer (given up on, on a loaded host, before it comes) and might reach another server.
bool CommandConnection::owes_us() const {
  return confirmed_ && stream_ && std::any_of(pending_.begin(), pending_.end(), [](const Pending& p) {
           return !p.done && (p.kind == Pending::Kind::Request || p.kind == Pending::Kind::Wait);
         });
}

TimePoint CommandConnection::next_deadline() const {
  TimePoint t = kNever;
  for (const auto& p : pending_) {
    if (p.done || asking_) t = std::min(t, p.deadline);
  }
  for (const auto& p : unsent_) {
    if (p.done) t = std::min(t, p.deadline);
  }
  return t;
}

void CommandConnection::expire(TimePoint now) {
  // A deadline measures the server, not our scheduling: on a loaded host the reply may have
  // been waiting in the socket while we waited for a CPU. Before anything is given up on, what
  // is readable is read (without blocking: a frozen server still costs --timeout, no more), and
  // only a request still unanswered after a read that came after its deadline has timed out.
  // Likewise the time we were ready to run but had no CPU is not the server's: a request's
  // deadline moves on by that much before it counts as passed.
  if (overdue(now)) {
    drive(now);
    const Duration waited = observer_.cpu_wait();
    for (auto& p : pending_) {
      if (!p.done || now < p.deadline) continue;
      p.deadline += waited - p.cpu_wait;
      p.cpu_wait = waited;
    }
  }
  expire_unresolved(now);
  std::size_t abandoned = 0;
  for (auto& p : pending_) {
    if (p.done && now >= p.deadline) {
      auto done = std::move(p.done);
      p.done = nullptr;
      std::string why =
          p.behind     ? "no answer to an earlier request within " + ms_text(config_.timeout)
          : connected_ ? "no answer within " + ms_text(config_.timeout)
          : endpoint().scheme == ServerUrl::Scheme::Tls
              ? "connect or TLS handshake timed out after " + ms_text(config_.timeout) + " (is it a TLS port?)"
              : "connect timed out after " + ms_text(config_.timeout);
      finish(done, Failure::Timeout, why, now - p.sent);
      if (url().is_sentinel()) stale_ = true;
    }
    if (!p.done) ++abandoned;
  }
  // Before the connection is up nothing has reached the server, so starting over is safe.
  if (!connected_ && abandoned > kMaxAbandoned) fail(Failure::Timeout, "too many unanswered requests", now);
}

bool CommandConnection::overdue(TimePoint now) const {
  return std::any_of(pending_.begin(), pending_.end(), [now](const Pending& p) { return p.done && now >= p.deadline; });
}

std::size_t CommandConnection::abandoned() const {
  return static_cast<std::size_t>(std::count_if(
      pending_.begin(), pending_.end(), [](const Pending& p) { return !p.done && p.kind == Pending::Kind::Request; }));
}

bool CommandConnection::note_endpoint(TimePoint now) {
  if (asking_ || stream_->peer() == peer_) return true;
  peer_ = stream_->peer();
  if (config_.role == ConnectionRole::Commands && observer_.note_peer(config_.server)) {
    fail(Failure::Duplicate, duplicate_message_, now);
    return false;
  }
  return true;
}

void CommandConnection::set_duplicate(std::string message) {
  duplicate_ = true;
  duplicate_message_ = std::move(message);
}

void CommandConnection::restart(const ServerUrl& to) {
  open_stream(to);
  scripts_run_.clear();
  held_.clear();
  selecting_ = false;
}

void CommandConnection::open(TimePoint now) {
  if (url().is_sentinel() && config_.role == ConnectionRole::Commands && !target_) return ask_sentinel(now);
  if ((url().is_sentinel() || url().is_cluster()) && !target_) return;
  restart(endpoint());
  confirmed_ = false;
  if (encode_auth()) push_prelude(Pending::Kind::Auth, now);
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

void CommandConnection::push_prelude(Pending::Kind kind, TimePoint now) {
  Pending p;
  p.kind = kind;
  p.sent = now;
  p.deadline = now + config_.timeout;
  pending_.push_back(std::move(p));
}

// Encodes P's request (and the WAIT its vote needs) and waits for the answer.
void CommandConnection::queue(Pending p, TimePoint now) {
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
int CommandConnection::wait_count(const Request& request) const {
  if (!(url().is_sentinel() || url().is_cluster()) || !request.replicated) return 0;
  if (config_.member_wait) return *config_.member_wait;
  return std::max(replicas_, promotable_) > 0 ? 1 : 0;
}

void CommandConnection::encode(const Request& request, bool full_script) {
  std::string& to = selecting_ ? held_ : out_;
  if (!request.script) {
    encode_command(request.argv, to);
    return;
  }
  const std::string_view script = full_script ? request.script->body : request.script->sha1;
  encode_command({full_script ? "EVAL" : "EVALSHA", script}, request.argv, to);
}

// A reply, to the request first in line. Returns false when the connection failed (or was replaced).
bool CommandConnection::take(Reply reply, TimePoint now) {
  if (pending_.empty()) {
    fail(Failure::Protocol, "not a Redis server? a reply nobody asked for", now);
    return false;
  }
  Pending p = std::move(pending_.front());
  pending_.pop_front();
  if (!on_reply(std::move(p), std::move(reply), now)) return false;
  return !ask_again(now);
}

// A Sentinel member whose master may be one no more, once all it was sent is answered (so that
// nothing of ours can run there after what goes to the next): the sentinels are asked again for
// the requests that wait. True when the connection was replaced.
bool CommandConnection::ask_again(TimePoint now) {
  if (!url().is_sentinel() || config_.role != ConnectionRole::Commands || !stale_ || asking_ || !pending_.empty())
    return false;
  drop_master();
  if (!unsent_.empty()) {
    open(now);
    drive(now);
  }
  return true;
}

// One reply to the request P that was first in line. Returns false when the connection failed.
bool CommandConnection::on_reply(Pending p, Reply reply, TimePoint now) {
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
        if (!run_id_.empty() && config_.role == ConnectionRole::Commands) observer_.note_run_id(config_.server);
      }
      break;
    case Pending::Kind::Role:  // refused (an ACL): unknown, as before it was asked
      if (reply.type == Reply::Type::Array && !reply.elements.empty()) {
        server_role_ = reply.elements[0].str == "slave" ? "replica" : reply.elements[0].str;
        if (reply.elements.size() > 2) replicas_ = static_cast<int>(reply.elements[2].elements.size());
        linked_ = linked_nodes(reply);
      }
      if (url().is_sentinel() && config_.role == ConnectionRole::Commands && !confirm_master(now)) return false;
      if (config_.role == ConnectionRole::Commands) observer_.note_role(config_.server);
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

bool CommandConnection::ran(const Script* script) const {
  return !script || std::find(scripts_run_.begin(), scripts_run_.end(), script) != scripts_run_.end();
}

void CommandConnection::on_request_reply(Pending p, Reply reply, TimePoint now) {
  const bool noscript = reply.is_error() && reply.str.starts_with("NOSCRIPT");
  if (!noscript && !ran(p.request.script)) scripts_run_.push_back(p.request.script);
  if (noscript && p.request.script && !p.eval_sent && p.done && !p.request.interest.abandoned()) {
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
void CommandConnection::on_wait_reply(Pending p, const Reply& reply, TimePoint now) {
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
void CommandConnection::prelude_refused(Pending::Kind kind, const std::string& reply, TimePoint now) {
  const std::string what = kind == Pending::Kind::Auth ? "AUTH" : "SELECT";
  if (kind == Pending::Kind::Auth || classify_error_reply(reply) == Failure::Auth) {
    fail(Failure::Auth, what + " refused: " + reply, now);
  } else {
    fail(Failure::Config,
         url().redacted() + ": the server has no database " + std::to_string(url().db) + " (SELECT: " + reply + ")",
         now);
  }
}

void CommandConnection::drive_write_only(TimePoint now) {
  if (!connected_ || out_pos_ == out_.size()) return;
  std::size_t written = 0;
  auto st = stream_->write(std::string_view(out_).substr(out_pos_), written);
  out_pos_ += written;
  if (st == Stream::Status::Failed) fail(stream_failure(), stream_->error(), now);
}

// A Sentinel member: asks its sentinels in turn, from the last that answered, for the master.
void CommandConnection::ask_sentinel(TimePoint now) {
  const ServerUrl sentinel = url().sentinel(sentinel_next_ % url().sentinels.size());
  restart(sentinel);
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

// The sentinel's answer: the master's address, then a connection to it (false: this one is over).
bool CommandConnection::on_sentinel_reply(const Reply& reply, TimePoint now) {
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
void CommandConnection::sentinel_failed(const std::string& why, TimePoint now) {
  const std::size_t n = url().sentinels.size();
  // What each sentinel asked this time said: the first may be the one that tells why.
  sentinel_error_ =
      (sentinels_tried_ == 0 ? "" : sentinel_error_ + "; ") + url().sentinel_address(sentinel_next_ % n) + ": " + why;
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
bool CommandConnection::confirm_master(TimePoint now) {
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

// Forgets the master the sentinels named; the next request asks them again.
void CommandConnection::drop_master() {
  close_stream();
  pending_.clear();
  target_.reset();
  confirmed_ = false;
  stale_ = false;
}

// The requests no master was found for in time fail; a sentinel that has not answered by the
// deadline of its question costs the next one's turn.
void CommandConnection::expire_unresolved(TimePoint now) {
  if (asking_ && std::any_of(pending_.begin(), pending_.end(), [now](const Pending& p) { return now >= p.deadline; })) {
    sentinel_failed("no answer within " + ms_text(config_.timeout), now);
  }
  bool expired = false;
  // A request that waits only for the answers to what went before it on this master, before the
  // sentinels are asked again, is given up on but still sent, in order, as on any connection: a
  // release must follow the acquire it undoes (a few, as many as may go unanswered).
  const bool behind_ours = stale_ && confirmed_ && !pending_.empty();
  std::size_t kept = 0;
  for (auto it = unsent_.begin(); it != unsent_.end();) {
    if (now < it->deadline || !it->done) {
      if (!it->done) ++kept;
      ++it;
      continue;
    }
    auto done = std::move(it->done);
    const Duration waited = now - it->sent;
    if (behind_ours && kept < kMaxAbandoned) {
      it->done = nullptr;
      ++kept;
      ++it;
      finish(done, Failure::Timeout, "no answer to an earlier request within " + ms_text(config_.timeout), waited);
      continue;
    }
    it = unsent_.erase(it);
    expired = true;
    finish(done, Failure::Timeout,
           "the master " + url().master_name + " not found within " + ms_text(config_.timeout) +
               (sentinel_error_.empty() ? "" : " (" + sentinel_error_ + ")"),
           waited);
  }
  // Nothing of ours has reached a master that has not confirmed its role: it may be dropped.
  if (expired && unsent_.empty() && !asking_ && !confirmed_ && stream_) drop_master();
}

void CommandConnection::fail_unsent(Failure failure, const std::string& error, TimePoint now) {
  auto waiting = std::move(unsent_);
  unsent_.clear();
  for (auto& p : waiting) finish(p.done, failure, error, now - p.sent);
}

// Drops the connection: every request still waited for fails with FAILURE; the next send opens
// a new connection. A Sentinel member asks its sentinels again.
void CommandConnection::fail(Failure failure, std::string error, TimePoint now) {  // by value: it may live in stream_
  error = without_passwords(std::move(error));
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
  // A vote that waits for its WAIT holds its callback in the WAIT's entry: told too.
  for (auto& p : pending) {
    if (p.kind == Pending::Kind::Request || p.kind == Pending::Kind::Wait) {
      finish(p.done, failure, error, now - p.sent);
    }
  }
}

}  // namespace redlock
