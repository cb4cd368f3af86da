// The small interface between the lock logic and the network: requests to N servers, each answered
// once (a reply or a classified failure), and an event loop that runs until the caller has its
// answer. The real implementation is Transport; unit tests use an in-memory fake.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/lock/scripts.hpp"
#include "core/net/resp.hpp"
#include "core/util/clock.hpp"

namespace redlock {

// Why a server did not answer a request. A failed server is a value, not an exception: the quorum
// expects some of them.
enum class Failure {
  None,
  Timeout,    // no answer within --timeout (connect included)
  Connect,    // refused, unreachable, name not resolved
  Tls,        // handshake or certificate verification failed
  Auth,       // AUTH refused, or SELECT by the ACL (wrong password, NOPERM, …)
  Io,         // a read or write failed
  Closed,     // the server closed the connection
  Protocol,   // the server does not speak RESP
  Reply,      // the server answered with an error reply
  Duplicate,  // the same server (run_id) is configured twice
  Replica,    // a replica answered: it never counts as a vote
  Config,     // the server cannot be what its URL asks for: SELECT of a database it does not have
};

std::string_view failure_name(Failure f);

// How the error of a Sentinel member's vote that WAIT confirmed on too few replicas begins: a
// Failure::Reply that time may cure (the replicas catch up), unlike other error replies.
inline constexpr std::string_view kWaitShort = "WAIT: ";

// Whether an error reply tells the state the server is in (a cluster down, a data set loading, a
// failover under way, a slot moving, a script running): time may cure it, and it refuses nothing.
inline bool server_state_error(std::string_view error) {
  for (std::string_view state : {"CLUSTERDOWN", "LOADING", "MASTERDOWN", "TRYAGAIN", "BUSY"}) {
    if (error.starts_with(state)) return true;
  }
  return false;
}

struct Result {
  Failure failure = Failure::None;
  Reply reply;        // when failure == None
  std::string error;  // what went wrong, in the server's words where it gave any
  Duration latency{};

  bool ok() const { return failure == Failure::None; }
};

// Whether anyone still waits for a request's answer. A request without an owner is always wanted;
// one whose owner (a Round) has gone or given up on it is not, once its owner token has expired.
class Interest {
 public:
  Interest() = default;
  explicit Interest(const std::shared_ptr<const int>& owner) : owner_(owner), owned_(true) {}

  bool abandoned() const { return owned_ && owner_.expired(); }

 private:
  std::weak_ptr<const int> owner_;
  bool owned_ = false;
};

// Request::node for whichever master of a Cluster member's map.
inline constexpr std::string_view kAnyNode = "*";

// One command: a Lua script (sent as EVALSHA, re-sent as EVAL on NOSCRIPT) or a plain command.
struct Request {
  const Script* script = nullptr;
  std::vector<std::string> argv;  // script: numkeys, keys…, args…; plain: the whole command
  // Send the script's body (EVAL) at once: for requests nobody may be there to re-send after a
  // NOSCRIPT, such as the cleanup sent to a server that has not answered.
  bool with_body = false;
  // While someone waits for the answer. A NOSCRIPT is answered by re-sending the body only then:
  // re-running an acquire that was given up on would run it after its own release.
  Interest interest;
  // A write that is a vote (acquire, extend, heal): on a Sentinel member it counts only once WAIT
  // confirms that replicas have it (--member-wait), since a failover loses what they lack.
  bool replicated = false;
  // On a Cluster member, the key whose slot's master gets the request when its first key (a
  // script's KEYS[1], a command's first argument) is not the one (CONFIG GET names no key).
  std::string route_key;
  // On a Cluster member, the node ("HOST:PORT", as its slot map names it) that gets the request,
  // whatever its keys, and no redirection followed: for what each master is asked in turn (list's
  // SCAN, doctor's checks); kAnyNode for a question every node answers alike (CLUSTER SLOTS).
  // Ignored by the other members.
  std::string node;

  static Request eval(const Script& script, std::vector<std::string> keys, std::vector<std::string> args);
  static Request command(std::vector<std::string> argv);
};

using ResultCallback = std::function<void(Result)>;
// What a subscription hears: a message published on one of its channels, or news of the
// subscription itself. The kind tells them apart, so a message whose text is "subscribed" is a
// message like any other.
struct ChannelEvent {
  enum class Kind {
    Message,       // TEXT was published on CHANNEL
    Subscribed,    // the server confirmed the subscription to CHANNEL (again, after a reconnect)
    Unsubscribed,  // the connection was lost; it is asked for again a little later
    Refused,       // the server refused CHANNEL (not the first); TEXT is its error
  };
  Kind kind = Kind::Message;
  std::size_t server = 0;
  std::string_view channel;
  std::string_view text;
};
using ChannelCallback = std::function<void(const ChannelEvent&)>;

class Network {
 public:
  virtual ~Network() = default;

  virtual std::size_t size() const = 0;
  virtual TimePoint now() const = 0;

  // Sends REQUEST to server SERVER; DONE runs exactly once, from inside run_until(), with the reply
  // or the failure, no later than the per-request deadline. Requests to one server are answered in
  // the order they were sent.
  virtual void send(std::size_t server, Request request, ResultCallback done) = 0;

  // While HOLD, requests sent are gathered and leave when it ends, one write per connection (see
  // Batch; calls nest, and the requests leave at the last false). A network that cannot gather
  // sends each at once.
  virtual void hold_writes(bool /*hold*/) {}
  class Batch;

  // Runs the event loop until DONE() returns true or DEADLINE passes.
  virtual void run_until(const std::function<bool()>& done, TimePoint deadline) = 0;

  // Waits (up to DEADLINE) until every request sent so far on a connection that is up has left
  // this process, so that a release is on its way even to servers that have not answered yet. A
  // connection still being made (a server behind a partition, or one whose accept queue is full)
  // has delivered nothing, so it holds nothing to undo: it is not waited for.
  virtual void flush(TimePoint deadline) = 0;

  // Whether something sent to SERVER is still on its way or unanswered, given up on or not: a
  // request behind a blocked WAIT runs only once the WAIT returns, and not at all when the
  // connection closes first.
  virtual bool busy(std::size_t /*server*/) const { return false; }

  // Subscribes to CHANNEL on every server (kept up, re-subscribed after a reconnect).
  virtual void subscribe(const std::string& channel, ChannelCallback on_event) = 0;
  // Subscribes each server I to CHANNELS[I], in place of what subscribe() set up. The first channel
  // of each list is the one subscribed() counts and the one Subscribed and Unsubscribed come on; a
  // later one that the server refuses (an ACL) is told as Refused on that channel, and the
  // subscription goes on without it. This default (for networks that know one channel) subscribes
  // to the first channel of the first list only.
  virtual void subscribe_channels(std::vector<std::vector<std::string>> channels, ChannelCallback on_event) {
    subscribe(channels.at(0).at(0), std::move(on_event));
  }
  // How many servers have confirmed the subscription.
  virtual std::size_t subscribed() const = 0;
  // Closes the subscriptions (the wait is over).
  virtual void unsubscribe() = 0;

  // The server's URL as it may be printed (password as ***).
  virtual std::string describe(std::size_t server) const = 0;
  // What the server said it is (ROLE) when its connection was opened: "master", "replica", another
  // role as Redis names it, or empty while unknown (not connected yet, or ROLE refused).
  virtual std::string role(std::size_t /*server*/) const { return {}; }
  // The address that answered for a member ("host:port"): a Sentinel member's master once the
  // sentinels named it and it said it is a master; empty while unknown.
  virtual std::string resolved(std::size_t /*server*/) const { return {}; }
  // Why SERVER turned out to be part of another configured member (a second name of one server, a
  // node of a listed group), once known, perhaps after its own answer came; empty when it is not.
  virtual std::string duplicate_of(std::size_t /*server*/) const { return {}; }
  // Whether SERVER is a Cluster member, whose keys are spread over the masters of its slot map.
  virtual bool cluster(std::size_t /*server*/) const { return false; }
  // Whether SERVER is a member that fails over to a replica (a Sentinel group, a Cluster), where a
  // write counts as a vote only once replicas confirm it (Request::replicated).
  virtual bool fails_over(std::size_t /*server*/) const { return false; }
  // The database the server's URL names (keyspace notifications name it).
  virtual int database(std::size_t /*server*/) const { return 0; }
  // Whether some server's name is still being resolved: until it is, nobody can tell whether it
  // is a second name of a server already configured.
  virtual bool resolving() const = 0;
};

// Requests sent while a Batch lives leave together when it ends: several commands to one server
// cost it one packet and one read, not one each.
class Network::Batch {
 public:
  explicit Batch(Network& network) : network_(network) { network_.hold_writes(true); }
  ~Batch() { network_.hold_writes(false); }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

 private:
  Network& network_;
};

}  // namespace redlock
