// The servers the global options name, with their credentials and TLS settings: the transport
// every command talks through, and what `run` hands on to nested calls.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/net/server_url.hpp"
#include "core/net/transport.hpp"
#include "core/util/fd.hpp"
#include "options.hpp"

namespace redlock::cli {

// The servers from --servers, else REDLOCK_SERVERS (also from the configuration file), else
// redis://127.0.0.1:6379; checked for duplicate addresses. Throws configuration errors.
std::vector<ServerUrl> configured_servers(const GlobalOptions& options);

// The configured servers with their passwords, and the user and password of those whose URL names
// none. A server's password: its URL's, else that of the enclosing run's URL for the same address
// (REDLOCK_PASSWORD_FD). Else --password-file, REDLOCK_PASSWORD, the enclosing run's password
// (REDLOCK_PASSWORD_FD), the configuration file's REDLOCK_PASSWORD, in this order.
struct Credentials {
  std::vector<ServerUrl> servers;
  std::optional<std::string> user;
  std::optional<std::string> password;
};
Credentials resolve_credentials(const GlobalOptions& options);

// The transport for the configured servers, with credentials and TLS settings resolved (password
// file permissions checked, REDLOCK_PASSWORD read). Warns once about --tls-insecure, and that no
// servers are configured when none are (unless -q).
std::unique_ptr<Transport> connect_servers(const GlobalOptions& options);

// --member-wait as a number of replicas; nullopt when not given (by the master's replicas).
std::optional<int> member_wait(const GlobalOptions& options);

// For `run`'s child: a sealed memfd holding the passwords of CREDENTIALS, not closed on exec, whose
// number goes into the child's REDLOCK_PASSWORD_FD, so that a nested redlock authenticates as
// this one does with no secret in the environment or on a command line. Invalid without passwords.
Fd password_descriptor(const Credentials& credentials);

// Why the enclosing run's REDLOCK_PASSWORD_FD could not be read; empty when it could (or there is none).
const std::string& inherited_password_problem();

// Where the settings that reach the servers came from (servers, password, user, timeout, prefix):
// the command line, the environment, the configuration file (PATH:LINE) or the default; a line each.
std::vector<std::string> setting_origins(const GlobalOptions& options);

}  // namespace redlock::cli
