#!/usr/bin/python3
"""The guarded critical section of the fault-injection suite: a read-modify-write of a resource
(a separate redis-server) that the lock is supposed to protect.

Run by `redlock run` in each worker (and called in-process by the workers that use acquire/release
instead), it appends to the worker's JSONL history:
  enter  when it starts believing it holds the lock (CLOCK_MONOTONIC ns, pid, fence, token)
  write  what it read and what the resource answered to its two writes
  exit   when it stops touching the resource (normally, or from a signal handler)

The resource holds two counters. Both are read together, then, after a pause, written back plus one:
  plain   unfenced: the write is always accepted (a resource that trusts the lock alone)
  fenced  through examples/fenced-write.lua, which refuses a fence lower than one already accepted
Each accepted write is logged in the resource ("FENCE WHO"), so the checkers see the resource's own
order of writes. With mutual exclusion, each counter ends equal to the number of its accepted writes.

Environment (set by the worker; redlock passes it on to its command):
  FAULT_HISTORY   the worker's JSONL history     FAULT_WHO       "W:N" (worker, cycle)
  FAULT_RESOURCE  host:port of the resource      FAULT_HOLD_MS   the pause between read and write
  FAULT_MARKER    a file that exists while inside (the nemeses look for holders there)
  FAULT_IGNORE    "1": ignore TERM, INT and HUP (a holder that will not stop before its write)
"""

import os
import sys
import time

# One of these starts in every lock cycle, so it loads only what loads fast: the C modules below,
# not json, socket and signal, whose imports (re, enum, selectors) cost about 15 ms of CPU a start.
# Hence its own RESP client (Conn) where the other tests use redis-py: `python3 -S guarded.py`
# takes 13.6 ms of CPU a start, and 134 ms with `import redis` (redis-py 4.3.4, which pulls in
# asyncio and ssl; perf stat -e task-clock, 50 starts each), about as long as a whole lock cycle.
import _signal
import _socket

HERE = os.path.dirname(os.path.abspath(__file__))
RECIPE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "fenced-write.lua")


SIGNAL_NAMES = {getattr(_signal, n): n for n in ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")}


def to_json(v):
    """JSON text of None, bools, numbers, strings, lists and dicts (what the history records hold)."""
    if v is None or v is True or v is False:
        return {None: "null", True: "true", False: "false"}[v]
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        # Quotes, backslashes and control characters as \uXXXX: valid JSON, and short to write.
        return '"%s"' % "".join(c if c >= " " and c not in '"\\' else "\\u%04x" % ord(c) for c in v)
    if isinstance(v, (list, tuple)):
        return "[%s]" % ",".join(to_json(x) for x in v)
    if isinstance(v, dict):
        return "{%s}" % ",".join("%s:%s" % (to_json(str(k)), to_json(x)) for k, x in v.items())
    raise TypeError("no JSON for %r" % type(v))


def append(path, rec):
    """One JSON line, written with a single write(2) on an O_APPEND descriptor: lines written by a
    worker and by its child never interleave."""
    data = (to_json(rec) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _fenced_script():
    # The project's recipe, unchanged, as a function; around it only the resource's write log.
    with open(RECIPE) as f:
        recipe = f.read()
    return ("local function recipe(KEYS, ARGV)\n" + recipe + "\nend\n"
            "local r = recipe({KEYS[1], KEYS[2]}, {ARGV[1], ARGV[2]})\n"
            "if type(r) == 'table' and r.ok then\n"
            "  redis.call('RPUSH', KEYS[3], ARGV[1] .. ' ' .. ARGV[3])\n"
            "else\n"
            "  redis.call('RPUSH', KEYS[4], ARGV[1] .. ' ' .. ARGV[3])\n"
            "end\n"
            "return r\n")


FENCED_SCRIPT = _fenced_script()
PLAIN_SCRIPT = ("redis.call('SET', KEYS[1], ARGV[2])\n"
                "redis.call('RPUSH', KEYS[2], ARGV[1] .. ' ' .. ARGV[3])\n"
                "return redis.status_reply('OK')\n")
FENCED_KEYS = ("fenced", "fenced:fence", "fenced:log", "fenced:rejected")
PLAIN_KEYS = ("plain", "plain:log")


class ReplyError(Exception):
    pass


class Conn:
    """The least RESP client that does: one command, one reply."""

    def __init__(self, address, timeout=5.0):
        host, port = address.rsplit(":", 1)
        self.sock = _socket.socket(_socket.AF_INET6 if ":" in host else _socket.AF_INET, _socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect((host.strip("[]"), int(port)))
        self.buf = b""

    def close(self):
        self.sock.close()

    def call(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))
        return self._read()

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("resource closed the connection")
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _read(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise ReplyError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._fill()
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise ReplyError("bad reply %r" % line)


def read_counters(conn):
    plain, fenced = conn.call("MGET", "plain", "fenced")
    return int(plain or 0), int(fenced or 0)


def write_counters(conn, fence, who, plain, fenced):
    """Writes plain+1 (always accepted) and fenced+1 (through the fence check). Returns what the
    resource answered to each: "OK" or the error text (e.g. "STALE fence 5 is older than 7")."""
    answers = []
    for script, keys, value in ((PLAIN_SCRIPT, PLAIN_KEYS, plain + 1), (FENCED_SCRIPT, FENCED_KEYS, fenced + 1)):
        try:
            answers.append(conn.call("EVAL", script, len(keys), *keys, fence, value, who))
        except ReplyError as e:
            answers.append(str(e))
    return answers


def critical_section(history, who, fence, token, resource, hold_s, marker=None, deadline_ns=None, extra=None,
                     write=True):
    """The read-modify-write, with its enter/write/exit records. DEADLINE_NS (monotonic): a careful
    client's own validity deadline; past it (minus a margin) the write is skipped. WRITE false: a
    reader, which reads and writes nothing."""
    w, n = who.split(":")
    base = {"w": int(w), "n": int(n)}
    enter = dict(base, ev="enter", t=time.monotonic_ns(), pid=os.getpid(), fence=fence, token=token)
    enter.update(extra or {})
    append(history, enter)
    if marker:
        with open(marker, "w") as f:
            f.write("%d %d %s\n" % (os.getpid(), os.getpgid(0), n))
    conn = Conn(resource)
    try:
        plain, fenced = read_counters(conn)
        time.sleep(hold_s)
        if not write:
            pass
        elif deadline_ns is not None and time.monotonic_ns() > deadline_ns - 20_000_000:
            append(history, dict(base, ev="skip", t=time.monotonic_ns(), why="validity nearly over"))
        else:
            answers = write_counters(conn, fence, who, plain, fenced)
            append(history, dict(base, ev="write", t=time.monotonic_ns(), fence=fence, plain=plain, fenced=fenced,
                                 plain_answer=answers[0], fenced_answer=answers[1]))
    finally:
        conn.close()
        # The exit record comes last: until it is written, the holder may still touch the resource.
        append(history, dict(base, ev="exit", t=time.monotonic_ns(), how="end"))
        if marker:
            try:
                os.unlink(marker)
            except OSError:
                pass


def main():
    env = os.environ
    history, who, marker = env["FAULT_HISTORY"], env["FAULT_WHO"], env.get("FAULT_MARKER")
    w, n = who.split(":")

    def on_signal(sig, frame):
        append(history, {"w": int(w), "n": int(n), "ev": "exit", "t": time.monotonic_ns(), "how": "signal",
                         "sig": SIGNAL_NAMES.get(sig, str(sig))})
        if marker:
            try:
                os.unlink(marker)
            except OSError:
                pass
        os._exit(128 + sig)

    for sig in SIGNAL_NAMES:
        _signal.signal(sig, on_signal)
    if env.get("FAULT_IGNORE") == "1":
        for sig in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP):
            _signal.signal(sig, _signal.SIG_IGN)
    # A reader of the shared mode reads the counters and writes nothing.
    reader = env.get("FAULT_READER") == "1"
    critical_section(history, who, int(env["REDLOCK_FENCE"]), env["REDLOCK_TOKEN"], env["FAULT_RESOURCE"],
                     int(env.get("FAULT_HOLD_MS", "20")) / 1000.0, marker=marker,
                     extra=dict({"ttl_ms": int(env.get("REDLOCK_TTL_MS", "0"))},
                                **({"slot": int(env["REDLOCK_SLOT"])} if env.get("REDLOCK_SLOT") else {}),
                                **({"reader": True} if reader else {})),
                     write=not reader)


if __name__ == "__main__":
    sys.exit(main())
