#include "core/net/server_url.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "core/net/ip_text.hpp"
#include "core/util/error.hpp"

namespace redlock {

namespace {

// Every scheme a server URL may have, with the connections it sets to TLS.
struct SchemeForm {
  std::string_view name;
  ServerUrl::Scheme scheme;
  bool sentinel_tls = false;
  bool master_tls = false;
  bool cluster_tls = false;
};

constexpr SchemeForm kSchemeForms[] = {
    {"redis", ServerUrl::Scheme::Tcp},
    {"rediss", ServerUrl::Scheme::Tls},
    {"unix", ServerUrl::Scheme::Unix},
    {"sentinel", ServerUrl::Scheme::Sentinel},
    {"sentinel+tls", ServerUrl::Scheme::Sentinel, true, true},
    {"sentinel+rediss", ServerUrl::Scheme::Sentinel, false, true},
    {"cluster", ServerUrl::Scheme::Cluster},
    {"cluster+tls", ServerUrl::Scheme::Cluster, false, false, true},
};

const SchemeForm* scheme_form(std::string_view name) {
  for (const auto& form : kSchemeForms) {
    if (form.name == name) return &form;
  }
  return nullptr;
}

// Whether TEXT starts with "SCHEME://" of a member whose list of addresses goes on after a comma.
bool starts_member_with_seeds(std::string_view text) {
  for (const auto& form : kSchemeForms) {
    bool seeds = form.scheme == ServerUrl::Scheme::Sentinel || form.scheme == ServerUrl::Scheme::Cluster;
    if (seeds && text.starts_with(std::string(form.name) + "://")) return true;
  }
  return false;
}

}  // namespace

// Percent-decoding for the user and password parts, so that ':' and '@' can be written.
std::string percent_decode(std::string_view text, std::string_view what) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    int value = 0;
    if (i + 2 >= text.size()) {
      config_error("bad percent escape in the " + std::string(what) + " of a server URL");
    }
    auto res = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
    if (res.ec != std::errc() || res.ptr != text.data() + i + 3) {
      config_error("bad percent escape in the " + std::string(what) + " of a server URL");
    }
    out.push_back(static_cast<char>(value));
    i += 2;
  }
  return out;
}

// The inverse of percent_decode, for what may be read back: ':', '@', '%', separators and control
// characters escaped.
std::string percent_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || u >= 0x7f || c == '%' || c == ':' || c == '@' || c == '/' || c == ',') {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

// Appends only: GCC 12 at -O3 sees overlap where there is none in "[" + host + "]".
void append_endpoint(std::string& out, const std::string& host, int port) {
  bool ipv6 = host.find(':') != std::string::npos;
  if (ipv6) out += '[';
  out += host;
  if (ipv6) out += ']';
  out.append(":").append(std::to_string(port));
}

int parse_number(std::string_view text, int low, int high, const std::string& what, const std::string& shown) {
  int value = 0;
  auto res = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || res.ec != std::errc() || res.ptr != text.data() + text.size() || value < low || value > high) {
    config_error("bad " + what + " '" + std::string(text) + "' in server URL '" + shown + "'");
  }
  return value;
}

// Splits "[[user]:]password@rest" off the front, read as redis-cli reads it: "password@",
// "user:password@" or ":password@". The password never goes into a message.
void parse_userinfo(std::string_view& rest, ServerUrl& url) {
  auto at = rest.rfind('@');
  if (at == std::string_view::npos) return;
  std::string_view userinfo = rest.substr(0, at);
  rest.remove_prefix(at + 1);
  auto colon = userinfo.find(':');
  std::string_view password = userinfo;
  if (colon != std::string_view::npos) {
    std::string_view user = userinfo.substr(0, colon);
    if (!user.empty()) url.user = percent_decode(user, "user");
    password = userinfo.substr(colon + 1);
  }
  // "redis://:@host" or "redis://user:@host" gives no password (as redis-py and go-redis read it):
  // the password then comes from --password-file or REDLOCK_PASSWORD, if any.
  auto decoded = percent_decode(password, "password");
  if (!decoded.empty()) url.password = std::move(decoded);
}

void parse_host_port(std::string_view hostport, ServerUrl& url, const std::string& shown) {
  if (hostport.empty()) config_error("missing host in server URL '" + shown + "'");
  std::string_view port;
  if (hostport.front() == '[') {
    auto close = hostport.find(']');
    if (close == std::string_view::npos) config_error("unclosed '[' in server URL '" + shown + "'");
    url.host = std::string(hostport.substr(1, close - 1));
    std::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') config_error("unexpected text after ']' in server URL '" + shown + "'");
      port = after.substr(1);
      if (port.empty()) config_error("missing port after ':' in server URL '" + shown + "'");
    }
    in6_addr addr{};
    if (inet_pton(AF_INET6, url.host.c_str(), &addr) != 1) {
      config_error("bad IPv6 address '" + url.host + "' in server URL '" + shown + "'");
    }
  } else {
    auto colon = hostport.rfind(':');
    if (colon != std::string_view::npos) {
      if (hostport.find(':') != colon) {
        config_error("IPv6 addresses must be written in brackets in server URL '" + shown + "'");
      }
      port = hostport.substr(colon + 1);
      if (port.empty()) config_error("missing port after ':' in server URL '" + shown + "'");
      hostport = hostport.substr(0, colon);
    }
    url.host = std::string(hostport);
  }
  if (url.host.empty()) config_error("missing host in server URL '" + shown + "'");
  // A host name is letters, digits, '.', '-' and '_' (an IPv4 address too): "-S=h:1" is no host
  // "=h". An IPv6 address in brackets was checked above.
  for (char c : url.host) {
    if (hostport.front() != '[' && !std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') {
      config_error("bad character in host of server URL '" + shown + "'");
    }
  }
  // Nor does a name or a part of one begin with '-': "-S -x" (an option where a server was meant)
  // would wait for ever for a host that cannot exist.
  if (hostport.front() != '[' && (url.host.front() == '-' || url.host.find(".-") != std::string::npos)) {
    config_error("bad host in server URL '" + shown + "' (a host name never begins with '-')");
  }
  if (!port.empty()) url.port = parse_number(port, 1, 65535, "port", shown);
}

// A scheme written without its "//" ("redis:/host", "redis:host", "redis//host", "redis:/pw@host"),
// which would otherwise be read as a bare HOST:PORT and refused for something else, or sent to the
// server as the user "redis" and a password. Not "redis:6379" (a host named redis), nor user
// information that may be meant ("redis:pw@host" is the user redis); shown without what comes
// before an '@'.
void refuse_scheme_without_slashes(std::string_view text) {
  const auto at = text.rfind('@');
  for (const auto& each : kSchemeForms) {
    std::string_view scheme = each.name;
    if (text.size() <= scheme.size() || text.substr(0, scheme.size()) != scheme) continue;
    std::string_view rest = text.substr(scheme.size());
    if (rest[0] != ':' && rest[0] != '/') continue;
    if (at != std::string_view::npos && !rest.starts_with(":/") && rest[0] != '/') return;
    if (rest[0] == ':' && rest.size() > 1 && rest.find_first_not_of("0123456789", 1) == std::string_view::npos) return;
    const std::string shown =
        at == std::string_view::npos ? std::string(text) : std::string(scheme) + ":***" + std::string(text.substr(at));
    const std::string form = scheme == "unix" ? "unix:///PATH[?db=N]"
                             : scheme.starts_with("sentinel")
                                 ? std::string(scheme) + "://S1[:PORT][,S2[:PORT]…]/MASTERNAME"
                             : scheme.starts_with("cluster") ? std::string(scheme) + "://N1[:PORT][,N2[:PORT]…]"
                                                             : std::string(scheme) + "://HOST[:PORT][/DB]";
    config_error("malformed server URL '" + shown + "' (expected " + form + ")");
  }
}

}  // namespace

std::string ServerUrl::redacted() const {
  return format(true);
}

std::string ServerUrl::without_password() const {
  return format(false);
}

std::string ServerUrl::format(bool mark_password) const {
  std::string out;
  for (const auto& form : kSchemeForms) {
    if (form.scheme == scheme && form.sentinel_tls == sentinel_tls && form.master_tls == master_tls &&
        form.cluster_tls == cluster_tls) {
      out = std::string(form.name) + "://";
      break;
    }
  }
  // "user:***@", "***@", and "user:@" for a user whose password comes from elsewhere ("user@"
  // would read as a password).
  if (user) out += percent_encode(*user) + ":";
  if (password && mark_password) out += "***";
  if (user || (password && mark_password)) out += "@";
  if (scheme == Scheme::Unix) {
    out += path;
    if (db != 0) out.append("?db=").append(std::to_string(db));
    return out;
  }
  if (scheme == Scheme::Sentinel) {
    for (std::size_t i = 0; i < sentinels.size(); ++i) {
      if (i > 0) out += ',';
      append_endpoint(out, sentinels[i].host, sentinels[i].port);
    }
    out.append("/").append(master_name);
    char sep = '?';
    if (db != 0) out.append(1, std::exchange(sep, '&')).append("db=").append(std::to_string(db));
    if (sentinel_password_file) out.append(1, sep).append("sentinel_password_file=").append(*sentinel_password_file);
    return out;
  }
  if (scheme == Scheme::Cluster) {
    for (std::size_t i = 0; i < seeds.size(); ++i) {
      if (i > 0) out += ',';
      append_endpoint(out, seeds[i].host, seeds[i].port);
    }
    return out;
  }
  append_endpoint(out, host, port);
  if (db != 0) out.append("/").append(std::to_string(db));
  return out;
}

ServerUrl ServerUrl::master_at(const std::string& at_host, int at_port) const {
  ServerUrl url;
  if (uses_tls()) url.scheme = Scheme::Tls;
  url.host = at_host;
  url.port = at_port;
  url.user = user;
  url.password = password;
  url.db = db;
  return url;
}

std::string ServerUrl::sentinel_address(std::size_t i) const {
  std::string out;
  append_endpoint(out, sentinels.at(i).host, sentinels.at(i).port);
  return out;
}

ServerUrl ServerUrl::sentinel(std::size_t i) const {
  ServerUrl url;
  if (sentinel_tls) url.scheme = Scheme::Tls;
  url.host = sentinels.at(i).host;
  url.port = sentinels.at(i).port;
  url.password = sentinel_password;
  return url;
}

ServerUrl ServerUrl::seed(std::size_t i) const {
  return master_at(seeds.at(i).host, seeds.at(i).port);
}

std::string ServerUrl::address() const {
  if (scheme == Scheme::Unix) return "unix:" + path;
  if (scheme == Scheme::Cluster) {
    std::vector<std::string> each;
    for (std::size_t i = 0; i < seeds.size(); ++i) each.push_back(seed(i).address().substr(4));
    std::sort(each.begin(), each.end());
    std::string out = "cluster:";
    for (std::size_t i = 0; i < each.size(); ++i) out += (i ? "," : "") + each[i];
    return out;
  }
  if (scheme == Scheme::Sentinel) {
    std::vector<std::string> each;
    for (std::size_t i = 0; i < sentinels.size(); ++i) each.push_back(sentinel(i).address().substr(4));
    std::sort(each.begin(), each.end());
    std::string out = "sentinel:" + master_name + "@";
    for (std::size_t i = 0; i < each.size(); ++i) out += (i ? "," : "") + each[i];
    return out;
  }
  std::string h = host;
  // Normalise textual forms of the same IP address ("::1" and "0:0::1").
  in6_addr a6{};
  in_addr a4{};
  if (inet_pton(AF_INET, host.c_str(), &a4) == 1) {
    h = ip_text(a4);
  } else if (inet_pton(AF_INET6, host.c_str(), &a6) == 1) {
    h = ip_text(a6);
  } else {
    for (char& c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return "tcp:" + h + ":" + std::to_string(port);
}

namespace {

// The scheme before "://" (empty for a bare HOST:PORT), removed from REST.
std::string take_scheme(std::string_view text, std::string_view& rest, ServerUrl& url) {
  auto scheme_end = rest.find("://");
  std::string scheme = scheme_end == std::string_view::npos ? "" : std::string(rest.substr(0, scheme_end));
  if (scheme_end != std::string_view::npos) rest.remove_prefix(scheme_end + 3);
  if (const SchemeForm* form = scheme_form(scheme)) {
    url.scheme = form->scheme;
    url.sentinel_tls = form->sentinel_tls;
    url.master_tls = form->master_tls;
    url.cluster_tls = form->cluster_tls;
  } else if (!scheme.empty()) {
    config_error("unknown scheme '" + scheme +
                 "://' in server URL (expected redis://, rediss://, unix://, sentinel://, sentinel+tls://, "
                 "sentinel+rediss://, cluster://, cluster+tls:// or HOST:PORT)");
  } else {
    refuse_scheme_without_slashes(text);
  }
  return scheme;
}

// unix:///PATH[?db=N]
void parse_unix_rest(std::string_view path, ServerUrl& url, const std::string& shown) {
  auto query = path.find('?');
  if (query != std::string_view::npos) {
    std::string_view q = path.substr(query + 1);
    path = path.substr(0, query);
    if (q.substr(0, 3) != "db=" || q.find('&') != std::string_view::npos)
      config_error("unknown query '" + std::string(q) + "' in server URL '" + shown + "' (only db=N)");
    url.db = parse_number(q.substr(3), 0, 1 << 20, "db", shown);
  }
  if (path.empty() || path.front() != '/')
    config_error("unix socket path must be absolute in server URL '" + shown + "'");
  url.path = std::string(path);
}

// HOST:PORT[/DB]
void parse_tcp_rest(std::string_view rest, bool bare, ServerUrl& url, const std::string& shown) {
  if (auto extra = rest.find_first_of("?#"); extra != std::string_view::npos) {
    config_error("unexpected '" + std::string(rest.substr(extra)) + "' in server URL '" + shown +
                 "' (a query is for unix:// only, as ?db=N; give the database as redis://HOST:PORT/DB)");
  }
  auto slash = rest.find('/');
  if (slash != std::string_view::npos && bare) {
    config_error("a bare HOST:PORT takes no path; use redis://HOST:PORT/DB in '" + shown + "'");
  }
  // The host first: in "redis:///0" it is the host that is missing, not the db that is wrong.
  parse_host_port(rest.substr(0, slash), url, shown);
  if (slash != std::string_view::npos) {
    std::string_view db = rest.substr(slash + 1);
    if (!db.empty()) url.db = parse_number(db, 0, 1 << 20, "db", shown);
  }
}

// ?db=N&sentinel_password_file=PATH of a sentinel:// URL.
void parse_sentinel_query(std::string_view query, ServerUrl& url, const std::string& shown) {
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (item.starts_with("db=")) {
      url.db = parse_number(item.substr(3), 0, 1 << 20, "db", shown);
    } else if (item.starts_with("sentinel_password_file=") && item.size() > 23) {
      url.sentinel_password_file = percent_decode(item.substr(23), "sentinel_password_file");
    } else {
      config_error("unknown query '" + std::string(item) + "' in server URL '" + shown +
                   "' (only db=N and sentinel_password_file=PATH)");
    }
  }
}

// S1[:PORT][,S2[:PORT]…]/MASTERNAME[?QUERY]
// H1[:PORT][,H2[:PORT]…] into OUT, each port DEFAULT_PORT unless given.
void parse_endpoints(std::string_view hosts, int default_port, std::vector<ServerUrl::Endpoint>& out,
                     const std::string& shown) {
  for (;;) {
    auto comma = hosts.find(',');
    ServerUrl one;
    one.port = default_port;
    parse_host_port(hosts.substr(0, comma), one, shown);
    out.push_back({one.host, one.port});
    if (comma == std::string_view::npos) break;
    hosts.remove_prefix(comma + 1);
  }
}

// N1[:PORT][,N2[:PORT]…][?db=0]: a cluster has database 0 alone, so any other is a mistake.
void parse_cluster_rest(std::string_view rest, ServerUrl& url, const std::string& shown) {
  if (auto query = rest.find('?'); query != std::string_view::npos) {
    std::string_view q = rest.substr(query + 1);
    rest = rest.substr(0, query);
    if (q.substr(0, 3) != "db=" || q.find('&') != std::string_view::npos)
      config_error("unknown query '" + std::string(q) + "' in server URL '" + shown + "' (only db=0)");
    if (parse_number(q.substr(3), 0, 1 << 20, "db", shown) != 0)
      config_error("a Redis Cluster has database 0 only, in server URL '" + shown + "'");
  }
  if (auto extra = rest.find_first_of("/#"); extra != std::string_view::npos) {
    config_error("unexpected '" + std::string(rest.substr(extra)) + "' in server URL '" + shown +
                 "' (expected cluster://N1[:PORT][,N2[:PORT]…])");
  }
  parse_endpoints(rest, 6379, url.seeds, shown);
}

void parse_sentinel_rest(std::string_view rest, ServerUrl& url, const std::string& shown) {
  if (auto query = rest.find('?'); query != std::string_view::npos) {
    parse_sentinel_query(rest.substr(query + 1), url, shown);
    rest = rest.substr(0, query);
  }
  auto slash = rest.find('/');
  if (slash == std::string_view::npos || slash + 1 == rest.size()) {
    config_error("missing /MASTERNAME in server URL '" + shown + "'");
  }
  url.master_name = std::string(rest.substr(slash + 1));
  if (url.master_name.find_first_of("/#") != std::string::npos) {
    config_error("bad master name in server URL '" + shown + "'");
  }
  // "sentinel://s1/m,h:6379": a standalone server after a Sentinel member that lost its scheme.
  if (url.master_name.find(',') != std::string::npos) {
    config_error("a ',' after the master name in server URL '" + shown +
                 "' (a server listed after a Sentinel member is written redis://HOST[:PORT])");
  }
  parse_endpoints(rest.substr(0, slash), 26379, url.sentinels, shown);
}

}  // namespace

ServerUrl parse_server_url(std::string_view text) {
  ServerUrl url;
  std::string_view rest = text;
  const std::string scheme = take_scheme(text, rest, url);
  if (text.empty()) config_error("empty server URL");
  parse_userinfo(rest, url);
  // What messages may show of TEXT: everything but the password.
  std::string shown = scheme.empty() ? "" : scheme + "://";
  if (url.user) shown += percent_encode(*url.user) + ":";
  if (url.password) shown += "***";
  if (url.user || url.password) shown += "@";
  shown += std::string(rest);

  if (url.scheme == ServerUrl::Scheme::Unix) {
    parse_unix_rest(rest, url, shown);
  } else if (url.scheme == ServerUrl::Scheme::Sentinel) {
    parse_sentinel_rest(rest, url, shown);
  } else if (url.scheme == ServerUrl::Scheme::Cluster) {
    parse_cluster_rest(rest, url, shown);
  } else {
    parse_tcp_rest(rest, scheme.empty(), url, shown);
  }
  return url;
}

namespace {

bool parses(const std::string& text) {
  try {
    parse_server_url(text);
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

std::vector<std::string> split_server_list(std::string_view text) {
  // At commas and white space, but not inside a URL's user information: a piece with an '@' and no
  // scheme, after a URL that is no server on its own and has no '@' yet, ends a password that holds
  // separators ("redis://:a,b@host"): it goes back onto that URL with what came between. Cut
  // apart, the password would be shown in the error about its first piece.
  struct Piece {
    std::string gap;  // the separators before it
    std::string text;
  };
  std::vector<Piece> pieces;
  Piece current;
  for (char c : text) {
    if (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (!current.text.empty()) pieces.push_back(std::exchange(current, Piece{}));
      current.gap.push_back(c);
    } else {
      current.text.push_back(c);
    }
  }
  if (!current.text.empty()) pieces.push_back(std::move(current));

  std::vector<std::string> out;
  std::optional<std::size_t> open;  // the URL in OUT whose user information has not ended yet
  std::string since_open;           // the separators and pieces after it
  for (const auto& p : pieces) {
    bool has_scheme = p.text.find("://") != std::string::npos;
    bool has_at = p.text.find('@') != std::string::npos;
    // A sentinel:// member's next sentinel, a cluster:// member's next seed (or the rest of its password).
    if (!has_scheme && !out.empty() && starts_member_with_seeds(out.back())) {
      out.back() += "," + p.text;
      open.reset();
      continue;
    }
    if (open && !has_scheme && has_at) {
      out.resize(*open + 1);
      out.back() += since_open + p.gap + p.text;
      open.reset();
      continue;
    }
    out.push_back(p.text);
    if (has_scheme) {
      // Open: no '@' yet, and not a server of its own ("redis://:hunter" has no host).
      open = has_at || parses(p.text) ? std::nullopt : std::optional<std::size_t>(out.size() - 1);
      since_open.clear();
    } else if (open) {
      since_open += p.gap + p.text;
    }
  }
  return out;
}

namespace {

// A cluster's seeds are its nodes: one shared by two Cluster members makes them one cluster. Returns
// each seed's address with the member it belongs to.
std::map<std::string, std::string> cluster_seeds(const std::vector<ServerUrl>& servers) {
  std::map<std::string, std::string> seeds;
  for (const auto& s : servers) {
    if (!s.is_cluster()) continue;
    for (std::size_t i = 0; i < s.seeds.size(); ++i) {
      auto [it, fresh] = seeds.emplace(s.seed(i).address(), s.redacted());
      if (!fresh && it->second != s.redacted()) {
        config_error("server " + s.redacted() + " shares the node " + s.seed(i).redacted() + " with " + it->second +
                     ": one cluster listed twice would count one vote twice");
      }
    }
  }
  return seeds;
}

}  // namespace

void check_distinct_addresses(const std::vector<ServerUrl>& servers) {
  std::set<std::string> seen;
  // Cluster seeds first, so that a plain server that is one is refused wherever it is listed.
  const auto seeds = cluster_seeds(servers);
  for (const auto& s : servers) {
    const std::string address = s.address();
    if (!seen.insert(address).second) {
      config_error("server " + s.redacted() + " is listed twice: it would count one vote twice");
    }
    if (auto it = seeds.find(address); it != seeds.end()) {
      config_error("server " + s.redacted() + " is a node of the cluster " + it->second +
                   ", listed as a member already: it would count one vote twice");
    }
    if (!s.is_sentinel()) continue;
    // One master asked of a sentinel twice is one group, however the two lists differ.
    for (std::size_t i = 0; i < s.sentinels.size(); ++i) {
      if (!seen.insert(s.master_name + "@" + s.sentinel(i).address()).second) {
        config_error("server " + s.redacted() + " names a Sentinel group listed already (master " + s.master_name +
                     " through " + s.sentinel_address(i) + "): it would count one vote twice");
      }
    }
  }
}

}  // namespace redlock
