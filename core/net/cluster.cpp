#include "core/net/cluster.hpp"

#include <algorithm>
#include <charconv>
#include <set>
#include <stdexcept>

namespace redlock {

std::uint16_t crc16_xmodem(std::string_view data) {
  std::uint16_t crc = 0;
  for (char c : data) {
    crc = static_cast<std::uint16_t>(crc ^ (static_cast<unsigned char>(c) << 8));
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021) : static_cast<std::uint16_t>(crc << 1);
    }
  }
  return crc;
}

std::string_view hash_tag(std::string_view key) {
  auto open = key.find('{');
  if (open == std::string_view::npos) return key;
  auto close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

int key_slot(std::string_view key) {
  return crc16_xmodem(hash_tag(key)) % kClusterSlots;
}

std::string ClusterNode::address() const {
  const bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

void resolve_endpoints(Reply& slots, const std::string& host) {
  if (slots.type != Reply::Type::Array) return;
  for (auto& range : slots.elements) {
    if (range.type != Reply::Type::Array) continue;
    // [first, last, master, replica…], each node [endpoint, port, …].
    for (std::size_t i = 2; i < range.elements.size(); ++i) {
      Reply& node = range.elements[i];
      if (node.type != Reply::Type::Array || node.elements.empty()) continue;
      Reply& endpoint = node.elements[0];
      const bool empty = endpoint.type == Reply::Type::String && endpoint.str.empty();
      if (empty || endpoint.type == Reply::Type::Nil) endpoint = Reply::string(host);
    }
  }
}

namespace {

ClusterNode parse_node(const Reply& r) {
  if (r.type != Reply::Type::Array || r.elements.size() < 2 || !r.elements[1].as_integer()) {
    throw std::runtime_error("CLUSTER SLOTS: a node is not [host, port, …]");
  }
  ClusterNode node;
  node.host = r.elements[0].str;
  node.port = static_cast<int>(*r.elements[1].as_integer());
  return node;
}

}  // namespace

SlotMap SlotMap::parse(const Reply& reply) {
  if (reply.type != Reply::Type::Array) throw std::runtime_error("CLUSTER SLOTS: not an array");
  SlotMap map;
  for (const auto& r : reply.elements) {
    if (r.type != Reply::Type::Array || r.elements.size() < 3 || !r.elements[0].as_integer() ||
        !r.elements[1].as_integer()) {
      throw std::runtime_error("CLUSTER SLOTS: a range is not [first, last, master, …]");
    }
    Range range;
    range.first = static_cast<int>(*r.elements[0].as_integer());
    range.last = static_cast<int>(*r.elements[1].as_integer());
    if (range.first < 0 || range.last >= kClusterSlots || range.first > range.last) {
      throw std::runtime_error("CLUSTER SLOTS: a range out of 0…16383");
    }
    range.master = parse_node(r.elements[2]);
    for (std::size_t i = 3; i < r.elements.size(); ++i) range.replicas.push_back(parse_node(r.elements[i]));
    range.master.replicas = range.replicas.size();
    map.ranges_.push_back(std::move(range));
  }
  return map;
}

std::optional<ClusterNode> SlotMap::owner(int slot) const {
  for (const auto& r : ranges_) {
    if (slot >= r.first && slot <= r.last) return r.master;
  }
  return std::nullopt;
}

void SlotMap::move(int slot, const ClusterNode& node) {
  std::vector<Range> out;
  for (auto& r : ranges_) {
    if (slot < r.first || slot > r.last) {
      out.push_back(std::move(r));
      continue;
    }
    // The slot leaves its range, which splits around it.
    if (r.first < slot) out.push_back(Range{r.first, slot - 1, r.master, r.replicas});
    if (slot < r.last) out.push_back(Range{slot + 1, r.last, r.master, r.replicas});
  }
  ClusterNode moved = node;
  moved.replicas = 0;  // unknown until the map is learnt again
  for (const auto& r : out) {
    if (r.master.host == node.host && r.master.port == node.port) moved.replicas = r.master.replicas;
  }
  out.push_back(Range{slot, slot, moved, {}});
  ranges_ = std::move(out);
}

std::vector<ClusterNode> SlotMap::nodes() const {
  std::vector<ClusterNode> out;
  std::set<std::string> seen;
  for (const auto& r : ranges_) {
    if (seen.insert(r.master.address()).second) out.push_back(r.master);
    for (const auto& n : r.replicas) {
      if (seen.insert(n.address()).second) out.push_back(n);
    }
  }
  return out;
}

std::vector<ClusterNode> SlotMap::masters() const {
  std::vector<ClusterNode> out;
  std::set<std::string> seen;
  for (const auto& r : ranges_) {
    if (seen.insert(r.master.address()).second) out.push_back(r.master);
  }
  return out;
}

std::vector<std::pair<int, int>> SlotMap::slots_of(const ClusterNode& master) const {
  std::vector<std::pair<int, int>> out;
  for (const auto& r : ranges_) {
    if (r.master.address() == master.address()) out.emplace_back(r.first, r.last);
  }
  return out;
}

std::optional<Redirect> parse_redirect(std::string_view error) {
  Redirect r;
  if (error.starts_with("MOVED ")) {
    error.remove_prefix(6);
  } else if (error.starts_with("ASK ")) {
    r.ask = true;
    error.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  auto space = error.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  auto res = std::from_chars(error.data(), error.data() + space, r.slot);
  if (res.ec != std::errc() || res.ptr != error.data() + space || r.slot < 0 || r.slot >= kClusterSlots) {
    return std::nullopt;
  }
  std::string_view where = error.substr(space + 1);
  auto colon = where.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view port = where.substr(colon + 1);
  res = std::from_chars(port.data(), port.data() + port.size(), r.node.port);
  if (res.ec != std::errc() || res.ptr != port.data() + port.size() || r.node.port <= 0 || r.node.port > 65535) {
    return std::nullopt;
  }
  std::string_view host = where.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  r.node.host = std::string(host);
  return r;
}

}  // namespace redlock
