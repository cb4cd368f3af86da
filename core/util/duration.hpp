// Durations as the command line writes them: NUMBER[ms|s|m|h|d] or several such (1m30s), a bare number is seconds,
// fractions allowed ("0.5", "1.5s", "250ms").
#pragma once

#include <string_view>

#include "core/util/clock.hpp"

namespace redlock {

// The longest duration accepted anywhere (ten years): longer ones are surely a typo and
// would overflow deadline arithmetic.
inline constexpr Duration kMaxDuration = std::chrono::hours(24 * 365 * 10);

// Parses TEXT; throws a usage error naming WHAT ("--ttl") when it is not a duration.
// Negative values are refused here; callers decide whether zero is allowed.
Duration parse_duration(std::string_view text, std::string_view what);

// "1.5s", "250ms", "2m": a short form for messages.
std::string format_duration(Duration d);

}  // namespace redlock
