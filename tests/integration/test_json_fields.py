"""The man page's JSON table lists every field that a command prints: each command runs with --json
against real servers, in the cases that add fields of their own (busy, not held, no quorum, a
signal, a re-entry, an error), and every field of its object, of its servers[] entries and of its
nested objects must have a row in the table that names that command. A row taken out of the
table must make the check fail."""

import json
import os
import re
import signal
import subprocess
import time

from harness import ROOT, ClusterTest, free_port, main, redlock, redlock_binary, spawn, wait_for

MAN = os.path.join(ROOT, "man", "redlock.1")
LOCK = {"acquire", "extend", "release", "status", "run"}
ALL = LOCK | {"doctor", "list", "elect", "--version"}
# The groups of the table: the object itself, and the objects and arrays inside it.
NESTED = {"quorum": "quorum", "holder": "holder", "error": "error"}
ARRAYS = {"servers": "servers[]", "checks": "checks[]", "holders": "holders[]", "locks": "locks[]",
          "queue": "queue[]"}


def table_rows(text):
    """{(group, field): the objects that carry it} from the JSON section's table (tbl)."""
    section = text[text.index(".SH JSON\n"):]
    lines = section[section.index(".TS\n"):section.index(".TE\n")].splitlines()
    rows, group, i = {}, "", 0
    while i < len(lines):
        line = lines[i]
        if line == ".T&" and lines[i + 1].startswith("lI s s"):
            heading = lines[i + 2]
            group = "" if heading == "top level" else heading
            i += 3
            continue
        if ";" in line and line.endswith(";T{"):
            field = line.split(";")[0]
            end = lines.index("T}", i)
            meaning = " ".join(lines[i + 1:end]).replace("\\-", "-")
            named = set(re.findall(r"\\fI(.*?)\\fP", meaning))
            objects = set()
            for word in named:
                objects |= ALL if word == "all" else LOCK if word == "lock" else {word} & ALL
            rows[(group, field)] = objects
            i = end
        i += 1
    return rows


def undocumented(obj, rows):
    """The fields of OBJ (a command's JSON) without a row that names its command: [(group, field, command)]."""
    command = "--version" if "redlock" in obj else obj.get("command")
    missing = []

    def check(group, fields):
        for field in fields:
            carriers = rows.get((group, field), set())
            # A command line without a command has a null command: any row will do.
            if not carriers or (command is not None and command not in carriers):
                missing.append((group, field, command))

    check("", obj)
    for name, group in NESTED.items():
        if isinstance(obj.get(name), dict):
            check(group, obj[name])
    for name, group in ARRAYS.items():
        for entry in obj.get(name) or []:
            check(group, entry)
    return missing


class JsonFields(ClusterTest):
    N = 3

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        with open(MAN, encoding="utf-8") as f:
            cls.man_text = f.read()
        cls.rows = table_rows(cls.man_text)
        cls.objects = []

    def json_of(self, result, code=None):
        """The object RESULT printed (the last line of stdout: run prints CMD's output first)."""
        if code is not None:
            self.assertEqual(result.code, code, result)
        obj = json.loads(result.stdout.strip().splitlines()[-1])
        self.objects.append(obj)
        return obj

    def rl_json(self, *args, code=None, **kw):
        return self.json_of(self.rl("--json", *args, **kw), code)

    def test_every_field_printed_is_in_the_table(self):
        self.assertGreater(len(self.rows), 60)  # a parser that finds nothing would pass everything
        self.lock_commands()
        self.run_command()
        self.failures()
        self.other_commands()
        self.rl_json("doctor", "--ttl", "1s")  # warnings: no persistence
        self.rl_json("--version", code=0)
        missing = []
        for obj in self.objects:
            missing += [m for m in undocumented(obj, self.rows) if m not in missing]
        self.maxDiff = None
        self.assertEqual(missing, [], "fields printed but not in the man page's JSON table")
        # The cases above reached the fields that only they print.
        printed = set().union(*(obj for obj in self.objects))
        self.assertLessEqual({"holder", "nested", "interrupted_by", "min_hold_ms", "forced", "error", "redlock",
                              "child_exit", "message", "reason", "checks", "holders", "slot", "locks", "terms", "queue",
                              "fairness"},
                             printed)

    def test_a_row_taken_out_of_the_table_is_missed(self):
        # The negative control: without the row of release's "forced", release's object fails.
        text = re.sub(r"\nforced;boolean;T\{\n.*?\nT\}", "", self.man_text, flags=re.S)
        self.assertNotEqual(text, self.man_text)
        obj = self.rl_json("release", "job", "--force", code=0)
        self.assertEqual(undocumented(obj, table_rows(text)), [("", "forced", "release")])
        self.assertEqual(undocumented(obj, self.rows), [])
        # And a row that does not name the command is no row for it.
        text = self.man_text.replace("\\fIrelease\\fP: \\-\\-force was given.", "\\fIstatus\\fP: \\-\\-force.")
        self.assertEqual(undocumented(obj, table_rows(text)), [("", "forced", "release")])

    def lock_commands(self):
        held = self.rl_json("acquire", "job", "--ttl", "20s", "--owner", "me", code=0)
        token = held["token"]
        self.rl_json("acquire", "-n", "job", code=75)  # busy: holder, reason, message
        self.rl_json("status", "job", code=0)
        for s in self.cluster.servers:  # a waiter queued: status lists it (queue[])
            with s.client() as c:
                c.call("ZADD", "{job}:redlock:waiters", "1", "0123456789abcdef")
                c.call("SET", "{job}:redlock:waiter:0123456789abcdef", "someone", "PX", "20000")
        self.assertEqual(len(self.rl_json("status", "job", code=0)["queue"]), 1)
        self.rl_json("acquire", "--fair", "-n", "other-job", code=0)  # fairness
        self.rl_json("extend", "job", "--token", token, code=0)
        self.rl_json("extend", "job", "--token", "not-it", code=1)
        self.rl_json("release", "job", "--token", "not-it", code=1)
        self.rl_json("release", "job", "--token", token, code=0)
        self.rl_json("status", "job", code=1)
        self.rl_json("release", "job", "--force", code=0)
        # A wait ended by a signal.
        self.rl("acquire", "job", "--ttl", "20s")
        waiter = spawn(["--json", "acquire", "job", "-w", "10s"], servers=self.cluster,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            time.sleep(0.3)
            waiter.send_signal(signal.SIGTERM)
            out, _ = waiter.communicate(timeout=10)
        finally:
            if waiter.poll() is None:
                waiter.kill()
                waiter.wait()
        obj = json.loads(out)
        self.assertEqual(obj.get("reason"), "interrupted", obj)
        self.objects.append(obj)
        self.rl("release", "job", "--force")

    def run_command(self):
        self.rl_json("run", "job", "--", "true", code=0)
        self.rl_json("run", "--min-hold", "10s", "job", "--", "true", code=0)
        self.rl_json("run", "-n", "job", "--", "true", code=75)  # busy while --min-hold keeps it
        self.rl("release", "job", "--force")
        self.rl_json("run", "job", "--", "/nonexistent/cmd", code=127)
        # Re-entries inside a run: nested.
        inner = redlock_binary()
        self.json_of(self.rl("run", "job", "--", inner, "--json", "acquire", "job"), 0)
        self.json_of(self.rl("run", "job", "--", inner, "--json", "run", "job", "--", "true"), 0)

    def other_commands(self):
        self.rl_json("acquire", "--limit", "2", "jobs", code=0)
        self.rl_json("acquire", "--limit", "2", "jobs", code=0)
        self.rl_json("acquire", "--limit", "2", "-n", "jobs", code=75)
        self.rl_json("status", "--limit", "2", "jobs", code=0)
        self.rl_json("run", "--limit", "3", "batch", "--", "true", code=0)
        self.rl_json("release", "--force", "--limit", "2", "jobs")
        self.rl("acquire", "job", "--owner", "me")
        self.rl_json("list", code=0)
        self.rl("release", "job", "--force")
        self.json_of(self.rl("--json", "elect", "--once", "lead", "--", "true"), 0)

    def failures(self):
        nobody = "127.0.0.1:%d" % free_port()
        for args in (["acquire", "-n", "job"], ["extend", "job", "--token", "t"], ["release", "job", "--token", "t"],
                     ["status", "job"], ["run", "-n", "job", "--", "true"]):
            self.json_of(redlock(["--json"] + args, servers=nobody), 69)
        self.json_of(redlock(["--json", "doctor"], servers=nobody), 69)
        self.rl_json("acquire", code=64)
        self.rl_json("--bogus", code=64)
        self.rl_json("acquire", "job", "--ttl", "0", code=64)


if __name__ == "__main__":
    main()
