// The settings that core's messages refer to (a TTL too short for a check, a CA file that cannot
// be loaded). Core names them in plain words; a front end gives the names its users know them by
// (a command line's flags) once, with name_settings(), so that core knows nothing of its options.
#pragma once

#include <string>

namespace redlock {

enum class Setting { Ttl, Timeout, TlsCa, TlsCert, TlsKey, TlsServerName };

// The name of S in messages: the front end's, or core's plain words.
std::string setting_name(Setting s);
// Sets how settings are named from now on (nullptr: core's plain words).
void name_settings(std::string (*namer)(Setting));

}  // namespace redlock
