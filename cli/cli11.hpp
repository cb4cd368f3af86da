// CLI11, without the standard streams' start-up. CLI11's headers include <iostream>, whose static
// std::ios_base::Init builds cout, cin, cerr, clog and their wide twins with their locales before
// main: 49,000 instructions of every invocation, a seventh of `acquire -n`'s own. redlock writes to
// its descriptors itself; CLI11 writes to std::cout and std::cerr only in App::exit (help, version),
// which is called behind a StandardStreams. Everything else of <iostream> is declared here as the
// header does. Included instead of <CLI/CLI.hpp>, first, by the files that use CLI11.
#pragma once

#if defined(__GLIBCXX__) && !defined(_GLIBCXX_IOSTREAM)
#define _GLIBCXX_IOSTREAM 1
#include <istream>
#include <ostream>

// clang-format off
namespace std _GLIBCXX_VISIBILITY(default) {
_GLIBCXX_BEGIN_NAMESPACE_VERSION
extern istream cin;
extern ostream cout;
extern ostream cerr;
extern ostream clog;
extern wistream wcin;
extern wostream wcout;
extern wostream wcerr;
extern wostream wclog;
_GLIBCXX_END_NAMESPACE_VERSION
}  // namespace std
// clang-format on
#endif

#include <CLI/CLI.hpp>

namespace redlock::cli {

// The standard streams, built while one lives (and flushed when the last one goes): for the calls
// into CLI11 that print.
using StandardStreams = std::ios_base::Init;

}  // namespace redlock::cli
