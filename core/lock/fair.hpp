// The pure parts of `--fair` (see ARCHITECTURE.md, "Fair hand-off"): the ticket a waiter keeps
// from the tickets its join drew on each server, its place in line, when a hand-off the queues
// hold up degrades to the unfair path, and the queue as `status` shows it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/util/clock.hpp"

namespace redlock {

// The ticket of a join whose servers answered TICKETS (0: that server did not queue it), with a
// quorum of NEEDED: the one a quorum agrees on with none higher (stored on a quorum already), else
// the highest, which must then be written back on a quorum (WRITE_BACK). Nothing when no server
// queued it.
struct TicketChoice {
  std::int64_t ticket = 0;
  bool write_back = false;
};
std::optional<TicketChoice> choose_ticket(const std::vector<std::int64_t>& tickets, std::size_t needed);

// A waiter's place in line as the servers report it (how many are queued ahead; negative:
// unknown): the median of those known, nothing when none is.
std::optional<std::int64_t> queue_place(std::vector<std::int64_t> places);

// When a waiter skips the queue's order: once it has been held up by the queues alone (the lock
// free on a quorum, another waiter at the head) by the same heads, without a break, for one
// heartbeat TTL. The heads then disagree between servers, or the head does not take its turn; the
// unfair path settles that hand-off. An attempt that finds a holder, or a head not named before in
// this hold-up (the queue moved on: another hand-off), begins the count anew; one that names
// fewer heads (a server held for a moment by a split vote) does not.
class HandOffWatch {
 public:
  explicit HandOffWatch(Duration heartbeat) : heartbeat_(heartbeat) {}
  // After an attempt at NOW: whether the queues alone held it up, and by which heads (the ids the
  // servers named, in server order). Returns whether the next attempt skips the queue's order.
  bool observe(TimePoint now, bool held_up_by_queue, const std::vector<std::string>& heads = {});
  bool barging() const { return barging_; }

 private:
  Duration heartbeat_;
  std::optional<TimePoint> held_since_;
  std::vector<std::string> heads_;
  bool barging_ = false;
};

// One waiter of the queue as one server holds it.
struct QueueEntry {
  std::string id;
  std::int64_t ticket = 0;
  std::string owner;
};
// A waiter of the queue as `status` shows it, position 0 the next to be served.
struct QueuedPlace {
  std::string owner;
  std::int64_t ticket = 0;
  std::size_t position = 0;
};
// The queue from each server's (live waiters), merged: a waiter once, with the highest ticket seen,
// ordered by ticket then id (the servers' own order).
std::vector<QueuedPlace> merge_queue(const std::vector<std::vector<QueueEntry>>& per_server);

}  // namespace redlock
