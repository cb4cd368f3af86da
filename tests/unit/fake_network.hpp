// An in-memory stand-in for N Redis servers, on virtual time, for unit tests of the lock logic.
// Each server runs our scripts' semantics on a map of keys with expiries; a server can be slow,
// frozen (never answers: the request times out), down (refuses at once) or reply with errors.
#pragma once

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "core/lock/scripts.hpp"
#include "core/net/network.hpp"

namespace redlock::test {

// Lists of server indexes in tests: for (std::size_t i : Ids{0, 2, 4}).
using Ids = std::initializer_list<std::size_t>;

class FakeNetwork final : public Network {
 public:
  struct Entry {
    std::string value;
    std::string type = "string";
    TimePoint expires = kNever;  // kNever: no expiry
  };
  struct Server {
    Duration latency = std::chrono::milliseconds(1);
    bool frozen = false;
    bool down = false;
    bool duplicate = false;  // answers as the transport does for a second URL of one server
    Duration lookup{};       // resolving the server's name delays its first requests this long
    std::optional<TimePoint> resolving_since;
    std::string run_id;
    std::string role = "master";   // what the transport would have read from ROLE
    std::vector<Request> backlog;  // what a frozen server will run when it thaws
    std::map<std::string, Entry> data;
    // The shared mode's sorted sets (readers, waiting writers): member -> expiry, on virtual time.
    std::map<std::string, std::map<std::string, TimePoint>> zsets;
    std::vector<std::string> log;                 // script names (or command names), in arrival order
    std::vector<std::string> nodes;               // beside log: each request's Request::node
    bool cluster = false;                         // answers Network::cluster() as a Cluster member would
    bool sentinel = false;                        // answers Network::fails_over() as a Sentinel member would
    std::vector<std::vector<std::string>> argvs;  // beside log: each request's argv
    std::vector<bool> replicated;                 // beside log: whether each request was a vote that WAIT confirms
    std::size_t publishes = 0;
    std::vector<std::string> announced;  // what was published, in order
    // The server's wall clock, as the distance from virtual time zero to the epoch: fencing
    // counters expire and restart from it. None: TIME is refused (counters from 1, never expiring).
    std::optional<Duration> wall;
    // The waiters' queues (acquire.lua's sorted sets), by key, in arrival order.
    std::map<std::string, std::vector<std::string>> queues;
    // Plain commands answered as given, by their words joined with spaces ("SENTINEL CKQUORUM m1"),
    // or for one node of a Cluster member ("@127.0.0.1:7000 SCAN 0 MATCH * COUNT 1000").
    std::map<std::string, Result> answers;
  };

  explicit FakeNetwork(std::size_t n, Duration timeout = std::chrono::milliseconds(100)) : timeout_(timeout) {
    servers.resize(n);
    for (std::size_t i = 0; i < n; ++i) servers[i].run_id = "run" + std::to_string(i);
  }

  std::vector<Server> servers;

  std::size_t size() const override { return servers.size(); }
  TimePoint now() const override { return now_; }
  std::string describe(std::size_t i) const override { return "redis://fake:" + std::to_string(7000 + i); }
  std::string role(std::size_t i) const override { return servers[i].role; }
  bool cluster(std::size_t i) const override { return servers[i].cluster; }
  bool fails_over(std::size_t i) const override { return servers[i].cluster || servers[i].sentinel; }
  void flush(TimePoint) override {}

  bool resolving() const override {
    return std::any_of(servers.begin(), servers.end(), [this](const Server& s) {
      return s.resolving_since && now_ < *s.resolving_since + std::min(s.lookup, timeout_);
    });
  }

  void send(std::size_t i, Request request, ResultCallback done) override {
    Server& s = servers[i];
    TimePoint sent = now_;
    ++sent_;
    if (!s.resolving_since) s.resolving_since = now_;
    const TimePoint resolved = std::max(now_, *s.resolving_since + s.lookup);
    if (s.lookup >= timeout_) {  // the connect, lookup included, times out
      schedule(std::max(now_, *s.resolving_since + timeout_),
               [done, sent, this] { done(failure(Failure::Timeout, "connect timed out after 100ms", sent)); });
      return;
    }
    if (s.duplicate) {
      schedule(std::max(resolved, now_ + s.latency),
               [done, sent, this] { done(failure(Failure::Duplicate, "same server twice", sent)); });
      return;
    }
    if (s.down) {
      schedule(resolved, [done, sent, this] { done(failure(Failure::Connect, "connect: Connection refused", sent)); });
      return;
    }
    if (s.frozen) {
      // The request sits in the frozen server's socket buffer: it runs if the server thaws.
      s.backlog.push_back(request);
      schedule(now_ + timeout_,
               [done, sent, this] { done(failure(Failure::Timeout, "no answer within 100ms", sent)); });
      return;
    }
    // The script runs halfway through the round trip; the answer arrives after the full one.
    schedule(now_ + s.latency / 2, [this, i, request, done, sent] {
      Result r = execute(i, request);
      schedule(sent + servers[i].latency, [this, r, done, sent]() mutable {
        r.latency = now_ - sent;
        done(std::move(r));
      });
    });
  }

  void run_until(const std::function<bool()>& done, TimePoint deadline) override {
    for (;;) {
      if (done()) return;
      if (events_.empty() || events_.top().at > deadline) {
        if (deadline != kNever) now_ = std::max(now_, deadline);
        return;
      }
      Event e = events_.top();
      events_.pop();
      now_ = std::max(now_, e.at);
      e.run();
    }
  }

  void subscribe(const std::string& channel, ChannelCallback on_event) override {
    channel_ = channel;
    on_message_ = std::move(on_event);
    if (refuse_subscribe) return;
    for (std::size_t i = 0; i < servers.size(); ++i) {
      if (servers[i].down || servers[i].frozen) continue;
      schedule(now_ + servers[i].latency, [this, i] {
        ++subscribed_;
        if (on_message_) on_message_(ChannelEvent{ChannelEvent::Kind::Subscribed, i, channel_, {}});
      });
    }
  }
  std::size_t subscribed() const override { return subscribed_; }
  void unsubscribe() override {
    on_message_ = nullptr;
    subscribed_ = 0;
    ++unsubscribes;
  }
  std::size_t unsubscribes = 0;

  // Lets a frozen server run what was queued for it (the replies go nowhere: they timed out).
  void thaw(std::size_t i) {
    servers[i].frozen = false;
    auto backlog = std::move(servers[i].backlog);
    for (auto& r : backlog) execute(i, r);
  }

  // Runs whatever is scheduled up to T.
  void advance(Duration d) {
    run_until([] { return false; }, now_ + d);
  }

  std::size_t requests_sent() const { return sent_; }

  // Runs FN at virtual time AT (from inside run_until).
  void at(TimePoint t, std::function<void()> fn) { schedule(t, std::move(fn)); }
  // Another client releases KEY on every server and announces it on CHANNEL (empty: silently,
  // as clients without wake-ups do).
  void release_everywhere(const std::string& key, const std::string& channel) {
    for (std::size_t i = 0; i < servers.size(); ++i) {
      if (servers[i].data.erase(key) && !channel.empty()) publish(i, "released 1");
    }
  }
  // Another client's MESSAGE on the lock's channel, from every server.
  void announce_everywhere(const std::string& message) {
    for (std::size_t i = 0; i < servers.size(); ++i) publish(i, message);
  }
  // Another client's MESSAGE on the lock's channel, from server I alone.
  void announce(std::size_t i, const std::string& message) { publish(i, message); }
  // Subscriptions are refused (an ACL without SUBSCRIBE): waiters must poll.
  bool refuse_subscribe = false;

  // What server I holds for KEY now (nothing when absent or expired).
  std::optional<std::string> value(std::size_t i, const std::string& key) {
    auto* e = find(i, key);
    if (!e) return std::nullopt;
    return e->value;
  }
  void set(std::size_t i, const std::string& key, const std::string& value, Duration ttl) {
    servers[i].data[key] = Entry{value, "string", now_ + ttl};
  }
  // How long server I still keeps KEY (ms), -1 without an expiry, -2 when absent.
  std::int64_t ttl_ms(std::size_t i, const std::string& key) { return pttl(i, key); }

 private:
  struct Event {
    TimePoint at;
    std::uint64_t seq;
    std::function<void()> run;
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };

  void schedule(TimePoint at, std::function<void()> run) { events_.push(Event{at, seq_++, std::move(run)}); }

  Result failure(Failure f, std::string error, TimePoint sent) const {
    Result r;
    r.failure = f;
    r.error = std::move(error);
    r.latency = now_ - sent;
    return r;
  }

  Entry* find(std::size_t i, const std::string& key) {
    auto& data = servers[i].data;
    auto it = data.find(key);
    if (it == data.end()) return nullptr;
    if (it->second.expires != kNever && it->second.expires <= now_) {
      data.erase(it);
      return nullptr;
    }
    return &it->second;
  }

  std::int64_t pttl(std::size_t i, const std::string& key) {
    Entry* e = find(i, key);
    if (!e) return -2;
    if (e->expires == kNever) return -1;
    return std::chrono::duration_cast<std::chrono::milliseconds>(e->expires - now_).count();
  }

  std::int64_t seconds_since_epoch(std::size_t i) const {
    return std::chrono::duration_cast<std::chrono::seconds>(*servers[i].wall + now_.time_since_epoch()).count();
  }

  // A fencing counter's write: with the expiry TTL_MS, or none where TIME is refused.
  void store_fence(std::size_t i, const std::string& key, const std::string& value, const std::string& ttl_ms) {
    TimePoint expires = servers[i].wall ? now_ + std::chrono::milliseconds(std::stoll(ttl_ms)) : kNever;
    servers[i].data[key] = Entry{value, "string", expires};
  }

  std::int64_t counter(std::size_t i, const std::string& key) {
    Entry* e = find(i, key);
    return e ? std::stoll(e->value) : 0;
  }

  void publish(std::size_t i, const std::string& message) {
    ++servers[i].publishes;
    servers[i].announced.push_back(message);
    if (!on_message_ || subscribed_ == 0) return;
    schedule(now_ + servers[i].latency / 2, [this, i, message] {
      if (on_message_) on_message_(ChannelEvent{ChannelEvent::Kind::Message, i, channel_, message});
    });
  }

  static Reply arr(std::vector<Reply> e) { return Reply::array(std::move(e)); }

  // What status.lua answers for one lock (and list.lua for each).
  Reply status_reply(std::size_t i, const std::string& lock, const std::string& owner, const std::string& fence) {
    Entry* e = find(i, lock);
    Entry* o = find(i, owner);
    return arr({Reply::status(e ? e->type : "none"), e && e->type == "string" ? Reply::string(e->value) : Reply::nil(),
                Reply::number(pttl(i, lock)), o ? Reply::string(o->value) : Reply::nil(),
                Reply::number(counter(i, fence))});
  }

  Result execute(std::size_t i, const Request& request) {
    Server& s = servers[i];
    Result r;
    std::string name = request.script ? std::string(request.script->name) : request.argv[0];
    s.log.push_back(name);
    s.replicated.push_back(request.replicated);
    s.nodes.push_back(request.node);
    s.argvs.push_back(request.argv);
    if (!request.script) {
      std::string words;
      for (const auto& w : request.argv) words += (words.empty() ? "" : " ") + w;
      // A Cluster member's node answers for itself: "@HOST:PORT WORDS", else as any node would.
      if (auto it = s.answers.find("@" + request.node + " " + words); !request.node.empty() && it != s.answers.end())
        return it->second;
      if (auto it = s.answers.find(words); it != s.answers.end()) return it->second;
    }
    const auto& a = request.argv;  // numkeys, keys…, args…
    auto ms = [](const std::string& text) { return std::chrono::milliseconds(std::stoll(text)); };
    if (name == "acquire") {
      const std::string &lock = a[1], &fence = a[2], &owner = a[3], &token = a[4], &owner_value = a[6], &channel = a[7];
      // "TTL FENCE_TTL[ WAITER HEARTBEAT[ FLAGS]]", as acquire.lua reads it (the flags are not played
      // here: no fair queue, and releases hand the lock to nobody).
      const auto words = split(a[5]);
      const std::string &ttl = words.at(0), &fence_ttl = words.at(1);
      const std::string waiter = words.size() >= 4 ? words[2] : "";
      const std::string prefix = channel.empty() ? "" : channel.substr(0, channel.size() - 4);
      // Taken: a queued waiter keeps its place (its heartbeat refreshed) until its acquire ends.
      auto keep = [&] {
        Entry* alive = waiter.empty() || channel.empty() ? nullptr : find(i, prefix + "waiter:" + waiter);
        if (alive) alive->expires = now_ + ms(words[3]);
        return Reply::number(alive ? 1 : 0);
      };
      if (Entry* m = find(i, lock); m && m->type == "string" && m->value == "redlock:shared") {
        // Readers hold: busy, not queued among the waiters, and the writer is to queue.
        r.reply = arr({Reply::number(0), Reply::number(0), Reply::number(pttl(i, lock)), Reply::status("string"),
                       Reply::number(1), Reply::string("readers"), Reply::number(0), Reply::number(1)});
        return r;
      }
      // As acquire.lua's bump: one more, or where there is none, the clock's second in microseconds.
      auto incr = [&] {
        std::int64_t c = counter(i, fence) + 1;
        if (c == 1 && s.wall) c = std::max<std::int64_t>(1, seconds_since_epoch(i) * 1000000);
        store_fence(i, fence, std::to_string(c), fence_ttl);
        return c;
      };
      Entry* e = find(i, lock);
      if (!e) {
        s.data[lock] = Entry{token, "string", now_ + ms(ttl)};
        if (!owner_value.empty()) s.data[owner] = Entry{owner_value, "string", now_ + ms(ttl)};
        if (!channel.empty()) publish(i, "acquired");
        r.reply = arr({Reply::number(1), Reply::number(incr()), Reply::number(0), Reply::status("string"),
                       Reply::number(1), keep()});
      } else if (e->type == "string" && e->value == token) {
        e->expires = now_ + ms(ttl);
        r.reply = arr({Reply::number(2), Reply::number(incr()), Reply::number(0), Reply::status("string"),
                       Reply::number(1), keep()});
      } else {
        if (!waiter.empty() && !channel.empty()) {
          auto& q = s.queues[prefix + "waiters"];
          if (std::find(q.begin(), q.end(), waiter) == q.end()) q.push_back(waiter);
          s.data[prefix + "waiter:" + waiter] = Entry{"1", "string", now_ + ms(words[3])};
        }
        Entry* o = find(i, owner);
        r.reply = arr({Reply::number(0), Reply::number(0), Reply::number(pttl(i, lock)), Reply::status(e->type),
                       Reply::number(o ? 1 : 0), o ? Reply::string(o->value) : Reply::nil(),
                       Reply::number(!waiter.empty() && !channel.empty() ? 1 : 0)});
      }
    } else if (name == "release") {
      const std::string &lock = a[1], &owner = a[2], &token = a[3], &channel = a[4], &force = a[5], &word = a[6];
      Entry* e = find(i, lock);
      int deleted = 0;
      // --force deletes only what can be a lock (a string with an expiry) and answers -1 to the rest.
      const bool lock_like = e && e->type == "string" && e->expires != kNever;
      if (force == "1" && e && !lock_like) {
        r.reply = Reply::number(-1);
        return r;
      }
      if (e && ((force == "1" && lock_like) || (e->type == "string" && e->value == token))) {
        s.data.erase(lock);
        s.data.erase(owner);
        deleted = 1;
        if (!channel.empty()) publish(i, word + " " + std::to_string(subscribed_ ? 1 : 0) + named(i, channel, word));
      }
      r.reply = Reply::number(deleted);
    } else if (name == "extend") {
      const std::string &lock = a[1], &owner = a[2], &token = a[3], &ttl = a[4], &keep_longer = a[5];
      Entry* e = find(i, lock);
      bool ours = e && e->type == "string" && e->value == token;
      std::int64_t set = std::stoll(ttl);
      if (ours && keep_longer == "1") {
        // The TTL in the owner record ("UNIX_MS/TTL_MS OWNER"), or what the lock has left if longer.
        Entry* o = find(i, owner);
        auto slash = o ? o->value.find('/') : std::string::npos;
        if (slash != std::string::npos) set = std::stoll(o->value.substr(slash + 1));
        set = std::max(set, pttl(i, lock));
      }
      if (ours) e->expires = now_ + std::chrono::milliseconds(set);
      r.reply = Reply::number(ours ? set : e ? 0 : -1);
    } else if (name == "heal") {
      const std::string &lock = a[1], &owner = a[2], &fence = a[3], &token = a[4], &ttl = a[5], &owner_value = a[6],
                        &fence_value = a[7], &fence_ttl = a[8];
      bool missing = !find(i, lock);
      if (missing) {
        s.data[lock] = Entry{token, "string", now_ + ms(ttl)};
        if (!owner_value.empty()) s.data[owner] = Entry{owner_value, "string", now_ + ms(ttl)};
        if (std::stoll(fence_value) > counter(i, fence)) store_fence(i, fence, fence_value, fence_ttl);
      }
      r.reply = Reply::number(missing ? 1 : 0);
    } else if (name == "fence") {
      const std::string &key = a[1], &proposed = a[2], &fence_ttl = a[3];
      std::int64_t c = counter(i, key), p = std::stoll(proposed);
      if (p > c) store_fence(i, key, proposed, fence_ttl);
      r.reply = Reply::number(std::max(c, p));
    } else if (name == "status") {
      r.reply = status_reply(i, a[1], a[2], a[3]);
    } else if (name == "list") {
      std::vector<Reply> locks;
      for (std::size_t k = 1; k + 2 < a.size(); k += 3) locks.push_back(status_reply(i, a[k], a[k + 1], a[k + 2]));
      r.reply = arr(std::move(locks));
    } else if (name == "join" || name == "stay" || name == "leave" || name == "queue" || name == "withdraw" ||
               name == "readers" || name == "rejoin") {
      r.reply = shared(i, name, a);
    } else if (name == "probe") {
      r.reply = probe(i, a);
    } else if (name == "SET") {  // SET key value NX, as a semaphore stores its limit
      bool set = !find(i, a[1]);
      if (set) s.data[a[1]] = Entry{a[2], "string", kNever};
      r.reply = set ? Reply::status("OK") : Reply::nil();
    } else if (name == "DEL") {
      r.reply = Reply::number(static_cast<std::int64_t>(s.data.erase(a[1])));
    } else if (name == "ZREM") {
      auto& q = s.queues[a[1]];
      const auto before = q.size();
      q.erase(std::remove(q.begin(), q.end(), a[2]), q.end());
      r.reply = Reply::number(static_cast<std::int64_t>(before - q.size()));
    } else if (name == "PEXPIRE") {
      Entry* e = find(i, a[1]);
      if (e) e->expires = now_ + ms(a[2]);
      r.reply = Reply::number(e || s.queues.count(a[1]) ? 1 : 0);
    } else if (name == "SCAN") {
      // Everything at once, and of MATCH only the end: the caller sorts out the rest.
      std::vector<Reply> keys;
      for (const auto& [key, entry] : s.data) {
        const std::string tail = ":redlock:fence";
        if (key.size() >= tail.size() && key.compare(key.size() - tail.size(), tail.size(), tail) == 0 &&
            (entry.expires == kNever || entry.expires > now_)) {
          keys.push_back(Reply::string(key));
        }
      }
      r.reply = arr({Reply::string("0"), arr(std::move(keys))});
    } else {
      r.failure = Failure::Reply;
      r.error = "ERR unknown command";
    }
    return r;
  }

  static std::vector<std::string> split(const std::string& text) {
    std::vector<std::string> words;
    std::size_t at = 0;
    while (at <= text.size()) {
      const auto space = std::min(text.find(' ', at), text.size());
      words.push_back(text.substr(at, space - at));
      at = space + 1;
    }
    return words;
  }

  // What release.lua appends to "released N": the first two live waiters of the queue, the dead
  // ones dropped on the way.
  std::string named(std::size_t i, const std::string& channel, const std::string& word) {
    if (word != "released") return "";
    const std::string prefix = channel.substr(0, channel.size() - 4);
    auto& q = servers[i].queues[prefix + "waiters"];
    std::string out;
    int found = 0;
    for (auto it = q.begin(); it != q.end() && found < 2;) {
      if (!find(i, prefix + "waiter:" + *it)) {
        it = q.erase(it);
        continue;
      }
      out += " " + *it++;
      ++found;
    }
    return out;
  }

  // The live members of sorted set KEY on server I, the expired ones dropped.
  std::map<std::string, TimePoint>& zset(std::size_t i, const std::string& key) {
    auto& z = servers[i].zsets[key];
    std::erase_if(z, [this](const auto& m) { return m.second <= now_; });
    return z;
  }

  static std::int64_t ms_until(TimePoint t, TimePoint now) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count();
  }

  // join, stay, leave, queue, withdraw, readers and rejoin, as their scripts do it (owner records left out).
  Reply shared(std::size_t i, const std::string& name, const std::vector<std::string>& a) {
    const auto ms = [](const std::string& text) { return std::chrono::milliseconds(std::stoll(text)); };
    if (name == "queue") {
      zset(i, a[1])[a[2]] = now_ + ms(a[3]);
      return Reply::number(1);
    }
    if (name == "withdraw") {
      const bool removed = zset(i, a[1]).erase(a[2]) > 0;
      if (removed && zset(i, a[1]).empty() && !a[3].empty()) publish(i, "retracted 1");
      return Reply::number(removed ? 1 : 0);
    }
    if (name == "readers") {
      std::vector<Reply> readers;
      for (const auto& [token, until] : zset(i, a[1])) {
        readers.push_back(arr({Reply::string(token), Reply::number(ms_until(until, now_)), Reply::nil()}));
      }
      return arr({Reply::number(static_cast<std::int64_t>(zset(i, a[2]).size())), arr(std::move(readers))});
    }
    const std::string& lock = a[1];
    Entry* e = find(i, lock);
    const bool marker = e && e->type == "string" && e->value == "redlock:shared";
    if (name == "join") return join(i, a, e, marker);
    auto& readers = zset(i, a[2]);
    const std::string& token = a[4];
    if (name == "stay") {
      if (!readers.count(token) && (!e || marker)) return Reply::number(-1);
      if (!readers.count(token) || !marker) return Reply::number(0);
      readers[token] = now_ + ms(a[5]);
      e->expires = std::max(e->expires, readers[token]);
      return Reply::number(std::stoll(a[5]));
    }
    if (name == "rejoin") {  // keys: lock, readers, records, fence; token, ttl, record, fence, its ttl
      const std::string& reader = a[5];
      if ((e && !marker) || readers.count(reader)) return Reply::number(0);
      readers[reader] = now_ + ms(a[6]);
      if (!e) servers[i].data[lock] = Entry{"redlock:shared", "string", readers[reader]};
      if (e) e->expires = std::max(e->expires, readers[reader]);
      if (std::stoll(a[8]) > counter(i, a[4])) store_fence(i, a[4], a[8], a[9]);
      return Reply::number(1);
    }
    // leave
    const bool left = a[6] == "1" ? (readers.clear(), true) : readers.erase(token) > 0;
    if (marker && readers.empty()) {
      servers[i].data.erase(lock);
      if (!a[5].empty()) publish(i, a[7] + " 1");
    } else if (marker) {
      TimePoint last = now_;
      for (const auto& m : readers) last = std::max(last, m.second);
      e->expires = last;
    }
    return Reply::number(left ? 1 : 0);
  }

  Reply join(std::size_t i, const std::vector<std::string>& a, Entry* e, bool marker) {
    const std::string &lock = a[1], &fence = a[2], &token = a[7], &channel = a[10], &priority = a[11];
    const auto ttl = std::chrono::milliseconds(std::stoll(a[8]));
    auto& readers = zset(i, a[3]);
    auto& writers = zset(i, a[4]);
    if (e && !marker) {
      return arr({Reply::number(0), Reply::number(0), Reply::number(pttl(i, lock)), Reply::status(e->type),
                  Reply::number(0), Reply::nil()});
    }
    const bool ours = readers.count(token) > 0;
    if (!ours && priority == "1" && !writers.empty()) {
      TimePoint last = now_;
      for (const auto& m : writers) last = std::max(last, m.second);
      return arr({Reply::number(0), Reply::number(0), Reply::number(std::max(pttl(i, lock), ms_until(last, now_))),
                  Reply::status("string"), Reply::number(1), Reply::string("a waiting writer")});
    }
    readers[token] = now_ + ttl;
    if (!e) {
      servers[i].data[lock] = Entry{"redlock:shared", "string", now_ + ttl};
    } else {
      e->expires = std::max(e->expires, now_ + ttl);
    }
    if (!channel.empty()) publish(i, "joined");
    return arr({Reply::number(ours ? 2 : 1), Reply::number(counter(i, fence)), Reply::number(0),
                Reply::status("string"), Reply::number(1)});
  }

  // A semaphore's probe: the limit, then each slot's type, value, PTTL and owner record.
  Reply probe(std::size_t i, const std::vector<std::string>& a) {
    auto text = [&](Entry* e) { return e && e->type == "string" ? Reply::string(e->value) : Reply::nil(); };
    std::vector<Reply> out{text(find(i, a[1]))};
    const auto keys = static_cast<std::size_t>(std::stoll(a[0]));
    for (std::size_t k = 2; k + 1 <= keys; k += 2) {
      Entry* e = find(i, a[k]);
      out.push_back(Reply::status(e ? e->type : "none"));
      out.push_back(text(e));
      out.push_back(Reply::number(pttl(i, a[k])));
      out.push_back(text(find(i, a[k + 1])));
    }
    return arr(std::move(out));
  }

  Duration timeout_;
  TimePoint now_ = TimePoint(std::chrono::hours(1));
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::uint64_t seq_ = 0;
  std::size_t sent_ = 0;
  std::string channel_;
  ChannelCallback on_message_;
  std::size_t subscribed_ = 0;
};

}  // namespace redlock::test
