"""No function in core/ or cli/ is longer than LIMIT lines (its body, braces included).

A brace-matching count, not a parser: strings, characters and comments are blanked out; a brace
that opens after a parenthesis at namespace or class level opens a function body (lambdas and
blocks inside it count as its lines). Prints every function over the limit and exits 1 if any.
    function_lengths.py ROOT [--limit N] [--list]   (--list: every function, longest first)
"""

import argparse
import os
import re
import sys

SCOPES = re.compile(r"\b(namespace|class|struct|union|enum)\b[^;(){}]*$")


def blank(text):
    """TEXT with comments, string and character literals replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (j + 1 - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """(name, first line, length in lines) of every function body in PATH."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = blank(f.read())
    found, stack, head_start = [], [], 0
    for i, c in enumerate(text):
        if c == "{":
            head = text[head_start:i]
            in_function = any(kind == "function" for kind, _, _ in stack)
            if in_function:
                kind = "block"
            elif SCOPES.search(head.strip()) or "(" not in head or head.strip().endswith("="):
                kind = "scope"
            else:
                kind = "function"
            name = head.split("(")[0].split()[-1] if kind == "function" and head.split("(")[0].split() else "?"
            stack.append((kind, i, name))
            head_start = i + 1
        elif c == "}":
            if stack:
                kind, start, name = stack.pop()
                if kind == "function":
                    first = text.count("\n", 0, start) + 1
                    last = text.count("\n", 0, i) + 1
                    found.append((name, first, last - first + 1))
            head_start = i + 1
        elif c == ";":
            head_start = i + 1
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--limit", type=int, default=60)
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    rows = []
    for folder in ("core", "cli"):
        for dirpath, _, files in os.walk(os.path.join(a.root, folder)):
            for name in sorted(files):
                if name.endswith((".cpp", ".hpp")):
                    path = os.path.join(dirpath, name)
                    rows += [(length, os.path.relpath(path, a.root), line, fn) for fn, line, length in functions(path)]
    rows.sort(reverse=True)
    if a.list:
        for length, path, line, fn in rows:
            print("%4d  %s:%d  %s" % (length, path, line, fn))
        return 0
    over = [r for r in rows if r[0] > a.limit]
    for length, path, line, fn in over:
        print("%s:%d: %s is %d lines (limit %d)" % (path, line, fn, length, a.limit))
    print("%d functions, the longest %d lines; %d over %d" % (len(rows), rows[0][0] if rows else 0, len(over), a.limit))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
