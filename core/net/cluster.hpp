// What a Redis Cluster member needs to know of the cluster, as pure functions: the slot of a key
// (CRC16 of its hash tag, as the Cluster specification defines it), the slot map that CLUSTER SLOTS
// answers, and the redirections (MOVED, ASK) a node answers for a slot it does not serve.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/net/resp.hpp"

namespace redlock {

inline constexpr int kClusterSlots = 16384;

// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0, no reflection), the Cluster's key hash.
std::uint16_t crc16_xmodem(std::string_view data);
// What of KEY is hashed: the text between its first '{' and the first '}' after it when that is not
// empty, else the whole key.
std::string_view hash_tag(std::string_view key);
// The slot (0 … 16383) KEY lives in.
int key_slot(std::string_view key);

// The endpoint CLUSTER SLOTS (and MOVED, ASK) gives a node whose endpoint is unknown
// (cluster-preferred-endpoint-type hostname, and the node announced none).
inline constexpr std::string_view kUnknownEndpoint = "?";

struct ClusterNode {
  std::string host;
  int port = 0;
  std::size_t replicas = 0;  // the replicas the map lists for its slots

  // "host:port" ("[::1]:7000" for IPv6), as it may be printed.
  std::string address() const;
  // Whether the node can be reached: a node whose endpoint is unknown ("?") cannot.
  bool reachable() const { return host != kUnknownEndpoint; }
};

// Gives every node of a CLUSTER SLOTS answer whose endpoint is empty (a node that has met no other
// does not know its own address) or NULL (cluster-preferred-endpoint-type unknown-endpoint, behind
// a load balancer) the endpoint HOST: the host the question was sent to, as Redis documents. The
// Cluster member does it to every CLUSTER SLOTS answer, its own and the ones it hands back, so that
// every reader of the answer names the nodes as its map does. An answer of another shape is left
// as it is.
void resolve_endpoints(Reply& slots, const std::string& host);

// Which master serves each slot.
class SlotMap {
 public:
  struct Range {
    int first = 0;
    int last = 0;
    ClusterNode master;
    std::vector<ClusterNode> replicas;
  };

  // Throws std::runtime_error when REPLY is not a CLUSTER SLOTS answer.
  static SlotMap parse(const Reply& reply);

  // The master of SLOT, nothing when no node serves it.
  std::optional<ClusterNode> owner(int slot) const;
  // A MOVED answer: SLOT is NODE's now (the rest of the map is learnt again later).
  void move(int slot, const ClusterNode& node);
  // Every node the map names, masters and replicas, once each.
  std::vector<ClusterNode> nodes() const;
  // Every master the map names, once each, in the order of their first slots: the nodes that hold
  // the cluster's keys.
  std::vector<ClusterNode> masters() const;
  // The slot ranges (first, last) MASTER serves.
  std::vector<std::pair<int, int>> slots_of(const ClusterNode& master) const;
  const std::vector<Range>& ranges() const { return ranges_; }

 private:
  std::vector<Range> ranges_;
};

// A redirection: "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381" (an empty host, which
// Redis 7 sends when it does not know its own address, means the node that answered; "?" a node
// whose endpoint is unknown).
struct Redirect {
  bool ask = false;
  int slot = 0;
  ClusterNode node;
};
std::optional<Redirect> parse_redirect(std::string_view error);

}  // namespace redlock
