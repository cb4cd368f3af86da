// The Redlock algorithm over N independent masters: acquire (with fencing and waiting), extend,
// release and status. Everything goes through the Network interface, so the decisions here are
// unit-tested against an in-memory fake and run for real over Transport.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/lock/fair.hpp"
#include "core/lock/keys.hpp"
#include "core/lock/quorum.hpp"
#include "core/lock/round.hpp"
#include "core/lock/wakeups.hpp"
#include "core/net/network.hpp"

namespace redlock {

// What one server's answer came to. Failed carries its kind in ServerReport::failure.
// NotWaitedFor: no answer yet when the outcome was known, which is no failure.
enum class Answer {
  NotWaitedFor,
  Locked,
  Reacquired,
  Busy,
  Foreign,
  Extended,
  Healed,
  Released,
  NotHeld,
  Held,
  Free,
  Listed,  // list: the server's locks were all read
  Probed,  // a semaphore's probe: every slot read
  Failed
};

// What each server said, for reports.
struct ServerReport {
  std::string server;  // redacted URL
  bool ok = false;     // did what was asked (meaningless when not waited for)
  Answer result = Answer::NotWaitedFor;
  Failure failure = Failure::None;  // Failed: how
  std::optional<Duration> latency;
  std::string error;     // empty when none
  std::string role;      // master, replica (never a vote), another role, or empty when unknown
  std::string resolved;  // the address that answered for the member ("host:port"), empty when unknown
  // status only
  std::string type;
  std::optional<std::string> value;
  std::int64_t ttl_ms = -2;
  std::optional<std::string> owner;
  std::int64_t fence = 0;
  bool waited_for() const { return result != Answer::NotWaitedFor; }
  bool failed(Failure f) const { return result == Answer::Failed && failure == f; }
  // The result as reports name it: locked, reacquired, busy, foreign, extended, healed, released,
  // not_held, held, free, listed, ok (Probed), not_waited_for, or the failure's name ("error" for an error reply).
  std::string_view result_name() const;
};

// SERVER's line of a report: its failure, or who it is alone when R is empty (not waited for).
ServerReport failure_report(const Network& network, std::size_t server, const std::optional<Result>& r);
// SERVER's line of a report for an answer R read as RESULT (OK: it did what was asked).
ServerReport answer_report(const Network& network, std::size_t server, const Result& r, Answer result, bool ok);
// SERVER's line for a reply R that is not what our script returns: not what we think it is.
ServerReport unexpected_report(const Network& network, std::size_t server, const Result& r);

// The record kept beside a lock, "UNIX_MS/TTL_MS OWNER": since when and by whom it is held, and the
// TTL it was taken with (which `extend` without a TTL keeps). Records of earlier versions, "UNIX_MS
// OWNER", and of anything else, are read as far as they go: the rest is the owner.
struct OwnerRecord {
  std::optional<std::int64_t> since_unix_ms;
  std::optional<std::int64_t> ttl_ms;
  std::string owner;
};
OwnerRecord parse_owner_record(const std::string& text);
std::string make_owner_record(std::int64_t unix_ms, std::int64_t ttl_ms, const std::string& owner);

// Who holds a busy lock, as far as the busy answers tell.
struct Holder {
  std::optional<std::string> owner;  // none: the holder keeps no owner record (not a redlock client)
  std::optional<Duration> ttl;       // until it could be free on a quorum; none when it cannot be known
};

// How long a fencing counter lives unused (each acquisition sets its expiry anew), and the least
// that is safe: a counter that expired starts again from its server's clock, which is above every
// earlier fence as long as no two servers' clocks disagree by this much (see acquire.lua).
inline constexpr Duration kDefaultFenceTtl = std::chrono::hours(24 * 30);
inline constexpr Duration kMinFenceTtl = std::chrono::hours(1);
// The expiry of a queued waiter's heartbeat: a waiter that dies in the queue is skipped by the
// releases after at most this long.
inline constexpr Duration kDefaultHeartbeat = std::chrono::seconds(3);

struct LockSpec {
  LockKeys keys;
  std::string token;
  Duration ttl = std::chrono::seconds(30);  // whole milliseconds
  double drift = 0.01;
  std::string owner;                      // empty: no owner record
  Duration fence_ttl = kDefaultFenceTtl;  // whole milliseconds
  // An acquisition left with no more validity than this is given back at once (as one whose
  // validity ran out): `run` needs the time to stop its command before the lock can expire.
  Duration min_validity{};
  // A caller that waits joins the lock's queue under this id when it finds the lock busy (empty:
  // it does not), so that a release wakes it alone when its turn comes; the queue keeps it while
  // its heartbeat, of this expiry, lives (see Wakeups).
  std::string waiter;
  Duration heartbeat = kDefaultHeartbeat;
  // A queued waiter that a release may hand the lock to (see grant.hpp).
  bool take_grants = false;
  // A reader (keys.reader) is refused while a writer waits; false lets it in (--no-writer-priority).
  bool writer_priority = true;
  // TOKEN was made for this acquisition: on its first attempt, no server can already hold it, so
  // one that answers it does is a server reached twice (two names of one server whose INFO the
  // ACL refuses, so that run_id cannot tell), and the configuration is refused.
  bool new_token = false;
  // --fair: while a fair waiter waits, the lock goes to the queue's head alone (see acquire.lua).
  // BARGE: this attempt skips the queue's order (a hand-off the queues held up for a heartbeat).
  bool fair = false;
  bool barge = false;
  // --max-queue: a waiter gives up busy at once when this many are queued ahead (0: no limit).
  std::size_t max_queue = 0;
  // A waiter told its place in line (-v): outside fair mode a join reads it only when asked, for
  // this or for --max-queue (a plain join costs what it did before fairness).
  bool report_place = false;
};

struct AcquireResult;

struct WaitOptions {
  bool wait = false;            // false: one attempt
  TimePoint deadline = kNever;  // give up after this (-w)
  Duration retry_delay = std::chrono::milliseconds(200);
  std::function<bool()> interrupted;  // checked while waiting; true stops the wait
  // Told of every failed attempt while the wait goes on (busy, or short of a quorum: a blip that
  // is waited out like a holder), with the time of the next attempt.
  std::function<void(const AcquireResult&, TimePoint next)> on_retry;
};

enum class AcquireOutcome { Acquired, Busy, TimedOut, NoQuorum, Interrupted };

struct AcquireResult {
  AcquireOutcome outcome = AcquireOutcome::Busy;
  std::string token;
  std::int64_t fence = 0;
  Duration ttl{};
  Duration validity{};      // left at the moment of return
  Duration elapsed{};       // since acquire() was called
  TimePoint taken_at{};     // when the quorum was confirmed
  TimePoint valid_until{};  // start of the winning attempt + TTL − drift allowance
  int attempts = 0;
  Tally tally;  // of the last attempt
  std::vector<ServerReport> servers;
  std::optional<Duration> holder_free_in;  // busy: when the holder's lock could expire on a quorum
  std::optional<Holder> holder;            // busy: who holds it
  std::string owner_record;                // acquired: the owner record written beside the lock
  // Busy: the holder keeps an owner record, as redlock holders do, whose releases wake the waiters.
  // Other clients (node-redlock, redsync, redis-py) delete their key without a word.
  bool holder_announces = false;
  // Busy: how many servers answered busy, and how many of them queued the caller as a waiter.
  std::size_t busy_answers = 0;
  std::size_t queued = 0;
  // Refused by readers somewhere: the writer queued among the shared mode's waiting writers there
  // (Redlock::acquire withdraws it when the acquire ends).
  bool writer_queued = false;
  // Busy: how many servers refused only because another waiter is the fair queue's head (the
  // lock is free there); the ticket each server queued the caller with (0: none); how many are
  // queued ahead of it, as far as the servers agree.
  std::size_t behind_queue = 0;
  std::vector<std::string> heads;  // the heads the queues named when they refused, in server order
  std::vector<bool> kept_place;    // per server: taken there, and still queued
  bool fair_mode = false;          // busy: a fair waiter's mark lives on some server
  std::vector<std::int64_t> tickets;
  std::optional<std::int64_t> place;
  // The ticket the waiter keeps (see choose_ticket), once known.
  std::int64_t ticket = 0;
  // --fair: taken by an attempt that skipped the queue's order (the hand-off degraded): a barging
  // attempt (LockSpec::barge) granted somewhere ahead of another head (skipped_queue).
  bool barged = false;
  bool skipped_queue = false;
  // --max-queue: given up at once, that many were queued ahead.
  bool queue_full = false;
  std::string message;  // why not, in words
};

struct ExtendResult {
  bool extended = false;
  Duration ttl{};          // the expiry set: the shortest a server that extended the lock reported
  std::size_t healed = 0;  // servers the lock was put back on, where it was missing
  bool no_quorum = false;
  Duration validity{};
  Duration elapsed{};
  TimePoint valid_until{};
  Tally tally;
  std::vector<ServerReport> servers;
  std::string message;
  // Not held: what the servers answered, in numbers ("extended on 0 of 3 servers"), as the message
  // says it after "not held with this token".
  std::string counts;
};

struct ReleaseResult {
  bool released = false;
  bool no_quorum = false;
  // --force found a key that cannot be a lock (another type, a string without an expiry): it was
  // left alone, and when found before deleting, nothing was deleted anywhere.
  bool not_a_lock = false;
  std::size_t deleted = 0;
  Duration elapsed{};
  Tally tally;
  std::vector<ServerReport> servers;
  std::string message;
};

// Unknown: fewer than a quorum answered.
enum class LockState { Held, Free, Partial, Unknown };

struct StatusResult {
  LockState state = LockState::Partial;
  bool no_quorum = false;
  std::optional<std::string> token;  // held: the value a quorum holds
  std::int64_t ttl_ms = -2;          // held: how long a quorum still holds it (−1: no expiry)
  std::optional<std::string> owner;  // held: the owner record's text, when there is one
  std::optional<std::int64_t> since_unix_ms;
  std::int64_t fence = 0;          // the highest fencing counter seen
  std::vector<QueuedPlace> queue;  // the live waiters queued on any server, next to be served first
  Duration elapsed{};
  Tally tally;
  std::vector<ServerReport> servers;
};

// What can be a lock: a string with an expiry. Every lock is taken with one; a string without one
// is someone else's data.
inline bool lock_like(std::string_view type, std::int64_t pttl) {
  return type == "string" && pttl != -1;
}

// What one server holds under a lock's key, as the status script reads it.
struct LockReading {
  std::string type = "none";  // none, string, or another type (a foreign key)
  std::optional<std::string> value;
  std::int64_t ttl_ms = -2;
  std::optional<std::string> owner;  // the owner record's text
  std::int64_t fence = 0;
};
// The status script's answer {type, value, PTTL, owner record, fence counter}; nothing when REPLY
// is not one.
std::optional<LockReading> parse_lock_reading(const Reply& reply);
// The queue in the status script's answer, {ID, TICKET, OWNER, ...}; empty when REPLY is not one.
std::vector<QueueEntry> parse_queue(const Reply& reply);

// What the servers' readings say of a lock (the rule of `status` and `list`): held when a quorum
// holds one token with time left, free when a quorum holds nothing, partial otherwise, unknown
// when fewer than a quorum answered.
struct LockVerdict {
  LockState state = LockState::Partial;
  std::optional<std::string> token;  // held: the value a quorum holds
  std::int64_t ttl_ms = -2;          // held: how long a quorum still holds it (−1: no expiry)
  std::optional<std::string> owner;  // held: the owner record's owner, when there is one
  std::optional<std::int64_t> since_unix_ms;
  std::int64_t fence = 0;        // the highest fencing counter seen
  std::size_t servers_held = 0;  // held: servers holding the token; else servers holding any lock
};
// READINGS has one entry per server, empty for a server that did not answer.
LockVerdict judge_lock(const std::vector<std::optional<LockReading>>& readings);

// What a renewal writes where it puts a missing lock back: the owner record and the fence it was
// taken with (empty and 0 when unknown, as for `extend`).
struct Heal {
  std::string owner_record;
  std::int64_t fence = 0;
  Duration fence_ttl = kDefaultFenceTtl;  // the expiry of a fencing counter it writes
};

// An extend round that can run in the background (renewals in `run`) or be waited for.
class ExtendRound {
 public:
  // KEEP_LONGER (no TTL asked for): TTL is only the fallback; each server sets the TTL the lock was
  // taken with (its owner record says) or the lock's remaining TTL, whichever is longer.
  ExtendRound(Network& network, const LockKeys& keys, const std::string& token, Duration ttl, double drift,
              bool keep_longer = false);

  // Once the round extended the lock on a quorum with validity left, puts it back (SET NX PX, the
  // same token and TTL) on the servers that answered they have no lock at all: servers restarted
  // empty, so that a rolling restart does not wear the lock down to nothing. Never anywhere else:
  // a server where another token holds the key keeps it. A reader (keys.reader) is put back among
  // the readers, with the readers' marker, where the lock is absent or holds the marker: never where
  // a writer holds it. The requests go without waiting; the Round returned collects the answers
  // (nothing when no server needs it). Servers marked in DONE are left out, and those healed now
  // are marked there: called again as late answers come (DONE kept), each server is healed once.
  std::optional<Round> heal(const Heal& heal, std::vector<bool>& done) const;
  Tally tally() const;
  bool decided() const { return tally().decided(); }
  // The verdict so far; call when decided() or when giving up on the stragglers.
  ExtendResult result() const;
  const std::vector<std::optional<Result>>& results() const { return round_.results(); }
  const Round& round() const { return round_; }

 private:
  // The TTL the servers that extended the lock set: the shortest they answered (TTL before any did).
  Duration set_ttl() const;

  Network& network_;
  LockKeys keys_;
  std::string token_;
  Duration ttl_;
  double drift_;
  Round round_;
};

class Redlock {
 public:
  explicit Redlock(Network& network, Duration timeout = std::chrono::milliseconds(100));

  Network& network() const { return network_; }

  // Takes the lock (waiting as WAIT says); a failed attempt releases whatever it took. Throws a
  // configuration error when two configured servers turn out to be one.
  AcquireResult acquire(const LockSpec& spec, const WaitOptions& wait);
  // The wait of acquire around attempts of another kind (a semaphore's, over its slots): ATTEMPT
  // is made until it acquires or the wait is over, woken by the messages on CHANNEL. TTL is the
  // guess of a holder's TTL. With MANY_HOLDERS, an "acquired" message does not send the waiters
  // back to sleep: another of the places may still be free.
  // QUEUED: the waiter's place in the lock's queue, whose heartbeat the wait keeps alive.
  // ATTEMPT is given the waiters named by a release that handed the lock to this waiter (it first),
  // or nullptr.
  using Attempt = std::function<AcquireResult(const std::vector<std::string>* granted)>;
  // HELD_BY_OTHERS, when given, reads whether others hold the lock on a quorum (no script): the
  // attempt right after subscribing is skipped when they do.
  AcquireResult acquire_with(const std::string& channel, Duration ttl, const WaitOptions& wait, const Attempt& attempt,
                             bool many_holders = false, const QueuedWaiter* queued = nullptr,
                             const std::function<bool()>& held_by_others = {});
  // Extends where the lock holds TOKEN and, with a quorum, puts it back where it is missing (see
  // ExtendRound::heal), waiting up to --timeout for those answers.
  ExtendResult extend(const LockKeys& keys, const std::string& token, Duration ttl, double drift, const Heal& heal = {},
                      bool keep_longer = false);
  // How long a release waits: for every server's answer (each up to --timeout), so that each one's
  // outcome is known; or only until a quorum said released, or too many said not, since the
  // requests have left for every server that can run them all the same.
  enum class ReleaseWait { EveryServer, Outcome };
  // Compare-and-delete, and wake the waiters. FORCE deletes whatever lock is there (a string with an
  // expiry), after reading the key on every server: anything else found on any server that answers
  // is refused, and nothing is deleted anywhere. A server that does not answer that check is not
  // asked again: the release script deletes nothing but a lock there either.
  ReleaseResult release(const LockKeys& keys, const std::string& token, bool force,
                        ReleaseWait wait = ReleaseWait::EveryServer);
  StatusResult status(const LockKeys& keys);
  // A writer that stops waiting leaves the waiting writers on every server (not waited for).
  void withdraw(const LockKeys& keys, const std::string& token);

 private:
  // A writer refused by readers on the servers in WHERE enters itself among the waiting writers
  // there (not waited for); whether it did anywhere.
  bool queue_writer(const LockSpec& spec, const std::vector<bool>& where);
  struct Votes;
  // Whether a waiter may be handed the lock by a release (see grant.hpp): no member fails over.
  bool takes_grants() const;
  // Whether a quorum of servers hold the lock for a token other than SPEC's (plain GETs).
  bool held_by_others(const LockSpec& spec);
  // One acquire round: the votes, then the lock (fenced) or what stood in the way.
  AcquireResult attempt(const LockSpec& spec);
  // A release handed the lock to this waiter, and named NAMED (this one first): takes it (see
  // grant.hpp), or nothing when a quorum did not hand it over.
  std::optional<AcquireResult> take_grant(const LockSpec& spec, const std::vector<std::string>& named);
  // A quorum read back the lock handed over (TALLY; HELD: the fencing counters of those that hold
  // it; REPORTS: each server's answer), in reads sent at SENT: fences it, or nothing when the fence
  // or the time falls short.
  std::optional<AcquireResult> finish_grant(const LockSpec& spec, TimePoint sent, const Tally& tally,
                                            const std::vector<std::int64_t>& held, std::vector<ServerReport> reports);
  // What each server answered to the acquire round (their reports go to RES).
  Votes read_votes(const Round& round, AcquireResult& res) const;
  // A quorum said yes: fences the lock, or gives it back when the fence or the time falls short.
  AcquireResult finish_won(const LockSpec& spec, const Round& round, const Tally& tally, const Votes& votes,
                           AcquireResult res);
  // Not won: busy (and by whom), or no quorum (and why), into RES.
  void finish_lost(const LockSpec& spec, const Round& round, const Tally& tally, const Votes& votes,
                   AcquireResult& res) const;
  // The status script on every server, each answer waited for (up to --timeout); WITH_QUEUE: the
  // live waiters of the lock's queue too.
  Round read_everywhere(const LockKeys& keys, bool with_queue = false);
  // The read-only round before a forced release: what every server holds under the key.
  ReleaseResult check_forced(const LockKeys& keys);
  // Releases TOKEN after a failed attempt on the servers in MAY_HOLD; waits for those in ANSWERED.
  void release_taken(const LockSpec& spec, const std::vector<bool>& answered, const std::vector<bool>& may_hold);
  // Once the outcome is known, waits for names still being resolved (so that two names of one
  // endpoint are refused however the answers raced), then kDuplicateGrace for the rest.
  void settle(const Round& round);
  // Sends FENCE (set-if-greater) to the servers whose answer did not carry it, without waiting.
  void spread_fence(const LockSpec& spec, std::int64_t fence, const std::vector<std::optional<Result>>& answers);
  // Stores FENCE on a quorum (set-if-greater); nothing when a quorum did not confirm it in time.
  // DUPLICATE is the error of a server that answered as the second URL of another, if one did:
  // the fence round may be where that shows first.
  std::optional<std::int64_t> write_fence(const LockSpec& spec, std::int64_t fence, TimePoint valid_until,
                                          std::string& duplicate);

  Network& network_;
  Duration timeout_;
  std::uint64_t seed_;
  std::string last_token_;  // of the last attempt: its next attempts may find it held
};

// The fence a quorum of acquire answers agree on (their counters), if NEEDED of them are equal.
std::optional<std::int64_t> agreed_fence(const std::vector<std::int64_t>& counters, std::size_t needed);

// How long acquire and extend, their outcome known, still listen for servers not heard from: a
// second address of a server that answered is the same process, which answers both connections
// within an event-loop turn or two, and is refused when it does. A frozen server costs only this.
inline constexpr Duration kDuplicateGrace = std::chrono::microseconds(200);
// How late a server may end a blocked WAIT, twice the tick of Redis's default hz 10.
inline constexpr Duration kWaitTick = std::chrono::milliseconds(200);

// Throws the configuration error of a server that turned out to be another configured server, or
// that cannot be what its URL asks for (a database it does not have).
void check_duplicates(const std::vector<std::optional<Result>>& results);

std::string_view outcome_name(AcquireOutcome o);
std::string_view state_name(LockState s);

}  // namespace redlock
