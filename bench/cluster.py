"""The servers of scripts/bench: real redis-server processes on free loopback ports, started from a
throw-away directory, killed by their process id when the bench ends (and by the kernel if the bench
itself is killed: each server gets PR_SET_PDEATHSIG), read with redis-py (Debian's python3-redis,
one of the bench's references already).

Kept apart from tests/integration/harness.py on purpose: the bench must not break when the tests'
helpers change, and it must not leave servers behind when a time limit kills it. It reads no raw
replies, so redis-py's own commands serve (ping, script_load, info, pubsub_numsub, exists).
"""

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


def die_with_parent():
    """A preexec_fn: the process is killed when the bench (its parent) dies."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


_handed_out = set()


def free_port():
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _handed_out:
            _handed_out.add(port)
            return port
    raise RuntimeError("no free loopback port")


class Server:
    def __init__(self, workdir, index):
        self.dir = os.path.join(workdir, "s%d" % index)
        self.port = None
        self.proc = None
        self.frozen = False

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def start(self, timeout=10.0):
        os.makedirs(self.dir, exist_ok=True)
        for _ in range(3):
            self.port = free_port()
            self.proc = subprocess.Popen(
                ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", self.dir, "--logfile", os.path.join(self.dir, "log"), "--daemonize", "no"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                preexec_fn=die_with_parent)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    with self.client() as c:
                        c.ping()
                    return self
                except (redis.ConnectionError, redis.TimeoutError):
                    time.sleep(0.02)
            if self.proc.poll() is None:
                self.kill()
                raise RuntimeError("redis-server on port %d did not answer within %.0fs" % (self.port, timeout))
            self.proc.wait()
            if "Address already in use" not in self._log():
                raise RuntimeError("redis-server exited at start: %s" % self._log())
        raise RuntimeError("redis-server found no free port")

    def _log(self):
        try:
            with open(os.path.join(self.dir, "log")) as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def client(self):
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5.0, socket_connect_timeout=5.0)

    def freeze(self):
        os.kill(self.proc.pid, signal.SIGSTOP)
        self.frozen = True

    def thaw(self):
        os.kill(self.proc.pid, signal.SIGCONT)
        self.frozen = False

    def kill(self):
        if self.proc and self.proc.poll() is None:
            if self.frozen:
                os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.frozen = False


class Cluster:
    """N independent masters with redlock's scripts loaded (as on servers that have been up a while)."""

    def __init__(self, n):
        self.workdir = tempfile.mkdtemp(prefix="redlock-bench-")
        self.servers = [Server(self.workdir, i) for i in range(n)]
        try:
            for s in self.servers:
                s.start()
            self._load_scripts()
        except BaseException:
            self.stop()
            raise

    def _load_scripts(self):
        scripts = os.path.join(ROOT, "core", "lock", "scripts")
        bodies = []
        for name in sorted(os.listdir(scripts)):
            with open(os.path.join(scripts, name), "rb") as f:
                bodies.append(f.read())
        for s in self.servers:
            with s.client() as c:
                for body in bodies:
                    c.script_load(body)

    def stop(self):
        for s in self.servers:
            s.kill()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def spec(self, n=None):
        return ",".join(s.address for s in self.servers[:n])

    def commandstats(self):
        """{command: calls}, summed over the servers that are not frozen."""
        total = {}
        for s in self.servers:
            if s.frozen:
                continue
            with s.client() as c:
                stats = c.info("commandstats")
            for key, fields in stats.items():
                name = key[len("cmdstat_"):]
                total[name] = total.get(name, 0) + fields["calls"]
        return total

    def numsub(self, channel):
        """How many servers have at least one listener for the wake-ups of CHANNEL: a subscriber of
        CHANNEL itself, or a queued waiter on a channel of its own (CHANNEL:ID)."""
        n = 0
        for s in self.servers:
            if s.frozen:
                continue
            with s.client() as c:
                if c.pubsub_numsub(channel)[0][1] > 0 or c.pubsub_channels(channel + ":*"):
                    n += 1
        return n

    def exists(self, key):
        n = 0
        for s in self.servers:
            if not s.frozen:
                with s.client() as c:
                    n += c.exists(key)
        return n
