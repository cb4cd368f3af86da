// `watch`: the events on one lock as they happen. Servers announce them on the lock's wake-up
// channel (acquired, extended, released, retracted) and, where notify-keyspace-events allows it,
// on the key's keyspace channel (expired, del, set). An announcement only says that something
// happened on one server: the server is then read, in the order of its announcements, and the
// change of what it holds makes the event. Each server's view is also read when its lock should
// have expired and once a second, so that what was not announced (other clients, keyspace
// notifications off, a subscription that broke) is still seen, later. A lock-level event is told
// once, however many servers report it: acquired when a quorum holds one token, released or
// expired when the first server lets the announced holder go, extended and retracted once per
// window of kSameEvent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/lock/redlock.hpp"

namespace redlock {

enum class LockEventKind { Acquired, Extended, Released, Expired, Retracted };
std::string_view event_name(LockEventKind kind);

struct LockEvent {
  LockEventKind kind = LockEventKind::Acquired;
  std::optional<std::string> token;
  std::optional<std::string> owner_record;  // "UNIX_MS/TTL_MS OWNER", when the holder keeps one
  std::int64_t fence = 0;                   // 0: unknown
  std::optional<std::int64_t> ttl_ms;       // acquired, extended: what is left
  std::size_t server = 0;                   // the first server that told
};

// Reports of the same event from several servers are at most this far apart.
inline constexpr Duration kSameEvent = std::chrono::seconds(1);

// The pure part: each server's view of the lock, and the lock-level events its changes make.
class LockHistory {
 public:
  explicit LockHistory(std::size_t servers) : views_(servers) {}

  // What SERVER held when the watch started (nothing when it did not answer): no events.
  void start(const std::vector<std::optional<LockReading>>& readings, TimePoint sent);
  // What SERVER holds, read at SENT, after an announcement (EXTENDED: "extended") or a poll.
  void read(std::size_t server, const LockReading& reading, TimePoint sent, TimePoint now, bool extended);
  // SERVER said its lock ended: released or retracted by its holder's script (BY_HOLDER), else
  // deleted unexplained or expired (keyspace).
  void ended(std::size_t server, LockEventKind kind, TimePoint now, bool by_holder);
  // The events since the last call, in order.
  std::vector<LockEvent> take();

  std::size_t free_servers() const;
  // When SERVER's lock expires, as far as known (kNever when none).
  TimePoint expires(std::size_t server) const { return views_[server].expires; }

 private:
  struct View {
    bool held = false;
    std::optional<std::string> token;
    std::optional<std::string> owner_record;
    std::int64_t fence = 0;
    TimePoint expires = kNever;
  };
  struct Told {
    LockEventKind kind;
    std::optional<std::string> token;
    std::vector<bool> servers;
    TimePoint at;
  };
  static View view_of(const LockReading& reading, TimePoint sent);
  void arrive(std::size_t server, TimePoint now);
  // SERVER's lock ended. Unless its holder said so (BY_HOLDER), the announced holder's end is news
  // only once it no longer holds on a quorum: a server restarted empty, a key deleted or expired
  // there, leaves a lock that still holds.
  void depart(std::size_t server, LockEventKind kind, TimePoint now, bool by_holder);
  // The servers whose view holds the announced token, unexpired at NOW.
  std::size_t announced_on(TimePoint now) const;
  // Tells EVENT unless it is another server's report of one told within kSameEvent (or, when ONLY_MERGE,
  // only adds SERVER to such a report).
  void tell(LockEvent event, TimePoint now, bool only_merge = false);

  std::vector<View> views_;
  std::optional<std::string> announced_;  // the token told as acquired (or held at the start)
  std::deque<Told> told_;
  std::vector<LockEvent> out_;
};

// The watch itself, over the network.
class LockWatch {
 public:
  LockWatch(Network& network, LockKeys keys);
  ~LockWatch();
  LockWatch(const LockWatch&) = delete;
  LockWatch& operator=(const LockWatch&) = delete;

  // Reads the lock on every server and asks whether keyspace notifications are on (each within
  // --timeout), then subscribes. Returns what the servers held then.
  LockVerdict start();
  // The servers where keyspace notifications are off, or unknown (CONFIG GET refused or unanswered),
  // with why, a line each.
  const std::vector<std::string>& keyspace_off() const { return keyspace_off_; }
  // Runs until there are events (returned in order), STOP() says so, or DEADLINE passes.
  std::vector<LockEvent> next(const std::function<bool()>& stop, TimePoint deadline);
  std::size_t free_servers() const { return history_.free_servers(); }

 private:
  enum class NoteKind;
  struct Note;
  void on_event(const ChannelEvent& event);
  void push(std::size_t server, NoteKind kind);
  bool ready(std::size_t server) const;
  void apply(std::size_t server);
  void timers(TimePoint now);
  TimePoint next_timer() const;

  Network& network_;
  LockKeys keys_;
  LockHistory history_;
  std::vector<std::deque<std::shared_ptr<Note>>> notes_;
  std::vector<std::string> keyspace_channels_;  // empty where not subscribed
  std::vector<std::string> keyspace_off_;
  std::vector<TimePoint> expiry_read_;  // the expiry a read was last sent for
  TimePoint next_poll_ = kNever;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace redlock
