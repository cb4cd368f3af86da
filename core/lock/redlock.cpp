#include "core/lock/redlock.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <memory>

#include "core/lock/fair.hpp"
#include "core/lock/faults.hpp"
#include "core/lock/grant.hpp"
#include "core/lock/scripts.hpp"
#include "core/lock/token.hpp"
#include "core/lock/wait_plan.hpp"
#include "core/lock/wakeups.hpp"
#include "core/util/defer.hpp"
#include "core/util/duration.hpp"
#include "core/util/error.hpp"
#include "core/util/text.hpp"

namespace redlock {

ServerReport failure_report(const Network& network, std::size_t server, const std::optional<Result>& r) {
  ServerReport rep;
  rep.server = network.describe(server);
  rep.role = network.role(server);
  rep.resolved = network.resolved(server);
  if (!r) return rep;  // not waited for: still out when the outcome was known
  rep.latency = r->latency;
  rep.result = Answer::Failed;
  rep.failure = r->failure;
  rep.error = r->error;
  return rep;
}

ServerReport answer_report(const Network& network, std::size_t server, const Result& r, Answer result, bool ok) {
  ServerReport rep;
  rep.server = network.describe(server);
  rep.role = network.role(server);
  rep.resolved = network.resolved(server);
  rep.latency = r.latency;
  rep.result = result;
  rep.ok = ok;
  return rep;
}

ServerReport unexpected_report(const Network& network, std::size_t server, const Result& r) {
  ServerReport rep = answer_report(network, server, r, Answer::Failed, false);
  rep.failure = Failure::Protocol;
  rep.error = "unexpected reply to a redlock script";
  return rep;
}

namespace {

// One server's answer to the acquire script.
struct Vote {
  enum class Kind { Yes, No, Failed } kind = Kind::Failed;
  std::int64_t counter = 0;
  std::int64_t pttl = -2;
  bool announces = false;             // busy: the holder keeps an owner record (a redlock holder)
  std::optional<std::string> record;  // busy: the holder's owner record
  bool joined = false;                // busy: the caller joined the queue of waiters
  bool behind_readers = false;        // busy where readers hold: the writer is to queue there
  bool behind_queue = false;          // busy only because another waiter is the fair queue's head
  std::int64_t ticket = 0;            // busy and queued: the caller's ticket there
  std::int64_t place = -1;            // busy and queued: how many are queued ahead there
  std::string head;                   // behind_queue: the head's id
  bool kept_place = false;            // taken: the waiter is still queued there
  bool skipped_head = false;          // taken by a barging waiter ahead of another head there
  bool fair_mode = false;             // busy: the queue there is in fair mode
  ServerReport report;
};

// What a forced release leaves alone: "a hash", "a string without an expiry"; empty for what can
// be a lock (a string with an expiry, whoever's it is) and for nothing at all.
std::string not_a_lock(const std::string& type, std::int64_t pttl) {
  if (type == "none" || lock_like(type, pttl)) return {};
  return type == "string" ? "a string without an expiry" : "a " + type;
}

Vote read_vote(const Network& network, std::size_t server, const std::optional<Result>& r) {
  Vote v;
  if (!r || !r->ok()) {
    v.report = failure_report(network, server, r);
    return v;
  }
  const Reply& reply = r->reply;
  if (reply.type != Reply::Type::Array || reply.elements.size() < 4) {
    v.report = unexpected_report(network, server, *r);
    return v;
  }
  auto state = reply.elements[0].as_integer();
  auto counter = reply.elements[1].as_integer();
  auto pttl = reply.elements[2].as_integer();
  if (!state || !counter || !pttl) {
    v.report = unexpected_report(network, server, *r);
    return v;
  }
  v.counter = *counter;
  v.pttl = *pttl;
  v.announces = reply.elements.size() > 4 && reply.elements[4].as_integer().value_or(0) == 1;
  if (reply.elements.size() > 5 && reply.elements[5].type == Reply::Type::String) v.record = reply.elements[5].str;
  v.joined = reply.elements.size() > 6 && reply.elements[6].as_integer().value_or(0) == 1;
  v.behind_readers = reply.elements.size() > 7 && reply.elements[7].as_integer().value_or(0) == 1;
  v.behind_queue = reply.elements.size() > 8 && reply.elements[8].as_integer().value_or(0) == 1;
  if (reply.elements.size() > 10) {
    v.ticket = reply.elements[9].as_integer().value_or(0);
    v.place = reply.elements[10].as_integer().value_or(-1);
  }
  if (reply.elements.size() > 11 && reply.elements[11].type == Reply::Type::String) v.head = reply.elements[11].str;
  v.fair_mode = reply.elements.size() > 12 && reply.elements[12].as_integer().value_or(0) == 1;
  if (*state == 1 || *state == 2) {
    v.kind = Vote::Kind::Yes;
    v.kept_place = reply.elements.size() > 5 && reply.elements[5].as_integer().value_or(0) == 1;
    v.skipped_head = reply.elements.size() > 6 && reply.elements[6].as_integer().value_or(0) == 1;
    v.report = answer_report(network, server, *r, *state == 1 ? Answer::Locked : Answer::Reacquired, true);
  } else {
    v.kind = Vote::Kind::No;
    const std::string& type = reply.elements[3].str;
    bool foreign = !lock_like(type, v.pttl) && !v.behind_queue;
    v.report = answer_report(network, server, *r, foreign ? Answer::Foreign : Answer::Busy, false);
    if (foreign) v.report.error = "held as " + not_a_lock(type, v.pttl) + " by another kind of client";
  }
  return v;
}

// Counts one round of yes/no answers given the reading of each result.
template <typename Classify>
Tally count(const std::vector<std::optional<Result>>& results, Classify classify) {
  Tally t;
  t.total = results.size();
  for (const auto& r : results) {
    if (!r) continue;
    switch (classify(*r)) {
      case Vote::Kind::Yes:
        ++t.yes;
        break;
      case Vote::Kind::No:
        ++t.no;
        break;
      case Vote::Kind::Failed:
        ++t.failed;
        break;
    }
  }
  return t;
}

// The servers (the first, by index) whose release names the queue's second waiter too, and where
// the one that takes the lock tells that waiter so: it needs to hear only once that a release
// named it, and waking it on every server costs each a message and it a wake-up per server.
constexpr std::size_t kServersNamingSecond = 2;

bool names_second(std::size_t server) {
  return server < kServersNamingSecond;
}

// The waiters a release named after the one it handed the lock to (NAMED, that one first) go back
// to sleep: it took the lock (as the acquire script tells them when it takes it). Told where the
// release named them; not waited for.
void announce_taken(Network& network, const LockKeys& keys, const std::vector<std::string>& named) {
  const Network::Batch batch(network);
  for (std::size_t k = 1; k < named.size(); ++k) {
    for (std::size_t i = 0; i < std::min(network.size(), kServersNamingSecond); ++i)
      network.send(i, Request::command({"PUBLISH", keys.channel + ":" + named[k], "acquired"}), [](Result) {});
  }
}

// RES is the lock, fenced with FENCE, taken at TAKEN_AT and valid until VALID_UNTIL (seen at NOW).
void mark_acquired(AcquireResult& res, std::int64_t fence, TimePoint taken_at, TimePoint valid_until, TimePoint now) {
  res.outcome = AcquireOutcome::Acquired;
  res.fence = fence;
  res.taken_at = taken_at;
  res.valid_until = valid_until;
  res.validity = valid_until - now;
}

// Runs the event loop until the answers of ROUND, read by CLASSIFY, decide the quorum (or DEADLINE).
template <typename Classify>
Tally run_until_decided(Network& network, const Round& round, Classify classify, TimePoint deadline) {
  Tally tally;
  network.run_until(
      [&] {
        tally = count(round.results(), classify);
        return tally.decided();
      },
      deadline);
  return tally;
}

// The integer answer of a script that returns 0 or 1 (extend, release).
Vote::Kind classify_flag(const Result& r) {
  if (!r.ok()) return Vote::Kind::Failed;
  auto v = r.reply.as_integer();
  if (!v) return Vote::Kind::Failed;
  return *v > 0 ? Vote::Kind::Yes : Vote::Kind::No;
}

std::string too_little_validity(Duration left, Duration needed) {
  return "a quorum answered with " + format_duration(left) + " of the lock's validity left, not more than the " +
         format_duration(needed) + " needed";
}

// "; 2 not waited for", or nothing when every answer was in.
std::string and_not_waited(const Tally& tally) {
  const std::string text = not_waited_text(tally);
  return text.empty() ? "" : "; " + text;
}

std::string owner_record(const std::string& owner, Duration ttl) {
  if (owner.empty()) return {};
  auto unix_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  return make_owner_record(unix_ms, std::chrono::duration_cast<std::chrono::milliseconds>(ttl).count(), owner);
}

// A name from a server, on one line: control characters would let it forge lines of output.
std::string one_line(std::string text) {
  for (auto& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return text;
}

// The owner record most busy answers carried (none counts as one), and when the lock could be free.
Holder busy_holder(const std::vector<std::optional<std::string>>& records, std::optional<Duration> free_in) {
  std::map<std::optional<std::string>, std::size_t> seen;
  for (const auto& r : records) ++seen[r];
  auto most =
      std::max_element(seen.begin(), seen.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  Holder holder;
  if (most != seen.end() && most->first) holder.owner = parse_owner_record(*most->first).owner;
  holder.ttl = free_in;
  return holder;
}

// "held by alice@host:123 for another 27.1s (busy on 3 of 5 servers; 2 not waited for)".
std::string busy_message(const Holder& holder, const Tally& tally) {
  std::string text = holder.owner ? "held by " + one_line(*holder.owner) : "held elsewhere";
  // In tenths of a second: the holder's milliseconds are out of date by the time anyone reads them.
  using Tenths = std::chrono::duration<std::int64_t, std::deci>;
  if (holder.ttl) text += " for another " + format_duration(std::chrono::ceil<Tenths>(*holder.ttl));
  return text + " (busy on " + servers_text(tally.no, tally.total) + and_not_waited(tally) + ")";
}

std::uint64_t random_seed() {
  std::uint64_t seed = 0;
  random_bytes(&seed, sizeof seed);
  return seed;
}

// "3 of 5 servers failed (first: redis://h:1: connect: Connection refused)".
std::string failed_text(const Network& network, const Tally& tally, const std::vector<std::optional<Result>>& results) {
  std::string first;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (results[i] && !results[i]->ok()) {
      first = network.describe(i) + ": " + results[i]->error;
      break;
    }
  }
  return servers_text(tally.failed, tally.total) + " failed" + (first.empty() ? "" : " (first: " + first + ")");
}

// "3 of 5 servers failed (first: redis://h:1: connect: Connection refused); 3 must answer".
std::string no_quorum_message(const Network& network, const Tally& tally,
                              const std::vector<std::optional<Result>>& results) {
  return failed_text(network, tally, results) + "; " + std::to_string(tally.needed()) + " must answer" +
         and_not_waited(tally);
}

// "deleted on 2 of 5 servers; 2 of 5 servers failed (first: …)": the servers that failed are
// named, since they, not the token, may be why there was no quorum.
std::string not_held_counts(const Network& network, const Tally& tally,
                            const std::vector<std::optional<Result>>& results, const std::string& done,
                            std::size_t done_on) {
  std::string text = done + " on " + servers_text(done_on, tally.total);
  if (tally.failed > 0) text += "; " + failed_text(network, tally, results);
  return text + and_not_waited(tally);
}

std::string not_held_message(const std::string& counts) {
  return "not held with this token (" + counts + ")";
}

// Whether a request that failed this way may still have run (or may yet run) on the server.
bool unsure_whether_run(Failure f) {
  switch (f) {
    case Failure::Connect:  // never sent
    case Failure::Tls:
    case Failure::Duplicate:  // ran on a server that answers for itself on its other connection
    case Failure::Config:     // held back until the SELECT that failed
      return false;
    default:
      // Timeouts and broken connections may still run it; an error reply (NOPERM, say) may come
      // from a script that failed after its SET, which Redis does not roll back.
      return true;
  }
}

// The set-if-greater of FENCE, with the script's body: its answer is not always waited for, and a
// NOSCRIPT that nobody reads (a server restarted empty, the likeliest to lag behind) would leave
// that server's counter behind for the next holder. The script is a few hundred bytes. A VOTE of
// the max-register (a fence stored on a quorum) counts on a Sentinel or Cluster member once WAIT
// confirms a replica has it, since a failover to a replica without it would hand the next holder a
// lower fence; a catch-up nobody counts on waits for no replica.
Request fence_request(const LockSpec& spec, const std::string& fence, bool vote) {
  Request r = Request::eval(kFenceScript, {spec.keys.fence}, {fence, ms_count(spec.fence_ttl)});
  r.with_body = true;
  r.replicated = vote;
  return r;
}

// The lock as a reader's scripts see it: in redlock-faulty with shared-ignores-writer (a negative
// control), a key no writer uses, so that readers and writers never meet.
std::string reader_lock(const LockKeys& k) {
  return faults::enabled(faults::Fault::SharedIgnoresWriter) ? k.lock + ":ignored" : k.lock;
}

// The acquire script of KEYS' role: a reader joins the readers; anyone else is a writer, which
// takes the lock as the mutex does (and is told where readers hold it).
Request acquire_request(const LockSpec& spec, const std::string& owner) {
  const LockKeys& k = spec.keys;
  if (k.reader) {
    Request r = Request::eval(kJoinScript, {reader_lock(k), k.fence, k.readers, k.writers, k.reader_owners, k.owner},
                              {spec.token, ms_count(spec.ttl), owner, k.channel, spec.writer_priority ? "1" : "0"});
    r.replicated = true;
    return r;
  }
  // Both expiries in one argument, and a waiter's id and heartbeat: see acquire.lua.
  std::string ttls = ms_count(spec.ttl) + " " + ms_count(spec.fence_ttl);
  if (!spec.waiter.empty()) ttls += " " + spec.waiter + " " + ms_count(spec.heartbeat);
  const bool barge = spec.barge || faults::enabled(faults::Fault::FairIgnoresQueue);
  const std::string flags = std::string(spec.fair ? "f" : "") + (barge ? "b" : "") +
                            (spec.report_place || spec.max_queue > 0 ? "p" : "") + (spec.take_grants ? "g" : "");
  if (!spec.waiter.empty() && !flags.empty()) ttls += " " + flags;
  Request r = Request::eval(kAcquireScript, {k.lock, k.fence, k.owner}, {spec.token, ttls, owner, k.channel});
  r.replicated = true;
  return r;
}

// The release script of KEYS' role for SERVER; WORD is what the waiters are told (released,
// retracted).
Request release_request(const LockKeys& k, const std::string& token, bool force, const char* word, std::size_t server) {
  if (k.reader) {
    return Request::eval(kLeaveScript, {reader_lock(k), k.readers, k.reader_owners},
                         {token, k.channel, force ? "1" : "0", word});
  }
  return Request::eval(kReleaseScript, {k.lock, k.owner},
                       {token, k.channel, force ? "1" : "0", word, names_second(server) ? "1" : "0"});
}

// The highest fencing counter among COUNTERS, as a reader reads the fence.
std::int64_t highest(const std::vector<std::int64_t>& counters) {
  return counters.empty() ? 0 : *std::max_element(counters.begin(), counters.end());
}

// Whether an attempt short of a quorum may have one by waiting: servers down, frozen, restarting
// or loading come back, so does a cluster that is down, and so do the replicas a Sentinel member's
// WAIT fell short of; a wrong password, a failed TLS set-up, something that is not Redis, a script
// or WAIT refused do not, and when they alone leave no quorum, waiting cannot help.
bool may_recover(const AcquireResult& res) {
  auto hopeless = std::count_if(res.servers.begin(), res.servers.end(), [](const ServerReport& s) {
    if (s.failed(Failure::Reply)) return !server_state_error(s.error) && !s.error.starts_with(kWaitShort);
    // A replica never votes.
    return s.failed(Failure::Auth) || s.failed(Failure::Tls) || s.failed(Failure::Protocol) ||
           s.failed(Failure::Replica);
  });
  return res.servers.size() - static_cast<std::size_t>(hopeless) >= quorum_size(res.servers.size());
}

// The release script's answer where a forced release found something that is not a lock.
bool left_alone(const Result& r) {
  return r.ok() && r.reply.as_integer() == -1;
}

// A forced release succeeds wherever the server answered, unless it found something that is not a
// lock there; otherwise where the token was deleted.
std::function<Vote::Kind(const Result&)> release_vote(bool force) {
  return [force](const Result& r) {
    if (force && left_alone(r)) return Vote::Kind::No;
    Vote::Kind k = classify_flag(r);
    return force && k == Vote::Kind::No ? Vote::Kind::Yes : k;
  };
}

ReleaseResult release_result(const Network& network, const Round& round, bool force) {
  ReleaseResult res;
  res.tally = count(round.results(), release_vote(force));
  res.elapsed = network.now() - round.started();
  std::string found;  // servers where a key that is not a lock appeared after the check
  for (std::size_t i = 0; i < round.results().size(); ++i) {
    const auto& r = round.results()[i];
    auto kind = r ? classify_flag(*r) : Vote::Kind::Failed;
    if (kind == Vote::Kind::Failed) {
      res.servers.push_back(r && r->ok() ? unexpected_report(network, i, *r) : failure_report(network, i, r));
    } else if (force && left_alone(*r)) {
      res.servers.push_back(answer_report(network, i, *r, Answer::Foreign, false));
      res.servers.back().error = "not a lock, left alone";
      found += (found.empty() ? "" : ", ") + res.servers.back().server;
    } else {
      bool deleted = kind == Vote::Kind::Yes;
      res.deleted += deleted ? 1 : 0;
      res.servers.push_back(
          answer_report(network, i, *r, deleted ? Answer::Released : Answer::NotHeld, deleted || force));
    }
  }
  res.not_a_lock = !found.empty();
  res.released = res.tally.won() && !res.not_a_lock;
  res.no_quorum = !res.released && !res.not_a_lock && res.tally.unreachable();
  if (res.not_a_lock) {
    res.message = "not a lock on " + found + " (written after the check), left alone; the lock was deleted on " +
                  servers_text(res.deleted, res.tally.total);
  } else if (res.no_quorum) {
    res.message = no_quorum_message(network, res.tally, round.results());
  } else if (!res.released) {
    res.message = not_held_message(not_held_counts(network, res.tally, round.results(), "deleted", res.deleted));
  }
  return res;
}

// Only the shape of an acquire answer matters for counting; read_vote tells the details.
Vote::Kind classify_acquire(const Result& r) {
  if (!r.ok() || r.reply.type != Reply::Type::Array || r.reply.elements.empty()) return Vote::Kind::Failed;
  auto state = r.reply.elements[0].as_integer();
  if (!state) return Vote::Kind::Failed;
  return *state > 0 ? Vote::Kind::Yes : Vote::Kind::No;
}

// The round trips of the answers that say how fast the servers answer now: busy ones included.
std::vector<std::optional<Duration>> answer_latencies(const std::vector<ServerReport>& servers) {
  std::vector<std::optional<Duration>> out;
  for (const auto& s : servers) {
    if (s.ok || s.result == Answer::Busy || s.result == Answer::Foreign) out.push_back(s.latency);
  }
  return out;
}

// A wait that ended (interrupted, or at its deadline) with RES as its last attempt.
AcquireResult end_of_wait(AcquireResult res, bool interrupted, bool short_of_quorum) {
  if (interrupted) {
    res.outcome = AcquireOutcome::Interrupted;
  } else if (short_of_quorum) {
    res.message += "; still no quorum when the wait ended after " + format_duration(res.elapsed);
  } else {
    res.outcome = AcquireOutcome::TimedOut;
  }
  return res;
}

}  // namespace

// A value the acquire script left on a quorum: every server raised its counter in the same step as
// taking the lock, so when NEEDED of them answered the same number, that number is stored on a
// quorum, and it is above every earlier fence (any two quorums share a server). Unless an answer
// is higher still: the server they share may be one that lost its data, and the higher counter
// the only trace left of the last fence (a server that missed fences while unreachable agreeing
// with one restarted empty). Then the highest is written back instead.
OwnerRecord parse_owner_record(const std::string& text) {
  OwnerRecord record;
  const auto space = text.find(' ');
  const char* end = text.data() + std::min(space, text.size());
  std::int64_t since = 0;
  auto conv = std::from_chars(text.data(), end, since);
  if (space == std::string::npos || conv.ec != std::errc()) {
    record.owner = text;
    return record;
  }
  record.since_unix_ms = since;
  record.owner = text.substr(space + 1);
  std::int64_t ttl = 0;
  if (conv.ptr != end && *conv.ptr == '/' && std::from_chars(conv.ptr + 1, end, ttl).ec == std::errc()) {
    record.ttl_ms = ttl;
  }
  return record;
}

std::string make_owner_record(std::int64_t unix_ms, std::int64_t ttl_ms, const std::string& owner) {
  // The TTL goes after a slash, not a space, so that earlier versions still read the time and the owner.
  return std::to_string(unix_ms) + "/" + std::to_string(ttl_ms) + " " + owner;
}

std::optional<std::int64_t> agreed_fence(const std::vector<std::int64_t>& counters, std::size_t needed) {
  if (counters.empty()) return std::nullopt;
  const std::int64_t highest = *std::max_element(counters.begin(), counters.end());
  auto agreeing = static_cast<std::size_t>(std::count(counters.begin(), counters.end(), highest));
  if (agreeing >= needed) return highest;
  return std::nullopt;
}

void Redlock::settle(const Round& round) {
  // Two names of one endpoint are caught as soon as both are resolved, before either connects: a
  // name still being resolved is waited for (lookups fail at --timeout like any connect; one from
  // /etc/hosts takes microseconds), so a configuration that lists a server twice is refused every
  // time, however busy the machine. A second address of a server that already answered reaches
  // the same process, which answers both connections within an event-loop turn or two: a short
  // fixed grace lets its INFO show the duplicate, while a frozen server costs only that grace, not
  // a multiple of the round trip. Safety hangs on neither wait (a second answer from one process
  // is marked Duplicate when it arrives and never counts, and a server not heard from has no vote
  // to count twice); they make the refusal reliable, and `status`, `release` and `doctor` wait
  // for every answer.
  if (round.complete()) return;
  network_.run_until([&] { return round.complete() || !network_.resolving(); }, round.started() + timeout_);
  if (round.complete()) return;
  network_.run_until([&] { return round.complete(); }, network_.now() + std::min(kDuplicateGrace, timeout_));
}

void Redlock::spread_fence(const LockSpec& spec, std::int64_t fence,
                           const std::vector<std::optional<Result>>& answers) {
  // The fence is stored on the quorum that agreed; the other servers (restarted empty, or not heard
  // from yet) get it too, without waiting, so that it survives the next minority that loses its data.
  std::vector<bool> to(answers.size(), true);
  for (std::size_t i = 0; i < answers.size(); ++i) {
    const auto& r = answers[i];
    if (r && r->ok() && r->reply.type == Reply::Type::Array && r->reply.elements.size() >= 4 &&
        r->reply.elements[1].as_integer() == fence) {
      to[i] = false;
    }
  }
  const std::string fence_text = std::to_string(fence);
  Round(network_, to, [&](std::size_t) { return fence_request(spec, fence_text, false); }).abandon();
}

std::optional<std::int64_t> Redlock::write_fence(const LockSpec& spec, std::int64_t fence, TimePoint valid_until,
                                                 std::string& duplicate) {
  // The counters disagree (a server lost its data, or split attempts raised some): the highest is
  // above every earlier fence; store it on a quorum with a set-if-greater (a majority max-register).
  const std::string fence_text = std::to_string(fence);
  Round fencing(network_, [&](std::size_t) { return fence_request(spec, fence_text, true); });
  auto confirms = [fence](const Result& r) {
    if (!r.ok()) return Vote::Kind::Failed;
    auto v = r.reply.as_integer();
    return v && *v == fence ? Vote::Kind::Yes : Vote::Kind::No;
  };
  const Tally fenced = run_until_decided(network_, fencing, confirms, valid_until);
  fencing.abandon();
  for (const auto& r : fencing.results()) {
    if (r && r->failure == Failure::Duplicate) duplicate = r->error;
  }
  if (fenced.won()) return fence;
  return std::nullopt;
}

std::string_view ServerReport::result_name() const {
  switch (result) {
    case Answer::NotWaitedFor:
      return "not_waited_for";
    case Answer::Locked:
      return "locked";
    case Answer::Reacquired:
      return "reacquired";
    case Answer::Busy:
      return "busy";
    case Answer::Foreign:
      return "foreign";
    case Answer::Extended:
      return "extended";
    case Answer::Healed:
      return "healed";
    case Answer::Released:
      return "released";
    case Answer::NotHeld:
      return "not_held";
    case Answer::Held:
      return "held";
    case Answer::Free:
      return "free";
    case Answer::Listed:
      return "listed";
    case Answer::Probed:
      return "ok";
    case Answer::Failed:
      break;
  }
  return failure == Failure::Reply ? "error" : failure_name(failure);
}

std::string_view outcome_name(AcquireOutcome o) {
  switch (o) {
    case AcquireOutcome::Acquired:
      return "acquired";
    case AcquireOutcome::Busy:
      return "busy";
    case AcquireOutcome::TimedOut:
      return "timeout";
    case AcquireOutcome::NoQuorum:
      return "no_quorum";
    case AcquireOutcome::Interrupted:
      return "interrupted";
  }
  return "unknown";
}

std::string_view state_name(LockState s) {
  switch (s) {
    case LockState::Held:
      return "held";
    case LockState::Free:
      return "free";
    case LockState::Partial:
      return "partial";
    case LockState::Unknown:
      return "unknown";
  }
  return "unknown";
}

Redlock::Redlock(Network& network, Duration timeout) : network_(network), timeout_(timeout), seed_(random_seed()) {}

void check_duplicates(const std::vector<std::optional<Result>>& results) {
  for (const auto& r : results) {
    if (r && (r->failure == Failure::Duplicate || r->failure == Failure::Config)) config_error(r->error);
  }
}

struct Redlock::Votes {
  // Per server: took the lock; may hold it (took it, or its answer is still out or unreadable:
  // the request may yet run there). Those that said busy or refused cannot hold our token.
  std::vector<bool> holds, may_hold;
  // Took it, or answered with an error after a write that may have stood (WAIT short of replicas):
  // a live connection, so the undo is waited for there.
  std::vector<bool> answered;
  std::vector<std::int64_t> counters;  // the fencing counters of those that took it
  std::vector<std::int64_t> busy_pttl;
  std::vector<std::optional<std::string>> busy_records;
  std::size_t free_now = 0;          // took it, or found no key at all
  std::vector<bool> behind_readers;  // busy where readers hold: the writer queues there
  std::vector<std::int64_t> places;  // busy answers: how many were queued ahead there
  bool duplicate = false;            // a server turned out to be another configured one
  Duration took{};                   // from the round's start to its decision
};

AcquireResult Redlock::attempt(const LockSpec& spec) {
  const bool first_use = spec.new_token && spec.token != last_token_;
  last_token_ = spec.token;
  const std::string owner = owner_record(spec.owner, spec.ttl);
  Round round(network_, [&](std::size_t) { return acquire_request(spec, owner); });
  const Tally tally = run_until_decided(network_, round, classify_acquire, kNever);
  if (tally.won()) settle(round);
  // A waiter that lost is going to sleep: it waits for the answers still out (up to --timeout)
  // rather than send each of those servers a release in case the attempt took the lock there.
  if (!tally.won() && !spec.waiter.empty())
    network_.run_until([&] { return round.complete(); }, round.started() + timeout_);
  round.abandon();

  AcquireResult res;
  res.token = spec.token;
  res.ttl = spec.ttl;
  // Reported as every answer in by now (settle may have heard more than the deciding quorum).
  res.tally = count(round.results(), classify_acquire);
  const Duration took = network_.now() - round.started();
  Votes votes = read_votes(round, res);
  votes.took = took;
  // A member found to be part of another after its answer came (a node of a Sentinel group
  // resolved later) refuses the configuration as a duplicate answer does.
  for (std::size_t i = 0; i < network_.size(); ++i)
    votes.duplicate = votes.duplicate || !network_.duplicate_of(i).empty();
  std::string held_twice;
  for (const auto& s : res.servers) {
    if (first_use && s.result == Answer::Reacquired) held_twice += (held_twice.empty() ? "" : ", ") + s.server;
  }
  votes.duplicate = votes.duplicate || !held_twice.empty();
  res.writer_queued = queue_writer(spec, votes.behind_readers);
  if (tally.won() && validity(spec.ttl, took, spec.drift) > spec.min_validity && !votes.duplicate) {
    res.owner_record = owner;
    return finish_won(spec, round, tally, votes, std::move(res));
  }
  release_taken(spec, votes.answered, votes.may_hold);
  if (votes.duplicate) {
    check_duplicates(round.results());
    for (std::size_t i = 0; i < network_.size(); ++i) {
      if (!network_.duplicate_of(i).empty()) config_error(network_.duplicate_of(i));
    }
    if (!held_twice.empty()) {
      config_error(held_twice +
                   " already held a token made for this attempt: it is a server configured twice "
                   "(under two names; INFO, which would tell, is refused)");
    }
  }
  finish_lost(spec, round, tally, votes, res);
  return res;
}

Redlock::Votes Redlock::read_votes(const Round& round, AcquireResult& res) const {
  const std::size_t n = network_.size();
  Votes votes;
  votes.holds.assign(n, false);
  votes.may_hold.assign(n, false);
  votes.answered.assign(n, false);
  votes.behind_readers.assign(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& result = round.results()[i];
    Vote v = read_vote(network_, i, result);
    if (v.kind == Vote::Kind::Yes) {
      votes.holds[i] = true;
      ++votes.free_now;
      votes.counters.push_back(v.counter);
      res.skipped_queue = res.skipped_queue || v.skipped_head;
    } else if (v.kind == Vote::Kind::No) {
      if (v.pttl == -2) ++votes.free_now;
      votes.busy_pttl.push_back(v.pttl);
      votes.busy_records.push_back(v.record);
      res.holder_announces = res.holder_announces || v.announces;
      ++res.busy_answers;
      res.queued += v.joined ? 1 : 0;
      votes.behind_readers[i] = v.behind_readers;
      res.behind_queue += v.behind_queue ? 1 : 0;
      if (v.behind_queue) res.heads.push_back(v.head);
      res.fair_mode = res.fair_mode || v.fair_mode;
    }
    res.tickets.push_back(v.kind == Vote::Kind::No ? v.ticket : 0);
    res.kept_place.push_back(v.kept_place);
    if (v.kind == Vote::Kind::No) votes.places.push_back(v.place);
    votes.answered[i] = v.kind == Vote::Kind::Yes || (result && result->failure == Failure::Reply);
    votes.may_hold[i] = v.kind == Vote::Kind::Yes || !result ||
                        (v.kind == Vote::Kind::Failed && (result->ok() || unsure_whether_run(result->failure)));
    votes.duplicate =
        votes.duplicate || (result && (result->failure == Failure::Duplicate || result->failure == Failure::Config));
    res.servers.push_back(std::move(v.report));
  }
  return votes;
}

AcquireResult Redlock::finish_won(const LockSpec& spec, const Round& round, const Tally& tally, const Votes& votes,
                                  AcquireResult res) {
  const TimePoint decided_at = network_.now();
  TimePoint valid_until = round.started() + spec.ttl - drift_allowance(spec.ttl, spec.drift);
  if (faults::enabled(faults::Fault::NoValidity)) valid_until = kNever;
  // A reader reads the fence and stores nothing: the highest counter on its quorum is above the
  // fence of every writer before it, whose quorum shares a server with the reader's.
  std::optional<std::int64_t> fence =
      spec.keys.reader ? highest(votes.counters) : agreed_fence(votes.counters, tally.needed());
  std::string duplicate_error;
  if (!spec.keys.reader && fence) {
    spread_fence(spec, *fence, round.results());
  } else if (!spec.keys.reader) {
    fence = write_fence(spec, highest(votes.counters), valid_until, duplicate_error);
  }
  const TimePoint now = network_.now();
  if (fence && valid_until - now > spec.min_validity && duplicate_error.empty()) {
    mark_acquired(res, *fence, decided_at, valid_until, now);
    return res;
  }
  release_taken(spec, votes.answered, votes.may_hold);
  if (!duplicate_error.empty()) config_error(duplicate_error);
  res.outcome = AcquireOutcome::NoQuorum;
  res.message = fence ? too_little_validity(valid_until - now, spec.min_validity)
                      : "the fencing token could not be stored on a quorum within the validity";
  return res;
}

void Redlock::finish_lost(const LockSpec& spec, const Round& round, const Tally& tally, const Votes& votes,
                          AcquireResult& res) const {
  const Duration took = votes.took;
  const Duration valid = validity(spec.ttl, took, spec.drift);
  if (tally.won() && valid > Duration::zero()) {
    res.outcome = AcquireOutcome::NoQuorum;
    res.message = too_little_validity(valid, spec.min_validity);
  } else if (tally.won()) {
    res.outcome = AcquireOutcome::NoQuorum;
    res.message = "a quorum answered only after the lock's validity had run out (" + ms_text(took) + " for a TTL of " +
                  ms_text(spec.ttl) + ")";
  } else if (tally.unreachable()) {
    res.outcome = AcquireOutcome::NoQuorum;
    res.message = no_quorum_message(network_, tally, round.results());
  } else {
    res.outcome = AcquireOutcome::Busy;
    res.holder_free_in = quorum_free_in(network_.size(), votes.free_now, votes.busy_pttl);
    res.holder = busy_holder(votes.busy_records, res.holder_free_in);
    res.message = busy_message(*res.holder, res.tally);
    res.place = queue_place(votes.places);
    if (res.behind_queue > 0 && res.behind_queue == res.busy_answers)
      res.message = "free, but another waiter's turn in the fair queue (busy on " +
                    servers_text(res.tally.no, res.tally.total) + and_not_waited(res.tally) + ")";
  }
}

void Redlock::release_taken(const LockSpec& spec, const std::vector<bool>& answered,
                            const std::vector<bool>& may_hold) {
  // Servers that have not answered get the release too: on the same connection it follows the
  // acquire, so a late SET is undone in order. Only those that answered are waited for.
  Round round(network_, may_hold, [&](std::size_t i) {
    Request r = release_request(spec.keys, spec.token, faults::enabled(faults::Fault::ReleaseAny), "retracted", i);
    // A server that has not answered may run it much later, whatever its script cache holds then.
    r.with_body = !answered[i];
    return r;
  });
  network_.run_until(
      [&] {
        for (std::size_t i = 0; i < answered.size(); ++i) {
          if (answered[i] && !round.results()[i]) return false;
        }
        return true;
      },
      kNever);
  // A member that fails over got a WAIT behind its vote (--member-wait): the server runs the
  // release only once that WAIT returns (a Sentinel member's goes to that master on the same
  // connection, behind the vote), and drops it unrun when we close the connection first. Such a
  // member is waited for until nothing of ours is left there: a WAIT lasts three quarters of a
  // --timeout, and a server ends a blocked command late by up to a tick of its clock (100 ms at
  // the default hz 10).
  const TimePoint bound = network_.now() + timeout_ + std::max(timeout_, kWaitTick);
  network_.run_until(
      [&] {
        for (std::size_t i = 0; i < answered.size(); ++i) {
          if (!answered[i] && may_hold[i] && network_.fails_over(i) && network_.busy(i)) return false;
        }
        return true;
      },
      bound);
}

std::optional<AcquireResult> Redlock::take_grant(const LockSpec& spec, const std::vector<std::string>& named) {
  const std::size_t n = network_.size();
  const std::string ttl_ms = ms_count(spec.ttl);
  Fanout reads(
      network_, [&](std::size_t) { return grant_requests(spec.keys, ttl_ms); }, Fanout::timed(network_));
  std::vector<std::optional<Result>> verdicts(n);
  std::vector<std::int64_t> fences(n, 0);
  Tally tally;
  network_.run_until(
      [&] {
        for (std::size_t i = 0; i < n; ++i) {
          if (verdicts[i]) continue;
          GrantVerdict v = read_grant(reads, i, spec.token);
          // A server found to be another configured one counts once, as in an acquire round.
          if (v.verdict && !network_.duplicate_of(i).empty()) v.verdict->reply = Reply::number(0);
          verdicts[i] = std::move(v.verdict);
          fences[i] = v.fence;
        }
        tally = count(verdicts, classify_flag);
        return tally.decided();
      },
      kNever);
  reads.abandon();
  if (!tally.won()) return std::nullopt;
  std::vector<std::int64_t> held;
  std::vector<ServerReport> reports;
  for (std::size_t i = 0; i < n; ++i) {
    const bool yes = verdicts[i] && classify_flag(*verdicts[i]) == Vote::Kind::Yes;
    if (yes) held.push_back(fences[i]);
    if (!verdicts[i] || !verdicts[i]->ok()) {
      reports.push_back(failure_report(network_, i, verdicts[i]));
    } else {
      reports.push_back(answer_report(network_, i, *verdicts[i], yes ? Answer::Locked : Answer::Busy, yes));
    }
  }
  auto res = finish_grant(spec, reads.started(), tally, held, std::move(reports));
  if (res) announce_taken(network_, spec.keys, named);
  return res;
}

std::optional<AcquireResult> Redlock::finish_grant(const LockSpec& spec, TimePoint sent, const Tally& tally,
                                                   const std::vector<std::int64_t>& held,
                                                   std::vector<ServerReport> reports) {
  TimePoint valid_until = sent + spec.ttl - drift_allowance(spec.ttl, spec.drift);
  if (faults::enabled(faults::Fault::NoValidity)) valid_until = kNever;
  std::optional<std::int64_t> fence = agreed_fence(held, tally.needed());
  std::string duplicate_error;
  if (!fence) fence = write_fence(spec, highest(held), valid_until, duplicate_error);
  const TimePoint now = network_.now();
  if (!fence || !duplicate_error.empty() || valid_until - now <= spec.min_validity) return std::nullopt;
  AcquireResult res;
  res.token = spec.token;
  res.ttl = spec.ttl;
  res.tally = tally;
  res.servers = std::move(reports);
  res.owner_record = owner_record(spec.owner, spec.ttl);
  mark_acquired(res, *fence, now, valid_until, now);
  return res;
}

namespace {

// A waiter's place in the lock's queue on each server: taken by a busy answer, kept by the answer
// that takes the lock there (a split vote must not lose it), and given back on every way out of
// the wait, won or not (exceptions included), without waiting for the answers. A place left behind
// anyway (a server that did not answer) lapses with its heartbeat.
class QueuePlace {
 public:
  QueuePlace(Network& network, QueuedWaiter waiter)
      : network_(network), waiter_(std::move(waiter)), queued_(network.size(), false) {}
  ~QueuePlace() {
    try {
      const Network::Batch batch(network_);
      for (std::size_t i = 0; i < queued_.size(); ++i) {
        if (!queued_[i]) continue;
        network_.send(i, Request::command({"ZREM", waiter_.queue_key, waiter_.id}), [](Result) {});
        network_.send(i, Request::command({"DEL", waiter_.alive_key}), [](Result) {});
        if (!waiter_.grant_key.empty()) network_.send(i, Request::command({"DEL", waiter_.grant_key}), [](Result) {});
      }
    } catch (...) {  // NOLINT(bugprone-empty-catch): a place left behind lapses with its heartbeat
    }
  }
  QueuePlace(const QueuePlace&) = delete;
  QueuePlace& operator=(const QueuePlace&) = delete;

  void note(const AcquireResult& res) {
    // An answer not waited for (or lost) may be a busy one that joined, won or not: a place left
    // there would be named by the next release there, and handed the lock, long after this
    // waiter is gone.
    for (std::size_t i = 0; i < queued_.size() && i < res.servers.size(); ++i) {
      const Answer a = res.servers[i].result;
      if (a == Answer::Locked || a == Answer::Reacquired) {
        // A taken server keeps the place until the acquire ends: left then.
        queued_[i] = queued_[i] || (i < res.kept_place.size() && res.kept_place[i]);
      } else {
        queued_[i] = true;
      }
    }
  }
  const QueuedWaiter& waiter() const { return waiter_; }

 private:
  Network& network_;
  QueuedWaiter waiter_;
  std::vector<bool> queued_;
};

// A queued waiter's turn: the ticket it keeps (written back where its servers disagree), its
// --max-queue, and when a hand-off the queues hold up goes the unfair way (see HandOffWatch).
class QueueTurn {
 public:
  QueueTurn(Network& network, Duration timeout, const LockSpec& spec)
      : network_(network), timeout_(timeout), watch_(spec.heartbeat) {}

  // After the attempt R, made with SPEC; sets SPEC's next attempt's way (fair or not).
  void after(AcquireResult& r, LockSpec& spec) {
    // Degraded only when a grant went ahead of another head: a barging waiter that was the head
    // where it was granted (the queues agree again) took its own turn.
    r.barged = spec.barge && r.skipped_queue;
    if (r.outcome != AcquireOutcome::Busy) return;
    if (first_ && spec.max_queue > 0 && r.place && *r.place >= static_cast<std::int64_t>(spec.max_queue)) {
      r.queue_full = true;
      r.message = std::to_string(*r.place) + " already queued ahead, at most " + std::to_string(spec.max_queue) +
                  " may be (" + r.message + ")";
    }
    first_ = false;
    // Tickets order the queue only in fair mode: outside it a wake-one waiter's rank is a hint, and
    // writing back tickets that concurrent joins drew apart would cost every hand-off a script call.
    if (spec.fair || r.fair_mode) keep_ticket(r, spec);
    const bool held_up = r.behind_queue > 0 && r.behind_queue + r.tally.yes >= r.tally.needed();
    spec.barge = watch_.observe(network_.now(), held_up, r.heads);
  }

 private:
  // The first ticket chosen is kept: a server that queued the waiter with another (it lost the
  // place and the waiter joined again, or it missed the join) is given it, and the first time
  // the tickets disagree, a quorum must store it before the waiter counts as arrived.
  void keep_ticket(AcquireResult& r, const LockSpec& spec) {
    bool wait = false;
    if (ticket_ == 0) {
      auto choice = choose_ticket(r.tickets, quorum_size(network_.size()));
      if (!choice) return;
      ticket_ = choice->ticket;
      wait = choice->write_back;
    }
    r.ticket = ticket_;
    std::vector<bool> fix(r.tickets.size(), false);
    std::size_t stored = 0;
    for (std::size_t i = 0; i < fix.size(); ++i) {
      // A server outside fair mode answers no ticket (0): the waiter is queued there in arrival
      // order, and is given its ticket there too, should that server turn fair.
      const bool busy = i < r.servers.size() && r.servers[i].result == Answer::Busy;
      fix[i] = (r.tickets[i] > 0 || busy) && r.tickets[i] != ticket_;
      if (r.tickets[i] == ticket_) ++stored;
    }
    if (std::none_of(fix.begin(), fix.end(), [](bool b) { return b; })) return;
    const std::string ticket = std::to_string(ticket_);
    const std::string queue = spec.keys.waiters, id = spec.waiter;
    Round round(network_, fix, [&](std::size_t i) {
      network_.send(i, Request::command({"ZADD", queue, "XX", ticket, id}), [](Result) {});
      Request req =
          Request::eval(kFenceScript, {queue_helper(spec.keys, "ticket")}, {ticket, ms_count(spec.fence_ttl)});
      req.with_body = true;
      return req;
    });
    if (!wait) return round.abandon();
    network_.run_until([&] { return stored + count(round.results(), classify_ticket).yes >= quorum_size(fix.size()); },
                       network_.now() + timeout_);
    round.abandon();
  }
  static Vote::Kind classify_ticket(const Result& res) {
    return res.ok() && res.reply.as_integer() ? Vote::Kind::Yes : Vote::Kind::Failed;
  }

  Network& network_;
  Duration timeout_;
  HandOffWatch watch_;
  std::int64_t ticket_ = 0;
  bool first_ = true;
};

}  // namespace

AcquireResult Redlock::acquire(const LockSpec& spec, const WaitOptions& wait) {
  // Only a caller that waits queues: a single attempt has no turn to be woken for. Readers do not
  // queue: they are many, and another's acquisition does not send a reader back to sleep.
  LockSpec queued = spec;
  std::optional<QueuePlace> place;
  if (wait.wait && !spec.keys.reader) {
    queued.waiter = make_token().substr(0, 16);
    queued.take_grants = takes_grants();
    place.emplace(network_, QueuedWaiter{queued.waiter, spec.keys.channel + ":" + queued.waiter,
                                         waiter_key(spec.keys, queued.waiter), spec.keys.waiters, spec.heartbeat,
                                         spec.fair ? queue_helper(spec.keys, "fair") : "",
                                         queued.take_grants ? grant_key(spec.keys, queued.waiter) : ""});
  }
  QueueTurn turn(network_, timeout_, spec);
  bool writer_queued = false;
  // The writers' queue holds new readers back for its entry's whole TTL: withdrawn however the wait ends.
  const Defer withdraw_entry([&] {
    if (writer_queued) withdraw(spec.keys, spec.token);
  });
  return acquire_with(
      spec.keys.channel, spec.ttl, wait,
      [&](const std::vector<std::string>* granted) {
        // A lock handed over is left as the queue had it: the waiter leaves its places at the end.
        if (granted) {
          if (auto taken = take_grant(queued, *granted)) return *taken;
        }
        AcquireResult r = attempt(queued);
        if (place) place->note(r);
        if (place) turn.after(r, queued);
        writer_queued = writer_queued || r.writer_queued;
        return r;
      },
      spec.keys.reader, place ? &place->waiter() : nullptr,
      place ? std::function<bool()>([&] { return held_by_others(queued); }) : std::function<bool()>());
}

bool Redlock::held_by_others(const LockSpec& spec) {
  Round round(network_, [&](std::size_t) { return Request::command({"GET", spec.keys.lock}); });
  auto classify = [&](const Result& r) {
    if (!r.ok() || r.reply.is_error()) return Vote::Kind::Failed;
    const bool other = r.reply.type == Reply::Type::String && r.reply.str != spec.token;
    return other ? Vote::Kind::Yes : Vote::Kind::No;
  };
  const Tally tally = run_until_decided(network_, round, classify, kNever);
  round.abandon();
  return tally.won();
}

bool Redlock::takes_grants() const {
  // A hand-over counts on a member that fails over only once replicas have it, which the waiter's
  // reads cannot tell (see grant.hpp).
  for (std::size_t i = 0; i < network_.size(); ++i) {
    if (network_.fails_over(i)) return false;
  }
  return true;
}

bool Redlock::queue_writer(const LockSpec& spec, const std::vector<bool>& where) {
  // Not waited for: the queue only holds new readers back (writer priority); safety is the marker's.
  if (std::none_of(where.begin(), where.end(), [](bool b) { return b; })) return false;
  Round(network_, where, [&](std::size_t) {
    Request r = Request::eval(kQueueScript, {spec.keys.writers}, {spec.token, ms_count(spec.ttl)});
    r.with_body = true;
    return r;
  }).abandon();
  return true;
}

void Redlock::withdraw(const LockKeys& keys, const std::string& token) {
  // Everywhere, without waiting (an entry left behind would hold readers back for its whole TTL),
  // whether the writer took the lock or not. With the body, as the fence's: nobody stays to answer
  // a NOSCRIPT.
  Round(network_, [&](std::size_t) {
    Request r = Request::eval(kWithdrawScript, {keys.writers}, {token, keys.channel});
    r.with_body = true;
    return r;
  }).abandon();
}

AcquireResult Redlock::acquire_with(const std::string& channel, Duration ttl, const WaitOptions& wait,
                                    const Attempt& attempt, bool many_holders, const QueuedWaiter* queued,
                                    const std::function<bool()>& held_by_others) {
  const TimePoint begin = network_.now();
  Wakeups wakeups(network_, channel, ttl, wait.retry_delay, seed_++, begin, wait.deadline);
  wakeups.set_many_holders(many_holders);
  if (queued) wakeups.set_waiter_id(queued->id);
  auto interrupted = [&] { return wait.interrupted && wait.interrupted(); };
  for (int attempts = 1;; ++attempts) {
    const auto granted = wakeups.take_grant();
    wakeups.forget_heard();
    AcquireResult res = attempt(granted ? &*granted : nullptr);
    res.attempts = attempts;
    TimePoint now = network_.now();
    res.elapsed = now - begin;
    if (res.queue_full) return res;
    // While a wait lasts, no quorum is "not yet": servers restarting or frozen for a moment are
    // waited out like a holder. The wait ends with 69 only when its last attempt had no quorum.
    const bool short_of_quorum =
        res.outcome == AcquireOutcome::NoQuorum && may_recover(res) && !faults::enabled(faults::Fault::NoQuorumAtOnce);
    if ((res.outcome != AcquireOutcome::Busy && !short_of_quorum) || !wait.wait) return res;
    if (interrupted() || now >= wait.deadline) return end_of_wait(std::move(res), interrupted(), short_of_quorum);
    // The spread unit follows how fast the servers answer now, busy answers included.
    wakeups.observe(answer_latencies(res.servers));
    if (!wakeups.subscribing()) {
      // A waiter listens on a channel of its own only where every busy server queued it: one that
      // could not (an ACL without the queue's commands) names nobody, and wakes everyone.
      if (queued && res.busy_answers > 0 && res.queued == res.busy_answers) wakeups.set_queued(*queued);
      // Subscribe, then try once more at once: a release between our first attempt and the
      // subscription would otherwise go unheard. Unless a read shows the lock still held by
      // others on a quorum: then nothing was released unheard that this waiter could take.
      wakeups.subscribe(network_.now() + timeout_, interrupted);
      if (!held_by_others || !held_by_others()) continue;
      now = network_.now();
    }
    // No quorum is retried like a split vote: a jittered retry delay, not the slow poll.
    const bool split_vote = res.tally.yes > 0 || short_of_quorum;
    TimePoint next = wakeups.plan(now, split_vote, res.holder_free_in, res.holder_announces);
    if (wait.on_retry) wait.on_retry(res, next);
    if (!wakeups.sleep(interrupted)) {
      res.outcome = AcquireOutcome::Interrupted;
      res.elapsed = network_.now() - begin;
      return res;
    }
  }
}

ExtendRound::ExtendRound(Network& network, const LockKeys& keys, const std::string& token, Duration ttl, double drift,
                         bool keep_longer)
    : network_(network), keys_(keys), token_(token), ttl_(ttl), drift_(drift), round_(network, [&](std::size_t) {
        // With its body, as release's: the answer of a server after the quorum is not waited for,
        // and one that lost its script cache (restart, SCRIPT FLUSH) would answer a bare EVALSHA
        // with a NOSCRIPT nobody reads, keeping the old expiry there.
        Request r = keys.reader ? Request::eval(kStayScript, {reader_lock(keys), keys.readers, keys.reader_owners},
                                                {token, ms_count(ttl), keep_longer ? "1" : "0", keys.channel})
                                : Request::eval(kExtendScript, {keys.lock, keys.owner},
                                                {token, ms_count(ttl), keep_longer ? "1" : "0", keys.channel});
        r.with_body = true;
        r.replicated = true;
        return r;
      }) {}

std::optional<Round> ExtendRound::heal(const Heal& heal, std::vector<bool>& done) const {
  // Safe because a quorum confirmed the lock in this very round: any other client needs a quorum
  // too, which shares a server with ours, where our token was found, so nobody else can hold the
  // lock now; putting it back on an empty server cannot make a second holder, and SET NX never
  // replaces one. A quorum that did not confirm it (the lock expired while we were stopped, say)
  // heals nothing: the renewal fails as before, so a lost lock is never taken back unnoticed.
  if (!result().extended) return std::nullopt;
  std::vector<bool> missing(round_.results().size(), false);
  done.resize(missing.size(), false);
  bool any = false;
  for (std::size_t i = 0; i < missing.size(); ++i) {
    const auto& r = round_.results()[i];
    missing[i] = !done[i] && r && r->ok() && r->reply.as_integer() == -1;
    done[i] = done[i] || missing[i];
    any = any || missing[i];
  }
  if (!any) return std::nullopt;
  const std::string ttl_ms = ms_count(result().ttl);
  const std::string fence = std::to_string(heal.fence);
  const std::string fence_ttl_ms = ms_count(heal.fence_ttl);
  // A reader is put back among the readers, with the marker (rejoin.lua): the same argument, since
  // a writer needs a quorum too, which shares a server where the reader's entry and marker were found.
  Round healing(network_, missing, [&](std::size_t) {
    const std::vector<std::string> args{token_, ttl_ms, heal.owner_record, fence, fence_ttl_ms};
    Request r =
        keys_.reader
            ? Request::eval(kRejoinScript, {reader_lock(keys_), keys_.readers, keys_.reader_owners, keys_.fence}, args)
            : Request::eval(kHealScript, {keys_.lock, keys_.owner, keys_.fence}, args);
    r.with_body = true;  // restarted empty: its script cache is empty too
    r.replicated = true;
    return r;
  });
  healing.abandon();
  return healing;
}

Duration ExtendRound::set_ttl() const {
  // Servers may set different TTLs (without a TTL asked for, each keeps what it has if longer): the
  // lock is valid for the shortest, which every server that extended it holds.
  std::optional<std::int64_t> shortest;
  for (const auto& r : round_.results()) {
    auto ms = r && r->ok() ? r->reply.as_integer() : std::nullopt;
    if (ms && *ms > 0 && (!shortest || *ms < *shortest)) shortest = ms;
  }
  return shortest ? Duration(std::chrono::milliseconds(*shortest)) : ttl_;
}

Tally ExtendRound::tally() const {
  return count(round_.results(), classify_flag);
}

ExtendResult ExtendRound::result() const {
  ExtendResult res;
  res.tally = tally();
  TimePoint now = network_.now();
  res.elapsed = now - round_.started();
  res.ttl = set_ttl();
  res.valid_until = round_.started() + res.ttl - drift_allowance(res.ttl, drift_);
  if (faults::enabled(faults::Fault::NoValidity)) res.valid_until = kNever;
  res.validity = res.valid_until - now;
  res.extended = res.tally.won() && res.validity > Duration::zero();
  res.no_quorum = !res.tally.won() && res.tally.unreachable();
  for (std::size_t i = 0; i < round_.results().size(); ++i) {
    const auto& r = round_.results()[i];
    auto kind = r ? classify_flag(*r) : Vote::Kind::Failed;
    if (kind == Vote::Kind::Failed) {
      res.servers.push_back(r && r->ok() ? unexpected_report(network_, i, *r) : failure_report(network_, i, r));
    } else {
      res.servers.push_back(answer_report(network_, i, *r, kind == Vote::Kind::Yes ? Answer::Extended : Answer::NotHeld,
                                          kind == Vote::Kind::Yes));
    }
  }
  if (res.extended) return res;
  if (res.tally.won()) {
    // As an acquire's quorum that answered too late: no quorum in time (69), not "not held".
    res.no_quorum = true;
    res.message = "a quorum extended the lock only after the new validity had run out";
  } else if (res.no_quorum) {
    res.message = no_quorum_message(network_, res.tally, round_.results());
  } else {
    res.counts = not_held_counts(network_, res.tally, round_.results(), "extended", res.tally.yes);
    res.message = not_held_message(res.counts);
  }
  return res;
}

ExtendResult Redlock::extend(const LockKeys& keys, const std::string& token, Duration ttl, double drift,
                             const Heal& heal, bool keep_longer) {
  ExtendRound round(network_, keys, token, ttl, drift, keep_longer);
  network_.run_until([&] { return round.decided(); }, kNever);
  if (round.tally().won()) settle(round.round());
  check_duplicates(round.results());
  ExtendResult res = round.result();
  std::vector<bool> healed;
  std::optional<Round> healing = res.extended ? round.heal(heal, healed) : std::nullopt;
  if (!healing) return res;
  network_.run_until([&] { return healing->complete(); }, network_.now() + timeout_);
  for (std::size_t i = 0; i < res.servers.size(); ++i) {
    const auto& r = healing->results()[i];
    if (!r || !r->ok() || r->reply.as_integer() != 1) continue;
    res.servers[i].result = Answer::Healed;
    res.servers[i].ok = true;
    ++res.healed;
  }
  return res;
}

Round Redlock::read_everywhere(const LockKeys& keys, bool with_queue) {
  Round round(network_, [&](std::size_t) {
    if (with_queue) return Request::eval(kStatusScript, {keys.lock, keys.owner, keys.fence, keys.waiters}, {});
    return Request::eval(kStatusScript, {keys.lock, keys.owner, keys.fence}, {});
  });
  network_.run_until([&] { return round.complete(); }, kNever);
  check_duplicates(round.results());
  return round;
}

ReleaseResult Redlock::check_forced(const LockKeys& keys) {
  const Round round = read_everywhere(keys);

  ReleaseResult res;
  res.tally.total = round.results().size();
  res.elapsed = network_.now() - round.started();
  std::string found;
  for (std::size_t i = 0; i < round.results().size(); ++i) {
    const auto& r = round.results()[i];
    const Reply* reply =
        r && r->ok() && r->reply.type == Reply::Type::Array && r->reply.elements.size() == 5 ? &r->reply : nullptr;
    const auto pttl = reply ? reply->elements[2].as_integer() : std::nullopt;
    if (!pttl) {
      ++res.tally.failed;
      res.servers.push_back(r && r->ok() ? unexpected_report(network_, i, *r) : failure_report(network_, i, r));
      continue;
    }
    ++res.tally.no;  // nothing deleted yet
    const std::string& type = reply->elements[0].str;
    const std::string what = not_a_lock(type, *pttl);
    const Answer seen = !what.empty() ? Answer::Foreign : type == "none" ? Answer::Free : Answer::Held;
    ServerReport rep = answer_report(network_, i, *r, seen, false);
    if (!what.empty()) {
      rep.error = what + ", not a lock";
      found += (found.empty() ? "" : ", ") + rep.server + " (" + what + ")";
    }
    res.servers.push_back(std::move(rep));
  }
  res.not_a_lock = !found.empty();
  if (res.not_a_lock) res.message = "not a lock on " + found + "; nothing deleted";
  return res;
}

ReleaseResult Redlock::release(const LockKeys& keys, const std::string& token, bool force, ReleaseWait wait) {
  Duration checking{};  // the check's time is the command's too (a frozen server's --timeout)
  if (force && !keys.reader) {
    // Whatever is not a lock on any server that answers is refused before anything is deleted.
    ReleaseResult checked = check_forced(keys);
    if (checked.not_a_lock) return checked;
    checking = checked.elapsed;
  }
  Round round(network_, [&](std::size_t i) {
    Request r = release_request(keys, token, force || faults::enabled(faults::Fault::ReleaseAny), "released", i);
    // Waiting for the outcome only, the process may be gone before a server that lost its script
    // cache (a restart, SCRIPT FLUSH) answers NOSCRIPT: the script goes with its body, so that no
    // server left unwaited for needs a second round trip to drop the lock.
    r.with_body = wait == ReleaseWait::Outcome;
    return r;
  });
  // Every answer in means decided too; the outcome alone comes sooner when a server is frozen.
  network_.run_until(
      [&] {
        return wait == ReleaseWait::Outcome ? count(round.results(), release_vote(force)).decided() : round.complete();
      },
      kNever);
  check_duplicates(round.results());
  ReleaseResult res = release_result(network_, round, force);
  res.elapsed += checking;
  return res;
}

StatusResult Redlock::status(const LockKeys& keys) {
  const Round round = read_everywhere(keys, true);
  std::vector<std::vector<QueueEntry>> queues;
  for (const auto& r : round.results()) {
    if (r && r->ok() && r->reply.type == Reply::Type::Array && r->reply.elements.size() > 5)
      queues.push_back(parse_queue(r->reply.elements[5]));
  }
  StatusResult res;
  res.queue = merge_queue(queues);
  res.elapsed = network_.now() - round.started();
  res.tally.total = round.results().size();
  std::vector<std::optional<LockReading>> readings(res.tally.total);
  for (std::size_t i = 0; i < round.results().size(); ++i) {
    const auto& r = round.results()[i];
    if (r && r->ok()) readings[i] = parse_lock_reading(r->reply);
    if (!readings[i]) {
      ++res.tally.failed;
      res.servers.push_back(r && r->ok() ? unexpected_report(network_, i, *r) : failure_report(network_, i, r));
      continue;
    }
    ++res.tally.yes;
    const LockReading& reading = *readings[i];
    ServerReport rep = answer_report(network_, i, *r, Answer::Free, true);
    rep.type = reading.type;
    rep.ttl_ms = reading.ttl_ms;
    rep.value = reading.value;
    rep.owner = reading.owner;
    rep.fence = reading.fence;
    if (reading.type != "none") rep.result = lock_like(reading.type, reading.ttl_ms) ? Answer::Held : Answer::Foreign;
    res.servers.push_back(std::move(rep));
  }
  const LockVerdict verdict = judge_lock(readings);
  res.no_quorum = verdict.state == LockState::Unknown;
  res.state = verdict.state;
  res.token = verdict.token;
  res.ttl_ms = verdict.ttl_ms;
  res.owner = verdict.owner;
  res.since_unix_ms = verdict.since_unix_ms;
  res.fence = verdict.fence;
  return res;
}

std::optional<LockReading> parse_lock_reading(const Reply& reply) {
  if (reply.type != Reply::Type::Array || reply.elements.size() < 5 || reply.elements.size() > 6 ||
      !reply.elements[2].as_integer()) {
    return std::nullopt;
  }
  LockReading r;
  r.type = reply.elements[0].str;
  r.ttl_ms = *reply.elements[2].as_integer();
  if (reply.elements[1].type == Reply::Type::String) r.value = reply.elements[1].str;
  if (reply.elements[3].type == Reply::Type::String) r.owner = reply.elements[3].str;
  r.fence = reply.elements[4].as_integer().value_or(0);
  return r;
}

std::vector<QueueEntry> parse_queue(const Reply& reply) {
  std::vector<QueueEntry> queue;
  if (reply.type != Reply::Type::Array) return queue;
  for (std::size_t i = 0; i + 2 < reply.elements.size(); i += 3) {
    const auto& e = reply.elements;
    std::int64_t ticket = 0;
    const std::string& score = e[i + 1].str;
    std::from_chars(score.data(), score.data() + score.size(), ticket);
    queue.push_back({e[i].str, ticket, e[i + 2].str});
  }
  return queue;
}

namespace {

// The TTL a quorum of WHERE still holds the lock for: the needed-th longest (−1, no expiry, longest).
std::int64_t quorum_ttl(std::vector<std::int64_t> ttls, std::size_t needed) {
  std::sort(ttls.begin(), ttls.end(), [](std::int64_t a, std::int64_t b) {
    if (a == -1) return b != -1;
    if (b == -1) return false;
    return a > b;
  });
  return ttls[needed - 1];
}

}  // namespace

LockVerdict judge_lock(const std::vector<std::optional<LockReading>>& readings) {
  LockVerdict v;
  const std::size_t needed = quorum_size(readings.size());
  std::size_t answered = 0;
  std::size_t free = 0;
  std::map<std::string, std::vector<const LockReading*>> holders;  // value -> servers holding it with time left
  for (const auto& r : readings) {
    if (!r) continue;
    ++answered;
    v.fence = std::max(v.fence, r->fence);
    if (r->type == "none") ++free;
    if (!lock_like(r->type, r->ttl_ms) || !r->value) continue;
    holders[*r->value].push_back(&*r);
    ++v.servers_held;
  }
  // Too few answers for any verdict (none held or free can come from fewer than a quorum).
  v.state = answered < needed ? LockState::Unknown : free >= needed ? LockState::Free : LockState::Partial;
  for (const auto& [value, where] : holders) {
    if (where.size() < needed) continue;
    v.state = LockState::Held;
    v.token = value;
    v.servers_held = where.size();
    std::vector<std::int64_t> ttls;
    for (const auto* r : where) ttls.push_back(r->ttl_ms);
    v.ttl_ms = quorum_ttl(std::move(ttls), needed);
    const auto with_owner = std::find_if(where.begin(), where.end(), [](const LockReading* r) { return r->owner; });
    if (with_owner == where.end()) break;
    OwnerRecord record = parse_owner_record(*(*with_owner)->owner);
    v.since_unix_ms = record.since_unix_ms;
    v.owner = record.owner;
    break;
  }
  return v;
}

}  // namespace redlock
