// How results and diagnostics leave the process: the answer on stdout (plain for scripts, one JSON
// object with --json), and every line on stderr through the diagnostics below, which alone decide
// what -q, -v and --json let through.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/lock/quorum.hpp"
#include "core/lock/redlock.hpp"
#include "core/util/clock.hpp"
#include "core/util/text.hpp"
#include "options.hpp"

namespace redlock::cli {

// JSON objects keep the order their keys were added in: version and command first.
using Json = nlohmann::ordered_json;

// NAME as it may appear in a one-line message: control characters escaped, long names cut.
std::string printable(const std::string& text);

// A lock's TTL as status and list show it: "29.5s", "no expiry" (−1), "-" (none).
std::string ttl_text(std::int64_t ttl_ms);
// UNIX_MS as an ISO 8601 UTC time to the second ("2024-05-01T12:00:00Z").
std::string wall_time(std::int64_t unix_ms);

// Diagnostics on stderr, each "redlock: ..." on a line of its own.
// A warning, unless -q.
void warn(const GlobalOptions& options, const std::string& message);
// With -v (LEVEL 1) or -vv (2), unless -q.
void verbose(const GlobalOptions& options, int level, const std::string& message);
// With -vv: what each server answered, and how fast, a line each. Whatever the verbosity (not
// with -q), a warning line for each server that is a replica: it never counts as a vote.
void verbose_servers(const GlobalOptions& options, const std::vector<ServerReport>& servers);
// "NAME: WHAT": a command's answer that is no error (busy, not held), unless -q or --json.
void say(const GlobalOptions& options, const std::string& name, const std::string& what);
// An error: one line on stderr, "redlock: error: LINE", whatever the format, and in ANSWER (when
// given: the command's JSON object) the "error" every error's JSON carries. Returns CODE.
int report_error(Json* answer, int code, const std::string& line);
// The "error" member of a JSON answer.
Json error_json(int code, const std::string& message);
// Too few servers answered for NAME (69): report_error with "NAME: WHAT", and ANSWER's reason
// no_quorum.
int no_quorum(Json* answer, const std::string& name, const std::string& what);

// The JSON skeleton every command prints: version, command, name, key.
Json json_head(const std::string& command, const std::string& name, const std::string& key);
// In the status of a semaphore or a shared lock, the fields of a mutex's status that such a lock
// keeps per holder (holders[], writer, readers[]): present as every status has them, token,
// ttl_ms, owner and since null, queue empty.
void json_no_single_holder(Json& status);
Json json_servers(const std::vector<ServerReport>& servers);
Json json_quorum(const Tally& tally);
// "2 of 3 servers (1 not waited for)": the servers that said yes, and those not waited for.
std::string votes_text(const Tally& tally);
// "no quorum: only 0 of 3 servers answered; first failure: URL: WHY": a read short of a quorum,
// with why the first server that failed did (a refusal is a failure, not silence).
std::string unanswered_text(const Tally& tally, const std::vector<ServerReport>& servers);
double json_ms(Duration d);

// OBJECT as one line of text. Names and values are bytes: what is not valid UTF-8 is written as
// U+FFFD, so that a binary name never breaks the output.
std::string json_text(const Json& object);
// One line on stdout, written out at once; false (errno set) when it could not be (stdout closed,
// a full disk). print_json prints json_text(OBJECT).
bool print_json(const Json& object);
bool print_line(const std::string& line);

}  // namespace redlock::cli
