#include "core/lock/shared.hpp"

#include <algorithm>
#include <map>

#include "core/lock/quorum.hpp"
#include "core/lock/round.hpp"
#include "core/lock/scripts.hpp"

namespace redlock {

std::optional<ReadersReading> parse_readers(const Reply& reply) {
  if (reply.type != Reply::Type::Array || reply.elements.size() != 2) return std::nullopt;
  const auto waiting = reply.elements[0].as_integer();
  if (!waiting || reply.elements[1].type != Reply::Type::Array) return std::nullopt;
  ReadersReading reading;
  reading.writers_waiting = static_cast<std::size_t>(std::max<std::int64_t>(0, *waiting));
  for (const Reply& r : reply.elements[1].elements) {
    if (r.type != Reply::Type::Array || r.elements.size() != 3 || !r.elements[1].as_integer()) return std::nullopt;
    ReaderView view{r.elements[0].str, *r.elements[1].as_integer(), std::nullopt};
    if (r.elements[2].type == Reply::Type::String) view.owner = r.elements[2].str;
    reading.readers.push_back(std::move(view));
  }
  return reading;
}

std::vector<ReaderView> quorum_readers(const std::vector<std::optional<ReadersReading>>& readings) {
  const std::size_t needed = quorum_size(readings.size());
  std::map<std::string, std::vector<const ReaderView*>> seen;
  for (const auto& r : readings) {
    if (!r) continue;
    for (const auto& view : r->readers) seen[view.token].push_back(&view);
  }
  std::vector<ReaderView> out;
  for (auto& [token, where] : seen) {
    if (where.size() < needed) continue;
    // The needed-th longest: a quorum holds the reader at least that long.
    std::sort(where.begin(), where.end(),
              [](const ReaderView* a, const ReaderView* b) { return a->ttl_ms > b->ttl_ms; });
    ReaderView view = *where[needed - 1];
    auto with_owner = std::find_if(where.begin(), where.end(), [](const ReaderView* v) { return v->owner; });
    view.owner = with_owner == where.end() ? std::nullopt : (*with_owner)->owner;
    if (view.owner) view.owner = parse_owner_record(*view.owner).owner;
    out.push_back(std::move(view));
  }
  std::sort(out.begin(), out.end(), [](const ReaderView& a, const ReaderView& b) { return a.ttl_ms > b.ttl_ms; });
  return out;
}

Shared::Shared(Redlock& redlock, const std::string& key) : redlock_(redlock), keys_(derive_reader_keys(key)) {}

SharedStatus Shared::status() {
  SharedStatus res;
  LockKeys writer_keys = keys_;
  writer_keys.reader = false;
  res.lock = redlock_.status(writer_keys);
  res.writer = res.lock.state == LockState::Held && res.lock.token != kSharedMarker;

  Network& network = redlock_.network();
  Round round(network, [&](std::size_t) {
    return Request::eval(kReadersScript, {keys_.readers, keys_.writers, keys_.reader_owners}, {});
  });
  network.run_until([&] { return round.complete(); }, kNever);
  check_duplicates(round.results());
  std::vector<std::optional<ReadersReading>> readings(network.size());
  res.tally.total = network.size();
  for (std::size_t i = 0; i < readings.size(); ++i) {
    const auto& r = round.results()[i];
    if (r && r->ok()) readings[i] = parse_readers(r->reply);
    if (readings[i]) {
      ++res.tally.yes;
      res.writers_waiting = std::max(res.writers_waiting, readings[i]->writers_waiting);
      res.servers.push_back(answer_report(network, i, *r, Answer::Probed, true));
    } else {
      ++res.tally.failed;
      res.servers.push_back(r && r->ok() ? unexpected_report(network, i, *r) : failure_report(network, i, r));
    }
  }
  res.readers = quorum_readers(readings);
  return res;
}

}  // namespace redlock
