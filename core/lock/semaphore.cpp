#include "core/lock/semaphore.hpp"

#include <algorithm>
#include <map>

#include "core/lock/faults.hpp"
#include "core/lock/quorum.hpp"
#include "core/lock/round.hpp"
#include "core/lock/scripts.hpp"
#include "core/lock/token.hpp"
#include "core/util/duration.hpp"
#include "core/util/error.hpp"
#include "core/util/text.hpp"

namespace redlock {

namespace {

std::uint64_t seed() {
  std::uint64_t s = 0;
  random_bytes(&s, sizeof s);
  return s;
}

// One server's part of a probe: "ok" with its latency, or its failure.
ServerReport probe_report(const Network& network, std::size_t server, const std::optional<Result>& r, bool readable) {
  if (r && readable) return answer_report(network, server, *r, Answer::Probed, true);
  return r && r->ok() ? unexpected_report(network, server, *r) : failure_report(network, server, r);
}

std::optional<std::string> text_of(const Reply& r) {
  if (r.type != Reply::Type::String) return std::nullopt;
  return r.str;
}

// Adds one server's answer to the views of every slot; false when it is not the probe's answer.
bool read_answer(const Reply& reply, std::size_t limit, const std::string& token, Probe& probe) {
  if (reply.type != Reply::Type::Array || reply.elements.size() != 1 + 4 * limit) return false;
  for (std::size_t s = 0; s < limit; ++s) {
    const Reply* slot = &reply.elements[1 + 4 * s];
    if (!slot[2].as_integer()) return false;
  }
  probe.limits.push_back(text_of(reply.elements[0]));
  for (std::size_t s = 0; s < limit; ++s) {
    const Reply* slot = &reply.elements[1 + 4 * s];
    SlotView& view = probe.slots[s];
    const auto value = text_of(slot[1]);
    if (slot[0].str == "none") {
      ++view.free;
      continue;
    }
    if (token.size() > 0 && value == token) ++view.with_token;
    view.busy_pttl.push_back(*slot[2].as_integer());
    view.records.push_back(text_of(slot[3]));
  }
  return true;
}

// The owner record most servers hold for a slot (none when none keeps one), as its owner's name.
std::optional<std::string> usual_owner(const std::vector<std::optional<std::string>>& records) {
  std::map<std::string, std::size_t> seen;
  for (const auto& r : records) {
    if (r) ++seen[*r];
  }
  auto most =
      std::max_element(seen.begin(), seen.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  if (most == seen.end()) return std::nullopt;
  return parse_owner_record(most->first).owner;
}

// Each server's report over every slot: a failure where one failed, else released where a slot was
// deleted, else what the last slot found. DELETED_ON counts the servers where a slot was deleted.
void merge_reports(std::vector<ServerReport>& into, const std::vector<ServerReport>& slot,
                   std::vector<bool>& deleted_on) {
  if (into.empty()) into = slot;
  deleted_on.resize(slot.size(), false);
  for (std::size_t i = 0; i < slot.size() && i < into.size(); ++i) {
    deleted_on[i] = deleted_on[i] || slot[i].result == Answer::Released;
    if (into[i].result == Answer::Failed) continue;
    if (slot[i].result == Answer::Failed || into[i].result != Answer::Released) into[i] = slot[i];
  }
}

}  // namespace

std::string limit_conflict(const std::string& key, const std::optional<std::string>& stored, std::size_t limit) {
  if (!stored || *stored == std::to_string(limit)) return {};
  return "semaphore limit conflict: " + key + " has limit " + *stored + ", asked " + std::to_string(limit);
}

Semaphore::Semaphore(Redlock& redlock, const std::string& key, std::size_t limit)
    : network_(redlock.network()),
      redlock_(redlock),
      // A negative control: one slot more than the limit, which the soak's checker must catch.
      keys_(derive_semaphore_keys(key,
                                  limit + (limit > 0 && faults::enabled(faults::Fault::SemaphoreExtraSlot) ? 1 : 0))),
      rng_(seed()) {}

Probe Semaphore::read(const std::string& token, bool quorum_enough) {
  std::vector<std::string> keys{keys_.limit};
  for (const auto& slot : keys_.slots) {
    keys.push_back(slot.lock);
    keys.push_back(slot.owner);
  }
  Round round(network_, [&](std::size_t) { return Request::eval(kProbeScript, keys, {}); });
  const std::size_t needed = quorum_size(network_.size());
  auto answered = [&] {
    return static_cast<std::size_t>(
        std::count_if(round.results().begin(), round.results().end(), [](const auto& r) { return r && r->ok(); }));
  };
  // The probe only chooses a slot (the slot's own quorum decides), so an acquire goes on with the
  // first quorum of answers rather than wait for a frozen server.
  network_.run_until([&] { return round.complete() || (quorum_enough && answered() >= needed); }, kNever);
  round.abandon();
  check_duplicates(round.results());

  Probe probe;
  probe.slots.resize(limit());
  probe.tally.total = network_.size();
  for (std::size_t i = 0; i < round.results().size(); ++i) {
    const auto& r = round.results()[i];
    const bool readable = r && r->ok() && read_answer(r->reply, limit(), token, probe);
    if (readable) {
      ++probe.tally.yes;
    } else if (r) {
      ++probe.tally.failed;
    }
    probe.servers.push_back(probe_report(network_, i, r, readable));
  }
  return probe;
}

Probe Semaphore::probe(const std::string& token) {
  Probe p = read(token, false);
  check_limit(p, false);
  return p;
}

void Semaphore::check_limit(const Probe& probe, bool store) {
  // Where a server answered without one, and where none answered (SET NX keeps what is there).
  std::vector<bool> unseen(probe.servers.size(), true);
  bool missing = false;
  std::size_t answer = 0;
  for (std::size_t i = 0; i < probe.servers.size(); ++i) {
    if (!probe.servers[i].ok) continue;
    const auto& stored = probe.limits[answer++];
    const auto conflict = limit() > 0 ? limit_conflict(keys_.key, stored, limit()) : std::string();
    if (!conflict.empty()) config_error(conflict);
    unseen[i] = !stored;
    missing = missing || !stored;
  }
  if (!store || !missing) return;
  // The first use, or a server restarted empty. Not waited for: the limit guards against a
  // misconfiguration, while safety comes from the slots (callers with different limits share the
  // first slots, so there are never more holders than the largest limit asked for).
  const std::string limit_text = std::to_string(limit());
  Round(network_, unseen, [&](std::size_t) {
    return Request::command({"SET", keys_.limit, limit_text, "NX"});
  }).abandon();
}

std::optional<std::size_t> Semaphore::stored_limit(const Probe& probe) {
  std::map<std::string, std::size_t> seen;
  for (const auto& l : probe.limits) {
    if (l) ++seen[*l];
  }
  auto most =
      std::max_element(seen.begin(), seen.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  if (most == seen.end()) return std::nullopt;
  try {
    const auto value = std::stoull(most->first);
    if (value >= 1 && value <= kMaxLimit) return value;
  } catch (const std::exception&) {
  }
  config_error("the stored semaphore limit '" + most->first + "' is not a number from 1 to " +
               std::to_string(kMaxLimit));
}

std::optional<std::size_t> Semaphore::quorum_limit(const Probe& probe) {
  const auto limit = stored_limit(probe);
  if (!limit) return std::nullopt;
  const std::string text = std::to_string(*limit);
  const auto holding = static_cast<std::size_t>(
      std::count_if(probe.limits.begin(), probe.limits.end(), [&](const auto& l) { return l == text; }));
  if (holding < probe.tally.needed()) return std::nullopt;
  return limit;
}

std::optional<std::size_t> Semaphore::find(const std::string& token, Probe* read) {
  const Probe p = probe(token);
  if (read) *read = p;
  std::optional<std::size_t> found;
  for (std::size_t s = 0; s < p.slots.size(); ++s) {
    if (p.slots[s].with_token > 0 && (!found || p.slots[s].with_token > p.slots[*found].with_token)) found = s;
  }
  return found;
}

SemaphoreStatus Semaphore::status() {
  SemaphoreStatus res;
  res.probe = probe();
  res.stored_limit = stored_limit(res.probe);
  for (std::size_t s = 0; s < limit(); ++s) res.slots.push_back({s, redlock_.status(keys_.slots[s])});
  return res;
}

ReleaseResult Semaphore::force_release() {
  // Every slot in use: those of a larger stored limit too, or its holders would outlast it.
  const std::size_t stored = stored_limit(read({}, false)).value_or(0);
  const SemaphoreKeys keys = derive_semaphore_keys(keys_.key, std::max(stored, limit()));
  ReleaseResult all;
  all.released = true;
  std::vector<bool> deleted_on;  // the servers where some slot was deleted
  for (const auto& slot : keys.slots) {
    ReleaseResult r = redlock_.release(slot, "", true);
    all.elapsed += r.elapsed;
    all.released = all.released && r.released;
    all.no_quorum = all.no_quorum || r.no_quorum;
    all.not_a_lock = all.not_a_lock || r.not_a_lock;
    all.tally = r.tally;
    merge_reports(all.servers, r.servers, deleted_on);
    if (!r.released && all.message.empty()) all.message = slot.lock + ": " + r.message;
  }
  all.deleted = static_cast<std::size_t>(std::count(deleted_on.begin(), deleted_on.end(), true));
  // The limit goes only once every slot is free: it then may change.
  if (!all.released) return all;
  Round round(network_, [&](std::size_t) { return Request::command({"DEL", keys_.limit}); });
  network_.run_until([&] { return round.complete(); }, kNever);
  return all;
}

AcquireResult Semaphore::acquire(const LockSpec& spec, const WaitOptions& wait) {
  return redlock_.acquire_with(
      keys_.channel, spec.ttl, wait,
      [&](const std::vector<std::string>*) {
        return faults::enabled(faults::Fault::SemaphoreMajority) ? majority_attempt(spec) : attempt(spec);
      },
      true);
}

AcquireResult Semaphore::attempt(const LockSpec& spec) {
  const Probe p = read(spec.token, true);
  if (p.tally.yes < p.tally.needed()) {
    AcquireResult res;
    res.outcome = AcquireOutcome::NoQuorum;
    res.token = spec.token;
    res.ttl = spec.ttl;
    res.tally = p.tally;
    res.servers = p.servers;
    res.message = "only " + servers_text(p.tally.yes, p.tally.total) + " answered the probe of the slots; " +
                  std::to_string(p.tally.needed()) + " must answer";
    return res;
  }
  check_limit(p, true);
  std::optional<AcquireResult> last;
  for (std::size_t s : candidates(p)) {
    LockSpec slot_spec = spec;
    slot_spec.keys = keys_.slots[s];
    AcquireResult res = redlock_.acquire(slot_spec, WaitOptions{});
    slot_ = s;
    // Busy: another took it since the probe (or the vote split); the next free slot may do.
    if (res.outcome != AcquireOutcome::Busy) return res;
    last = std::move(res);
  }
  return last ? *last : all_busy(spec, p);
}

std::vector<std::size_t> Semaphore::candidates(const Probe& probe) {
  std::vector<std::size_t> order;
  for (std::size_t s = 0; s < limit(); ++s) {
    if (probe.slots[s].with_token > 0) order.push_back(s);  // ours already somewhere: taken again first
  }
  // From a random slot on, so that contenders spread over the free slots rather than all race for the first.
  const std::size_t start = std::uniform_int_distribution<std::size_t>(0, limit() - 1)(rng_);
  for (std::size_t k = 0; k < limit(); ++k) {
    const std::size_t s = (start + k) % limit();
    if (probe.slots[s].with_token == 0 && probe.slots[s].free >= probe.tally.needed()) order.push_back(s);
  }
  return order;
}

AcquireResult Semaphore::all_busy(const LockSpec& spec, const Probe& probe) const {
  AcquireResult res;
  res.outcome = AcquireOutcome::Busy;
  res.token = spec.token;
  res.ttl = spec.ttl;
  res.tally = probe.tally;
  res.tally.no = res.tally.yes;  // every slot was busy on the servers that answered
  res.tally.yes = 0;
  res.servers = probe.servers;
  for (auto& s : res.servers) {
    if (s.ok) s.result = Answer::Busy;
    s.ok = false;
  }
  // The soonest a slot could be free on a quorum if nobody releases it, and who holds that slot.
  for (const auto& view : probe.slots) {
    auto free_in = quorum_free_in(probe.tally.total, view.free, view.busy_pttl);
    res.holder_announces =
        res.holder_announces || std::any_of(view.records.begin(), view.records.end(), [](const auto& r) { return r; });
    if (!free_in || (res.holder_free_in && *res.holder_free_in <= *free_in)) continue;
    res.holder_free_in = free_in;
    res.holder = Holder{usual_owner(view.records), free_in};
  }
  if (!res.holder) res.holder = Holder{};
  using Tenths = std::chrono::duration<std::int64_t, std::deci>;
  res.message = "all " + std::to_string(limit()) + " slots held" +
                (res.holder_free_in
                     ? ", the first may be free in " + format_duration(std::chrono::ceil<Tenths>(*res.holder_free_in))
                     : "") +
                " (busy on " + servers_text(res.tally.no, res.tally.total) +
                (res.tally.pending() > 0 ? "; " + not_waited_text(res.tally) : "") + ")";
  return res;
}

// THE UNSAFE DESIGN, kept only as a negative control (REDLOCK_FAULT=semaphore-majority in
// redlock-faulty): every server takes the first slot free there, and a simple majority of servers
// taking any slot counts as acquired, however the slots differ between servers. 3 servers, K = 2:
// holders on {A,B}, {B,C} and {A,C} each find a place on both of theirs, and all three hold. The
// holder's slot is the one most of its servers took: `run` renews that one, and releases it and its
// places in the other slots. A failed attempt gives back whatever it took, in every slot.
AcquireResult Semaphore::majority_attempt(const LockSpec& spec) {
  std::vector<std::string> keys;
  for (const auto& slot : keys_.slots) {
    keys.insert(keys.end(), {slot.lock, slot.owner, slot.fence});
  }
  const std::string ttls = ms_count(spec.ttl) + " " + ms_count(spec.fence_ttl);
  Round round(network_, [&](std::size_t) { return Request::eval(kMajorityScript, keys, {spec.token, ttls, ""}); });
  network_.run_until([&] { return round.complete(); }, kNever);
  round.abandon();
  AcquireResult res = majority_outcome(spec, round);
  if (res.outcome != AcquireOutcome::Acquired && res.tally.yes > 0) {
    for (const auto& slot : keys_.slots) redlock_.release(slot, spec.token, false, Redlock::ReleaseWait::Outcome);
  }
  return res;
}

void release_majority_places(Redlock& redlock, const LockKeys& slot, std::size_t limit, const std::string& token) {
  const std::string prefix = slot.lock.substr(0, slot.lock.rfind(':') + 1);  // "{KEY}:redlock:slot:"
  for (std::size_t i = 0; i < limit; ++i) {
    LockKeys other = derive_keys(prefix + std::to_string(i));
    other.channel = slot.channel;
    if (other.lock != slot.lock) redlock.release(other, token, false, Redlock::ReleaseWait::Outcome);
  }
}

AcquireResult Semaphore::majority_outcome(const LockSpec& spec, const Round& round) {
  AcquireResult res;
  res.token = spec.token;
  res.ttl = spec.ttl;
  res.tally.total = network_.size();
  std::map<std::size_t, std::size_t> takers;
  std::map<std::size_t, std::int64_t> fences;
  for (std::size_t i = 0; i < round.results().size(); ++i) {
    const auto& r = round.results()[i];
    const bool readable = r && r->ok() && r->reply.type == Reply::Type::Array && r->reply.elements.size() == 2 &&
                          r->reply.elements[0].as_integer() && r->reply.elements[1].as_integer();
    ServerReport rep = probe_report(network_, i, r, readable);
    const std::int64_t slot = readable ? *r->reply.elements[0].as_integer() : -1;
    if (readable && slot >= 0 && static_cast<std::size_t>(slot) < limit()) {
      ++res.tally.yes;
      const auto s = static_cast<std::size_t>(slot);
      ++takers[s];
      fences[s] = std::max(fences[s], *r->reply.elements[1].as_integer());
      rep.result = Answer::Locked;
    } else if (readable) {
      ++res.tally.no;
      rep.result = Answer::Busy;
      rep.ok = false;
    } else {
      ++res.tally.failed;
    }
    res.servers.push_back(std::move(rep));
  }
  const Duration took = network_.now() - round.started();
  if (res.tally.won() && validity(spec.ttl, took, spec.drift) > spec.min_validity) {
    slot_ = std::max_element(takers.begin(), takers.end(), [](const auto& a, const auto& b) {
              return a.second < b.second;
            })->first;
    res.outcome = AcquireOutcome::Acquired;
    res.fence = fences[slot_];
    res.taken_at = network_.now();
    res.valid_until = round.started() + spec.ttl - drift_allowance(spec.ttl, spec.drift);
    res.validity = res.valid_until - res.taken_at;
    return res;
  }
  res.outcome = res.tally.unreachable() ? AcquireOutcome::NoQuorum : AcquireOutcome::Busy;
  res.holder_announces = true;  // the holders' releases wake the waiters
  res.message = "a place on only " + servers_text(res.tally.yes, res.tally.total) + " (semaphore-majority)";
  return res;
}

}  // namespace redlock
