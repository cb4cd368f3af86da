#include "core/util/glob.hpp"

namespace redlock {

namespace {

// Whether C matches the class that starts after the '[' at P; P is moved past its ']' (or to the
// end of a class left open, which Redis reads as closed there).
bool class_match(std::string_view pattern, std::size_t& p, char c) {
  bool negated = p < pattern.size() && pattern[p] == '^';
  if (negated) ++p;
  bool match = false;
  while (p < pattern.size() && pattern[p] != ']') {
    if (pattern[p] == '\\' && p + 1 < pattern.size()) {
      match = match || pattern[++p] == c;
    } else if (p + 2 < pattern.size() && pattern[p + 1] == '-') {
      auto lo = static_cast<unsigned char>(pattern[p]);
      auto hi = static_cast<unsigned char>(pattern[p + 2]);
      if (lo > hi) std::swap(lo, hi);
      const auto u = static_cast<unsigned char>(c);
      match = match || (u >= lo && u <= hi);
      p += 2;
    } else {
      match = match || pattern[p] == c;
    }
    ++p;
  }
  if (p < pattern.size()) ++p;  // the ']'
  return match != negated;
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view text) {
  // Iterative, with one point to come back to: the last '*' and where its match would end next.
  std::size_t p = 0, t = 0;
  std::size_t star = std::string_view::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = ++p;
      resume = t;
      continue;
    }
    std::size_t next = p;
    bool ok = p < pattern.size();
    if (ok && pattern[p] == '[') {
      ++next;
      ok = class_match(pattern, next, text[t]);
    } else if (ok && pattern[p] == '?') {
      ++next;
    } else if (ok) {
      if (pattern[p] == '\\' && p + 1 < pattern.size()) ++next;  // escaped: the next one as it is
      ok = pattern[next] == text[t];
      ++next;
    }
    if (ok) {
      p = next;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::string glob_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace redlock
