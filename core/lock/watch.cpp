#include "core/lock/watch.hpp"

#include <algorithm>
#include <utility>

#include "core/lock/scripts.hpp"

namespace redlock {

namespace {

// A "del" on the keyspace channel comes just before the release script's own announcement, which
// says whether it was a release or a retraction: it is held back this long for it.
constexpr Duration kExplainWindow = std::chrono::milliseconds(50);
// Every server's view is read this often, for what no announcement told.
constexpr Duration kPoll = std::chrono::seconds(1);
// A server's lock is read this long after it should have expired.
constexpr Duration kExpiryMargin = std::chrono::milliseconds(5);
// Announcements queued per server at most (a flood is read once more instead).
constexpr std::size_t kMaxNotes = 64;
constexpr std::size_t kMaxTold = 64;

bool compatible(const std::optional<std::string>& a, const std::optional<std::string>& b) {
  return !a || !b || *a == *b;
}

// Keyspace notifications carry what watch needs: K (keyspace channel) and x (expired), which A includes.
bool keyspace_on(const std::string& flags) {
  return flags.find('K') != std::string::npos &&
         (flags.find('x') != std::string::npos || flags.find('A') != std::string::npos);
}

}  // namespace

std::string_view event_name(LockEventKind kind) {
  switch (kind) {
    case LockEventKind::Acquired:
      return "acquired";
    case LockEventKind::Extended:
      return "extended";
    case LockEventKind::Released:
      return "released";
    case LockEventKind::Expired:
      return "expired";
    case LockEventKind::Retracted:
      return "retracted";
  }
  return "unknown";
}

LockHistory::View LockHistory::view_of(const LockReading& reading, TimePoint sent) {
  View v;
  v.held = lock_like(reading.type, reading.ttl_ms) && reading.value;
  if (!v.held) return v;
  v.token = reading.value;
  v.owner_record = reading.owner;
  v.fence = reading.fence;
  // The server read the TTL after we sent: it cannot expire sooner than this.
  if (reading.ttl_ms >= 0) v.expires = sent + std::chrono::milliseconds(reading.ttl_ms);
  return v;
}

void LockHistory::start(const std::vector<std::optional<LockReading>>& readings, TimePoint sent) {
  for (std::size_t i = 0; i < readings.size() && i < views_.size(); ++i) {
    if (readings[i]) views_[i] = view_of(*readings[i], sent);
  }
  announced_ = judge_lock(readings).token;
}

void LockHistory::read(std::size_t server, const LockReading& reading, TimePoint sent, TimePoint now, bool extended) {
  View seen = view_of(reading, sent);
  const View& was = views_[server];
  const bool other = was.held && was.token && seen.token && *was.token != *seen.token;
  if (was.held && (!seen.held || other))
    depart(server, now >= was.expires ? LockEventKind::Expired : LockEventKind::Released, now, false);
  const bool arrival = seen.held && !views_[server].held;
  views_[server] = std::move(seen);
  if (arrival) return arrive(server, now);
  if (!extended || !views_[server].held) return;
  const View& v = views_[server];
  LockEvent e{LockEventKind::Extended, v.token, v.owner_record, v.fence, std::nullopt, server};
  if (v.expires != kNever) e.ttl_ms = std::chrono::duration_cast<Millis>(v.expires - now).count();
  tell(std::move(e), now);
}

void LockHistory::ended(std::size_t server, LockEventKind kind, TimePoint now, bool by_holder) {
  if (views_[server].held || kind == LockEventKind::Retracted) depart(server, kind, now, by_holder);
}

void LockHistory::arrive(std::size_t server, TimePoint now) {
  const View& v = views_[server];
  if (!v.token || v.token == announced_) return;
  std::size_t holding = 0;
  LockEvent e{LockEventKind::Acquired, v.token, v.owner_record, 0, std::nullopt, server};
  TimePoint expires = kNever;
  for (const auto& other : views_) {
    if (!other.held || other.token != v.token) continue;
    ++holding;
    e.fence = std::max(e.fence, other.fence);
    if (!e.owner_record) e.owner_record = other.owner_record;
    if (other.expires != kNever) expires = std::min(expires, other.expires);
  }
  if (holding < quorum_size(views_.size())) return;
  if (expires != kNever) e.ttl_ms = std::chrono::duration_cast<Millis>(expires - now).count();
  announced_ = v.token;
  tell(std::move(e), now);
}

std::size_t LockHistory::announced_on(TimePoint now) const {
  return static_cast<std::size_t>(std::count_if(views_.begin(), views_.end(), [&](const View& v) {
    return v.held && announced_ && v.token == announced_ && v.expires > now;
  }));
}

void LockHistory::depart(std::size_t server, LockEventKind kind, TimePoint now, bool by_holder) {
  View gone = std::move(views_[server]);
  views_[server] = View{};
  LockEvent e{kind, gone.token, gone.owner_record, gone.fence, std::nullopt, server};
  // Only the announced holder's end is news; another token's (a minority's), or one server's while
  // the holder still holds on a quorum, only joins a report.
  const bool holder =
      gone.token && gone.token == announced_ && (by_holder || announced_on(now) < quorum_size(views_.size()));
  if (holder) announced_.reset();
  tell(std::move(e), now, !holder && kind != LockEventKind::Retracted);
}

void LockHistory::tell(LockEvent event, TimePoint now, bool only_merge) {
  while (!told_.empty() && (now - told_.front().at > kSameEvent || told_.size() > kMaxTold)) told_.pop_front();
  // Acquired, and the end of the announced holder, are told once by construction; any other report
  // of an event already told comes from a server that has not reported it yet.
  const bool once = event.kind == LockEventKind::Acquired ||
                    (!only_merge && (event.kind == LockEventKind::Released || event.kind == LockEventKind::Expired));
  for (auto& t : told_) {
    if (once || t.kind != event.kind || !compatible(t.token, event.token) || t.servers[event.server]) continue;
    t.servers[event.server] = true;
    return;
  }
  if (only_merge) return;
  Told t{event.kind, event.token, std::vector<bool>(views_.size(), false), now};
  t.servers[event.server] = true;
  told_.push_back(std::move(t));
  out_.push_back(std::move(event));
}

std::vector<LockEvent> LockHistory::take() {
  return std::exchange(out_, {});
}

std::size_t LockHistory::free_servers() const {
  return static_cast<std::size_t>(std::count_if(views_.begin(), views_.end(), [](const View& v) { return !v.held; }));
}

enum class LockWatch::NoteKind { Read, ReadExtended, Released, Retracted, Expired, Deleted };

// An announcement, or a poll, waiting its turn on its server (and for the read it needs).
struct LockWatch::Note {
  NoteKind kind;
  TimePoint at;
  std::optional<Result> read;
};

LockWatch::LockWatch(Network& network, LockKeys keys)
    : network_(network),
      keys_(std::move(keys)),
      history_(network.size()),
      notes_(network.size()),
      keyspace_channels_(network.size()),
      expiry_read_(network.size(), kNever) {}

LockWatch::~LockWatch() {
  *alive_ = false;
  network_.unsubscribe();
}

LockVerdict LockWatch::start() {
  const std::size_t n = network_.size();
  std::vector<std::optional<Result>> reads(n), configs(n);
  std::size_t answered = 0;
  const TimePoint sent = network_.now();
  for (std::size_t i = 0; i < n; ++i) {
    auto keep = [&answered, alive = alive_](std::optional<Result>& into) {
      return [&answered, &into, alive](Result r) {
        if (!*alive) return;
        into = std::move(r);
        ++answered;
      };
    };
    network_.send(i, Request::eval(kStatusScript, {keys_.lock, keys_.owner, keys_.fence}, {}), keep(reads[i]));
    // Asked of the master that would send the lock's notifications (a Cluster member's owning master).
    Request config = Request::command({"CONFIG", "GET", "notify-keyspace-events"});
    config.route_key = keys_.lock;
    network_.send(i, std::move(config), keep(configs[i]));
  }
  network_.run_until([&] { return answered == 2 * n; }, kNever);
  check_duplicates(reads);
  std::vector<std::optional<LockReading>> readings(n);
  std::vector<std::vector<std::string>> channels(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (reads[i]->ok() && network_.role(i) != "replica") readings[i] = parse_lock_reading(reads[i]->reply);
    const Result& c = *configs[i];
    const bool on = c.ok() && c.reply.type == Reply::Type::Array && c.reply.elements.size() == 2 &&
                    keyspace_on(c.reply.elements[1].str);
    channels[i] = {keys_.channel};
    if (on) {
      keyspace_channels_[i] = "__keyspace@" + std::to_string(network_.database(i)) + "__:" + keys_.lock;
      channels[i].push_back(keyspace_channels_[i]);
    } else {
      keyspace_off_.push_back(network_.describe(i) + (c.ok() ? ": notify-keyspace-events has no K and x"
                                                             : ": CONFIG GET notify-keyspace-events: " + c.error));
    }
  }
  history_.start(readings, sent);
  network_.subscribe_channels(std::move(channels), [this, alive = alive_](const ChannelEvent& event) {
    if (*alive) on_event(event);
  });
  next_poll_ = network_.now() + kPoll;
  return judge_lock(readings);
}

void LockWatch::on_event(const ChannelEvent& event) {
  const std::size_t server = event.server;
  const std::string_view message = event.text;
  const bool told = event.kind == ChannelEvent::Kind::Message;
  auto starts = [&](std::string_view word) { return told && message.starts_with(word); };
  if (event.channel == keys_.channel) {
    if (event.kind == ChannelEvent::Kind::Subscribed) push(server, NoteKind::Read);
    if (told && (message == "acquired" || message == "joined")) push(server, NoteKind::Read);
    if (told && message == "extended") push(server, NoteKind::ReadExtended);
    if (starts("released")) push(server, NoteKind::Released);
    if (starts("retracted")) push(server, NoteKind::Retracted);
    return;
  }
  if (event.channel != keyspace_channels_[server]) return;
  if (event.kind == ChannelEvent::Kind::Refused) keyspace_channels_[server].clear();
  if (!told) return;
  if (message == "expired") push(server, NoteKind::Expired);
  if (message == "del") push(server, NoteKind::Deleted);
  if (message == "set") push(server, NoteKind::Read);
}

void LockWatch::push(std::size_t server, NoteKind kind) {
  auto& queue = notes_[server];
  if (queue.size() >= kMaxNotes) return;  // the next poll reads what the flood left
  auto note = std::make_shared<Note>(Note{kind, network_.now(), std::nullopt});
  queue.push_back(note);
  if (kind != NoteKind::Read && kind != NoteKind::ReadExtended) return;
  network_.send(server, Request::eval(kStatusScript, {keys_.lock, keys_.owner, keys_.fence}, {}),
                [note](Result r) { note->read = std::move(r); });
}

bool LockWatch::ready(std::size_t server) const {
  const auto& queue = notes_[server];
  if (queue.empty()) return false;
  const Note& note = *queue.front();
  switch (note.kind) {
    case NoteKind::Read:
    case NoteKind::ReadExtended:
      return note.read.has_value();
    case NoteKind::Deleted:
      return queue.size() > 1 || network_.now() >= note.at + kExplainWindow;
    default:
      return true;
  }
}

void LockWatch::apply(std::size_t server) {
  auto& queue = notes_[server];
  const Note note = *queue.front();
  queue.pop_front();
  const TimePoint now = network_.now();
  switch (note.kind) {
    case NoteKind::Read:
    case NoteKind::ReadExtended: {
      auto reading =
          note.read->ok() && network_.role(server) != "replica" ? parse_lock_reading(note.read->reply) : std::nullopt;
      if (reading) history_.read(server, *reading, note.at, now, note.kind == NoteKind::ReadExtended);
      break;
    }
    case NoteKind::Released:
      return history_.ended(server, LockEventKind::Released, now, true);
    case NoteKind::Retracted:
      return history_.ended(server, LockEventKind::Retracted, now, true);
    case NoteKind::Expired:
      return history_.ended(server, LockEventKind::Expired, now, false);
    case NoteKind::Deleted: {
      // The release script deletes, then announces: its announcement says what the deletion was.
      const bool explained =
          !queue.empty() && (queue.front()->kind == NoteKind::Released || queue.front()->kind == NoteKind::Retracted);
      if (!explained) history_.ended(server, LockEventKind::Released, now, false);
      break;
    }
  }
}

void LockWatch::timers(TimePoint now) {
  const bool poll = now >= next_poll_;
  if (poll) next_poll_ = now + kPoll;
  for (std::size_t i = 0; i < notes_.size(); ++i) {
    const TimePoint expires = history_.expires(i);
    const bool expiry = expires != kNever && now >= expires + kExpiryMargin && expiry_read_[i] != expires;
    if (expiry) expiry_read_[i] = expires;
    if (poll || expiry) push(i, NoteKind::Read);
  }
}

TimePoint LockWatch::next_timer() const {
  TimePoint t = next_poll_;
  for (std::size_t i = 0; i < notes_.size(); ++i) {
    const TimePoint expires = history_.expires(i);
    if (expires != kNever && expiry_read_[i] != expires) t = std::min(t, expires + kExpiryMargin);
    if (!notes_[i].empty() && notes_[i].front()->kind == NoteKind::Deleted)
      t = std::min(t, notes_[i].front()->at + kExplainWindow);
  }
  return t;
}

std::vector<LockEvent> LockWatch::next(const std::function<bool()>& stop, TimePoint deadline) {
  for (;;) {
    for (std::size_t i = 0; i < notes_.size(); ++i) {
      while (ready(i)) apply(i);
    }
    std::vector<LockEvent> events = history_.take();
    const TimePoint now = network_.now();
    if (!events.empty() || stop() || now >= deadline) return events;
    timers(now);
    auto any_ready = [this] {
      for (std::size_t i = 0; i < notes_.size(); ++i) {
        if (ready(i)) return true;
      }
      return false;
    };
    network_.run_until([&] { return any_ready() || stop(); }, std::min(deadline, next_timer()));
  }
}

}  // namespace redlock
