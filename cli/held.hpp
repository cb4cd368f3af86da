// What extend and release share: a lock held with a token, one script sent to every server, and
// one way to answer (the exit status, the line on stderr, the JSON object), whichever script ran.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/lock/quorum.hpp"
#include "core/lock/redlock.hpp"
#include "options.hpp"
#include "output.hpp"

namespace redlock::cli {

// The outcome of the script, as the answer needs it.
struct HeldOutcome {
  const char* done_key;     // the JSON's "extended" or "released"
  bool done;                // extended or released
  bool no_quorum;           // too few servers answered (69)
  bool not_a_lock = false;  // release --force met a key that cannot be a lock: an error, -q or not
  const std::string& message;
  const Tally& tally;
  Duration elapsed;
  const std::vector<ServerReport>& servers;
};

// Prints the answer of COMMAND on NAME (KEY): with --json one object (FIELDS adds the command's own
// after the reason), else the error or "NAME: not held" line on stderr. Returns the exit status:
// 0 done, 69 no quorum, 1 otherwise.
int answer_held(const GlobalOptions& global, const std::string& command, const std::string& name,
                const std::string& key, const HeldOutcome& outcome, const std::function<void(Json&)>& fields);

}  // namespace redlock::cli
