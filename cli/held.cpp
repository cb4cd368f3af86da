#include "held.hpp"

#include "exit_codes.hpp"

namespace redlock::cli {

namespace {

const char* reason(const HeldOutcome& r) {
  return r.not_a_lock ? "not_a_lock" : r.no_quorum ? "no_quorum" : "not_held";
}

void print_json_answer(const std::string& command, const std::string& name, const std::string& key,
                       const HeldOutcome& r, const std::function<void(Json&)>& fields) {
  Json j = json_head(command, name, key);
  j[r.done_key] = r.done;
  if (!r.done) j["reason"] = reason(r);
  fields(j);
  j["elapsed_ms"] = json_ms(r.elapsed);
  j["quorum"] = json_quorum(r.tally);
  if (!r.message.empty()) j["message"] = r.message;
  j["servers"] = json_servers(r.servers);
  if (r.no_quorum) no_quorum(&j, name, "no quorum: " + r.message);
  if (r.not_a_lock) report_error(&j, exit_code::kNotHeld, printable(name) + ": " + r.message);
  print_json(j);
}

}  // namespace

int answer_held(const GlobalOptions& global, const std::string& command, const std::string& name,
                const std::string& key, const HeldOutcome& r, const std::function<void(Json&)>& fields) {
  if (global.json) {
    print_json_answer(command, name, key, r, fields);
  } else if (r.not_a_lock) {
    report_error(nullptr, exit_code::kNotHeld, printable(name) + ": " + r.message);
  } else if (r.no_quorum) {
    no_quorum(nullptr, name, "no quorum: " + r.message);
  } else if (!r.done) {
    say(global, name, r.message);  // not held is an answer, not an error: -q keeps it quiet
  }
  if (r.done) return exit_code::kOk;
  return r.no_quorum ? exit_code::kNoQuorum : exit_code::kNotHeld;
}

}  // namespace redlock::cli
