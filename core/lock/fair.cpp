#include "core/lock/fair.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace redlock {

std::optional<TicketChoice> choose_ticket(const std::vector<std::int64_t>& tickets, std::size_t needed) {
  std::int64_t highest = 0;
  for (auto t : tickets) highest = std::max(highest, t);
  if (highest <= 0) return std::nullopt;
  // The highest is stored on a quorum when a quorum drew it: nothing to write back.
  const auto same = static_cast<std::size_t>(std::count(tickets.begin(), tickets.end(), highest));
  return TicketChoice{highest, same < needed};
}

std::optional<std::int64_t> queue_place(std::vector<std::int64_t> places) {
  places.erase(std::remove_if(places.begin(), places.end(), [](std::int64_t p) { return p < 0; }), places.end());
  if (places.empty()) return std::nullopt;
  auto middle = places.begin() + static_cast<std::ptrdiff_t>(places.size() / 2);
  std::nth_element(places.begin(), middle, places.end());
  return *middle;
}

bool HandOffWatch::observe(TimePoint now, bool held_up_by_queue, const std::vector<std::string>& heads) {
  if (!held_up_by_queue) {
    held_since_.reset();
    barging_ = false;
    return false;
  }
  // A head not seen in this hold-up is another hand-off (the queue moved on); fewer heads are the
  // same one (a server held for a moment by a split vote names none).
  const bool other = std::any_of(heads.begin(), heads.end(), [&](const std::string& h) {
    return std::find(heads_.begin(), heads_.end(), h) == heads_.end();
  });
  if (!held_since_ || other) {
    held_since_ = now;
    heads_.clear();
  }
  for (const auto& h : heads) {
    if (std::find(heads_.begin(), heads_.end(), h) == heads_.end()) heads_.push_back(h);
  }
  barging_ = now - *held_since_ >= heartbeat_;
  return barging_;
}

std::vector<QueuedPlace> merge_queue(const std::vector<std::vector<QueueEntry>>& per_server) {
  std::map<std::string, std::pair<std::int64_t, std::string>> seen;
  for (const auto& queue : per_server) {
    for (const auto& e : queue) {
      auto [at, fresh] = seen.try_emplace(e.id, e.ticket, e.owner);
      if (!fresh && e.ticket > at->second.first) at->second.first = e.ticket;
    }
  }
  std::vector<std::pair<std::int64_t, std::string>> order;
  for (const auto& [id, v] : seen) order.emplace_back(v.first, id);
  std::sort(order.begin(), order.end());
  std::vector<QueuedPlace> places;
  for (const auto& [ticket, id] : order) places.push_back({seen[id].second, ticket, places.size()});
  return places;
}

}  // namespace redlock
