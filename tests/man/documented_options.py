"""Every long option that cli/ defines, and every REDLOCK_* variable it reads or sets, must be in the
man page: run with the page's path, it names what is missing and fails. The completion tests use
cli_options() to hold the completion scripts to the same list.

The options are the rows of the option tables (`.flags = "-w,--wait"`, see cli/options.hpp), and
what is still registered with CLI11 by hand (set_version_flag, positionals)."""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.path.join(ROOT, "cli")


def _sources():
    for name in sorted(os.listdir(CLI)):
        if name.endswith((".cpp", ".hpp")):
            with open(os.path.join(CLI, name), encoding="utf-8") as f:
                yield f.read()


def cli_options():
    """The long options: the .flags of every row of an option table, and the first argument of
    add_option, add_flag and set_version_flag."""
    found = set()
    for text in _sources():
        rows = re.findall(r'\.flags\s*=\s*"([^"]+)"', text)
        for names in rows + re.findall(r'(?:add_option|add_flag|set_version_flag)\(\s*"([^"]+)"', text):
            found.update(n for n in names.split(",") if n.startswith("--"))
    return sorted(found)


def cli_variables():
    """The REDLOCK_* variables named anywhere in the front end's code."""
    found = set()
    for text in _sources():
        found.update(re.findall(r'"(REDLOCK_[A-Z_]+)"', text))
    return sorted(found)


def roff_text(path):
    """The page's words with roff's font changes and escapes taken out."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"\\f[BIRP]", "", text)
    return text.replace("\\-", "-").replace("\\e", "\\")


def mentions(text, word):
    return re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", text) is not None


def main(argv):
    if len(argv) != 2:
        print("usage: documented_options.py MAN_PAGE", file=sys.stderr)
        return 2
    text = roff_text(argv[1])
    options, variables = cli_options(), cli_variables()
    # A parser that finds nothing would pass everything: the front end has dozens of each.
    if len(options) < 30 or len(variables) < 30:
        print("found only %d options and %d variables in cli/" % (len(options), len(variables)))
        return 1
    missing = [w for w in options + variables if not mentions(text, w)]
    for word in missing:
        print("not in %s: %s" % (argv[1], word))
    print("%d passed, %d failed" % (len(options) + len(variables) - len(missing), len(missing)))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
