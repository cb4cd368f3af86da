#include "core/doctor/doctor.hpp"

#include <cstdio>
#include <map>

#include "commands.hpp"
#include "core/util/duration.hpp"
#include "exit_codes.hpp"
#include "option_table.hpp"

namespace redlock::cli {

namespace {

struct DoctorCliOptions {
  std::string ttl = "30s";
};

const OptionRow<DoctorCliOptions> kDoctorOptions[] = {
    {.flags = "--ttl",
     .env = "REDLOCK_TTL",
     .takes_value = true,
     .type_name = "DUR",
     .help = "the longest TTL your locks use (uptime, persistence and clock checks)",
     .target = &DoctorCliOptions::ttl,
     .show_default = true},
};

std::string overall_name(const DoctorReport& r) {
  if (r.no_quorum) return "no_quorum";
  return r.verdict >= Verdict::Warn ? "warnings" : "fit";
}

int exit_status(const DoctorReport& r) {
  if (r.no_quorum) return exit_code::kNoQuorum;
  return r.verdict >= Verdict::Warn ? exit_code::kWarnings : exit_code::kOk;
}

// TEXT with control characters escaped (it may quote a prefix or a server's error), whole: the
// summaries are longer than printable() lets through.
std::string escaped(const std::string& text) {
  std::string out;
  for (std::size_t start = 0; start < text.size(); start += 80) out += printable(text.substr(start, 80));
  return out;
}

// TEXT folded at word boundaries to lines of at most WIDTH characters, each starting with INDENT.
void print_wrapped(const std::string& text, const std::string& indent, std::size_t width) {
  std::string line;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(start, end - start);
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
      std::printf("%s%s\n", indent.c_str(), line.c_str());
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  if (!line.empty()) std::printf("%s%s\n", indent.c_str(), line.c_str());
}

// A server as a line names it: a Cluster member's master by its address too.
std::string server_name(const ServerFacts& f) {
  return f.node.empty() ? f.server : f.server + " (" + f.node + ")";
}

void print_plain(const DoctorReport& r, const DoctorOptions& options) {
  std::printf("redlock doctor: %zu servers, a quorum is %zu; --ttl %s, --timeout %s\n\n", r.reachable.total,
              r.reachable.needed(), format_duration(options.ttl).c_str(), format_duration(options.timeout).c_str());
  for (const auto& c : r.checks) {
    std::printf("%-8s %-15s %s\n", std::string(verdict_name(c.verdict)).c_str(), c.name.c_str(),
                escaped(c.summary).c_str());
    for (const auto& note : c.notes) {
      std::printf("%25s- %s: %s\n", "", server_name(r.servers[note.server]).c_str(), escaped(note.text).c_str());
    }
    if (!c.advice.empty()) print_wrapped(c.advice, std::string(25, ' '), 100);
  }
  std::string verdict = overall_name(r);
  if (verdict == "no_quorum") verdict = "no quorum";
  std::printf("\nverdict: %s (exit %d)\n", verdict.c_str(), exit_status(r));
}

// The seed sentinels of the Sentinel members, each address once, as the servers of a transport of
// their own, with the sentinels' password only (never the members' fallback password), over TLS
// for sentinel+tls:// members.
struct Sentinels {
  std::unique_ptr<Transport> transport;
  std::vector<SentinelSeed> seeds;
};

Sentinels connect_sentinels(const GlobalOptions& global, Duration timeout) {
  Sentinels out;
  std::vector<ServerUrl> urls;
  std::map<std::string, std::size_t> by_address;
  const std::vector<ServerUrl> servers = resolve_credentials(global).servers;
  for (std::size_t i = 0; i < servers.size(); ++i) {
    if (!servers[i].is_sentinel()) continue;
    for (std::size_t k = 0; k < servers[i].sentinels.size(); ++k) {
      ServerUrl url = servers[i].sentinel(k);
      auto [it, fresh] = by_address.emplace(url.address(), urls.size());
      if (fresh) {
        urls.push_back(std::move(url));
        out.seeds.push_back({servers[i].sentinel_address(k), {}});
      }
      out.seeds[it->second].questions.push_back({i, servers[i].master_name});
    }
  }
  if (urls.empty()) return out;
  TransportOptions t;
  t.timeout = timeout;
  t.tls = TlsOptions{global.tls_ca, global.tls_cert, global.tls_key, global.tls_server_name, global.tls_insecure};
  out.transport = std::make_unique<Transport>(std::move(urls), std::move(t));
  return out;
}

Json json_sentinels(const std::optional<SentinelFacts>& s) {
  if (!s) return nullptr;
  Json j;
  j["listed"] = s->listed;
  j["answered"] = s->answered;
  j["quorum_ok"] = s->quorum_ok;
  j["no_quorum"] = s->no_quorum.size();
  j["replicas"] = s->replicas ? Json(*s->replicas) : Json(nullptr);
  return j;
}

Json json_optional_ms(const std::optional<Duration>& d) {
  return d ? Json(json_ms(*d)) : Json(nullptr);
}

// The master of a Cluster member that a server entry stands for; null for the others.
Json json_resolved(const ServerFacts& f) {
  return f.node.empty() ? Json(nullptr) : Json(f.node);
}

// Server I of the report, as servers[] has it.
Json json_server(const DoctorReport& r, std::size_t i) {
  const ServerFacts& f = r.servers[i];
  Json s;
  s["server"] = f.server;
  s["member"] = f.server;
  s["resolved"] = json_resolved(f);
  s["reachable"] = f.reachable;
  s["duplicate"] = f.duplicate;
  s["error"] = f.error.empty() ? Json(nullptr) : Json(f.error);
  s["first_latency_ms"] = json_optional_ms(f.first_latency);
  s["latency_ms"] = json_optional_ms(f.round_trip);
  s["role"] = f.role ? Json(*f.role) : Json(nullptr);
  s["replicas"] = f.role ? Json(f.replicas) : Json(nullptr);
  s["run_id"] = f.run_id ? Json(*f.run_id) : Json(nullptr);
  s["redis_version"] = f.version ? Json(*f.version) : Json(nullptr);
  s["uptime_s"] = f.uptime_s ? Json(*f.uptime_s) : Json(nullptr);
  s["aof_enabled"] = f.aof ? Json(*f.aof) : Json(nullptr);
  s["appendfsync"] = f.appendfsync ? Json(*f.appendfsync) : Json(nullptr);
  s["clock_offset_ms"] = r.skew ? json_optional_ms(r.skew->offsets[i]) : Json(nullptr);
  s["acl_denied"] = f.denied;
  s["fence_keys"] = f.fence_keys ? Json(*f.fence_keys) : Json(nullptr);
  s["fence_keys_complete"] = f.fence_keys ? Json(f.fence_scan_complete) : Json(nullptr);
  s["sentinels"] = json_sentinels(f.sentinels);
  s["cluster_state"] = f.cluster_state ? Json(*f.cluster_state) : Json(nullptr);
  return s;
}

Json json_report(const DoctorReport& r, const DoctorOptions& options) {
  Json j;
  j["version"] = 1;
  j["command"] = "doctor";
  j["ttl_ms"] = whole_ms(options.ttl);
  j["timeout_ms"] = json_ms(options.timeout);
  j["probe_key"] = options.probe_key;
  j["quorum"] = json_quorum(r.reachable);
  if (r.skew) {
    j["clock_skew_ms"] = json_ms(r.skew->skew);
    j["clock_uncertainty_ms"] = json_ms(r.skew->uncertainty);
  } else {
    j["clock_skew_ms"] = nullptr;
    j["clock_uncertainty_ms"] = nullptr;
  }
  auto servers = Json::array();
  for (std::size_t i = 0; i < r.servers.size(); ++i) servers.push_back(json_server(r, i));
  j["servers"] = servers;
  auto checks = Json::array();
  for (const auto& c : r.checks) {
    Json check;
    check["check"] = c.name;
    check["verdict"] = verdict_name(c.verdict);
    check["summary"] = c.summary;
    check["advice"] = c.advice.empty() ? Json(nullptr) : Json(c.advice);
    auto notes = Json::array();
    for (const auto& note : c.notes) {
      const ServerFacts& f = r.servers[note.server];
      notes.push_back({{"server", f.server},
                       {"member", f.server},
                       {"resolved", json_resolved(f)},
                       {"verdict", verdict_name(note.verdict)},
                       {"detail", note.text}});
    }
    check["servers"] = notes;
    checks.push_back(std::move(check));
  }
  j["checks"] = checks;
  j["verdict"] = overall_name(r);
  j["exit_status"] = exit_status(r);
  return j;
}

int run_doctor_command(const DoctorCliOptions& o, const GlobalOptions& global) {
  DoctorOptions options;
  options.ttl = ttl_option(o.ttl, "--ttl");
  options.timeout = request_timeout(global);
  options.probe_key = doctor_probe_key(global.prefix);
  options.prefix = global.prefix;
  options.member_wait_replicas = member_wait(global);
  auto transport = connect_servers(global);
  for (const auto& line : setting_origins(global)) verbose(global, 1, line);
  Sentinels sentinels = connect_sentinels(global, options.timeout);
  std::optional<SentinelSeeds> seeds;
  if (sentinels.transport) seeds.emplace(SentinelSeeds{*sentinels.transport, sentinels.seeds});
  DoctorReport report = run_doctor(*transport, options, seeds ? &*seeds : nullptr);
  transport->flush(Clock::now() + options.timeout);

  const std::string unanswered = "no quorum: " + servers_text(report.reachable.yes, report.reachable.total) +
                                 " answered; " + std::to_string(report.reachable.needed()) + " must answer";
  if (global.json) {
    Json j = json_report(report, options);
    if (report.no_quorum) report_error(&j, exit_code::kNoQuorum, unanswered);
    print_json(j);
  } else {
    print_plain(report, options);
    if (report.no_quorum) report_error(nullptr, exit_code::kNoQuorum, unanswered);
  }
  return exit_status(report);
}

}  // namespace

void setup_doctor(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto o = std::make_shared<DoctorCliOptions>();
  Subcommand sub(app, "doctor", "check that the servers suit Redlock, with a verdict per check");
  sub.rows(*o, std::span<const OptionRow<DoctorCliOptions>>(kDoctorOptions), global);
  sub.on_parsed([o, &global, &action] { action = [o, &global] { return run_doctor_command(*o, global); }; });
}

}  // namespace redlock::cli
