// One configured Redis master, parsed from the URL forms of the command line contract:
//   redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]   rediss://… (TLS)
//   unix://[[USER]:PASSWORD@]/PATH[?db=N]         [[USER]:PASSWORD@]HOST:PORT
//   sentinel://[[USER]:PASSWORD@]S1[:PORT][,S2[:PORT]…]/MASTERNAME[?db=N][&sentinel_password_file=PATH]
//   sentinel+tls://… (TLS to every sentinel and to the master)
//   sentinel+rediss://… (plain to the sentinels, TLS to the master)
//   cluster://[[USER]:PASSWORD@]N1[:PORT][,N2[:PORT]…][?db=0]   cluster+tls://… (TLS to every node)
// A sentinel:// URL is one member of the quorum: the master a Sentinel group names, found by asking
// its sentinels (port 26379 unless given) in turn. Its user and password are the master's; the
// sentinels' password is read from the file the query names, and is never part of the URL's text.
// A cluster:// URL is one member too: the master of a Redis Cluster that owns the lock's slot, found
// from the slot map its seed nodes (port 6379 unless given) give. A cluster has database 0 only.
// The user information is read as redis-cli reads it: "PASSWORD@" alone is a password, not a user.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

struct ServerUrl {
  enum class Scheme { Tcp, Tls, Unix, Sentinel, Cluster };
  struct Endpoint {
    std::string host;  // without brackets for IPv6
    int port = 0;
  };

  Scheme scheme = Scheme::Tcp;
  std::string host;  // without brackets for IPv6
  int port = 6379;
  std::string path;  // unix socket path
  std::optional<std::string> user;
  std::optional<std::string> password;
  int db = 0;
  // Sentinel only: the sentinels asked, the name of the master, and where their password is read
  // (the front end reads it into sentinel_password).
  std::vector<Endpoint> sentinels;
  std::string master_name;
  std::optional<std::string> sentinel_password_file;
  std::optional<std::string> sentinel_password;
  bool sentinel_tls = false;  // sentinel+tls://: the sentinels over TLS (and the master)
  bool master_tls = false;    // sentinel+tls:// and sentinel+rediss://: the master over TLS

  // Cluster only: the nodes first asked for the slot map, and whether every node is reached over
  // TLS (cluster+tls://).
  std::vector<Endpoint> seeds;
  bool cluster_tls = false;

  bool is_sentinel() const { return scheme == Scheme::Sentinel; }
  bool is_cluster() const { return scheme == Scheme::Cluster; }
  // Whether connections for this entry (its own, or its nodes') need TLS.
  bool uses_tls() const {
    return scheme == Scheme::Tls || cluster_tls || master_tls;  // sentinel_tls comes with master_tls
  }

  // The URL with the password shown as "***" ("redis://***@h:1", "redis://user:***@h:1"): the only
  // form that may be printed.
  std::string redacted() const;
  // The URL without its password, the user kept as "user:@": what may be handed on to a child
  // process, and parses back to the same server and user.
  std::string without_password() const;
  // What makes two entries the same server before connecting: "tcp:host:port" or "unix:path"
  // ("sentinel:NAME@S1,S2" for a Sentinel member, its sentinels' addresses sorted; "cluster:N1,N2" for
  // a Cluster member, its seeds' addresses sorted).
  std::string address() const;
  // A Sentinel member's master (or a Cluster member's node) at HOST:PORT, as a redis:// URL with the
  // member's credentials and db.
  ServerUrl master_at(const std::string& host, int port) const;
  // A Sentinel member's sentinel I, as a redis:// URL (rediss:// for sentinel+tls://) with the
  // sentinels' password.
  ServerUrl sentinel(std::size_t i) const;
  // A Cluster member's seed I, as a redis:// URL with the member's credentials.
  ServerUrl seed(std::size_t i) const;
  // Its HOST:PORT, as it may be printed.
  std::string sentinel_address(std::size_t i) const;

 private:
  std::string format(bool mark_password) const;
};

// RFC 3986 escapes for user information: percent_encode escapes what would end it or split a server
// list (':', '@', '/', ',', '%', white space, control characters); percent_decode throws a
// configuration error naming WHAT on a bad escape, without showing TEXT.
std::string percent_encode(std::string_view text);
std::string percent_decode(std::string_view text, std::string_view what);

// Throws a configuration error that says what is wrong with TEXT (without echoing a password).
ServerUrl parse_server_url(std::string_view text);

// Splits the REDLOCK_SERVERS / --servers value on commas and whitespace. The sentinels of a
// sentinel:// member (the seeds of a cluster:// member) continue until the next item that has a
// scheme ("sentinel://a,b/m,redis://c", "cluster://a,b,redis://c").
std::vector<std::string> split_server_list(std::string_view text);

// Throws a configuration error when two entries name the same address, two Sentinel members the
// same master name through a sentinel they share, two Cluster members a seed they share, or a
// server is a seed of a listed Cluster member.
void check_distinct_addresses(const std::vector<ServerUrl>& servers);

}  // namespace redlock
