"""Shared pieces of the integration tests: real redis-server processes on free loopback ports,
a redis-py client to look at what they hold, and a way to run the real redlock binary.

Every server is started by us, from a throw-away directory, and killed by its process id at the
end; every wait is bounded in time.
"""

import atexit
import json
import os
import shutil
import signal
import ssl
import socket
import subprocess
import sys
import tempfile
import time
import unittest


def _rerun_under_a_python_with_redis():
    """The tests use redis-py (Debian's python3-redis). When the python3 running a test file cannot
    import it (a pyenv or virtualenv python3 ahead of Debian's in PATH), the file starts again under
    the next python3 in PATH that can; CTest runs the tests with Debian's in the first place."""
    this = os.path.realpath(sys.executable)
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        python = os.path.join(folder or ".", "python3")
        if not os.path.isfile(sys.argv[0]) or not os.access(python, os.X_OK) or os.path.realpath(python) == this:
            continue
        probe = subprocess.run([python, "-c", "import redis"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               timeout=60)
        if probe.returncode == 0:
            sys.stderr.write("harness: %s cannot import redis; running under %s\n" % (sys.executable, python))
            sys.stderr.flush()
            os.execv(python, [python] + sys.argv)
    raise ImportError("%s cannot import redis (Debian package python3-redis); run the tests with a python3 that can"
                      % sys.executable)


try:
    import redis
except ImportError:
    _rerun_under_a_python_with_redis()

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def redlock_binary():
    path = os.environ.get("REDLOCK_BIN") or os.path.join(ROOT, "build", "cli", "redlock")
    if not os.path.exists(path):
        raise RuntimeError("redlock binary not found at %s (set REDLOCK_BIN)" % path)
    return path


_handed_out = set()


def _port_block():
    """The ports this test file may take, "LOW-HIGH" in REDLOCK_TEST_PORTS (tests/CMakeLists.txt
    gives each file a block of its own below the kernel's ephemeral range, so that files run side
    by side never take each other's ports, not even one a server left free while it restarts)."""
    low, _, high = os.environ.get("REDLOCK_TEST_PORTS", "").partition("-")
    if not (low.isdigit() and high.isdigit()):
        return iter(())
    return iter(range(int(low), int(high) + 1))


_block = _port_block()


def _listenable(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_port():
    """A loopback port nothing listens on, never the same twice in one test process: the next of
    this file's block while it lasts, then one the kernel picks."""
    for port in _block:
        if port not in _handed_out and _listenable(port):
            _handed_out.add(port)
            return port
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _handed_out:
            _handed_out.add(port)
            return port
    raise RuntimeError("no free port")


class RespError(redis.ResponseError):
    """An error reply, with the server's whole text ("NOAUTH …", "ERR …", "WRONGPASS …")."""


class _Lines(redis.connection.SocketBuffer):
    """redis-py's socket buffer, remembering the type byte of the last reply line it read."""

    kind = b""

    def readline(self):
        line = super().readline()
        self.kind = line[:1]
        return line


class _Replies(redis.connection.PythonParser):
    """redis-py's RESP2 parser, with replies as the server gives them: a simple string as str (its
    "OK" stays "OK"), a bulk string as bytes, and an error as RespError with its code (redis-py's own
    parser drops "NOAUTH ", "ERR " and the like from the text). Built on redis-py 4.3's parser
    classes (Debian 12's python3-redis), which are not its public interface."""

    def on_connect(self, connection):
        super().on_connect(connection)
        self._buffer.close()
        self._buffer = _Lines(self._sock, self.socket_read_size, connection.socket_timeout)

    def read_response(self, disable_decoding=False):
        reply = super().read_response(disable_decoding)
        if isinstance(reply, bytes) and self._buffer.kind == b"+":
            return reply.decode()
        return reply

    def parse_error(self, response):
        return RespError(response)


class _TlsConnection(redis.Connection):
    """A redis-py connection through an ssl.SSLContext made by the test (TlsServer.client_context)."""

    def __init__(self, context, **kw):
        super().__init__(**kw)
        self.context = context

    def _connect(self):
        sock = super()._connect()
        try:
            return self.context.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise


def _first_error(reply):
    """The first error inside an array reply (redis-py hands them back in place), or None."""
    if isinstance(reply, RespError):
        return reply
    for item in reply if isinstance(reply, list) else ():
        error = _first_error(item)
        if error is not None:
            return error
    return None


class Resp:
    """A blocking client for looking at servers from tests: one redis-py connection, binary-safe,
    connected at once. call() sends a command and returns its reply; send() and read() are the two
    halves, for pipelining and for what a subscription or MONITOR pushes. Failures to reach the
    server raise OSError (ConnectionError, socket.timeout), as a socket would."""

    def __init__(self, port=None, host="127.0.0.1", path=None, timeout=2.0, password=None, user=None, tls=None):
        kw = dict(socket_timeout=timeout, parser_class=_Replies)
        if path:
            self.conn = redis.UnixDomainSocketConnection(path=path, **kw)
        elif tls is not None:
            self.conn = _TlsConnection(tls, host=host, port=port, socket_connect_timeout=timeout, **kw)
        else:
            self.conn = redis.Connection(host=host, port=port, socket_connect_timeout=timeout, **kw)
        self._io(self.conn.connect)
        if password is not None:
            try:
                self.call(*(["AUTH", user, password] if user else ["AUTH", password]))
            except BaseException:
                self.close()
                raise

    @staticmethod
    def _io(step, *args):
        try:
            return step(*args)
        except redis.TimeoutError as e:
            raise socket.timeout(str(e)) from e
        except redis.ConnectionError as e:
            raise ConnectionError(str(e)) from e

    def close(self):
        self.conn.disconnect()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, *args):
        self._io(self.conn.send_command, *args)

    def call(self, *args):
        self.send(*args)
        return self.read()

    def read(self):
        reply = self._io(self.conn.read_response)
        error = _first_error(reply)
        if error is not None:
            raise error
        return reply


class PortTaken(Exception):
    pass


class Server:
    """One redis-server on a free loopback port."""

    def __init__(self, workdir, index, extra=(), unix=False, port=None):
        self.workdir = workdir
        self.index = index
        self.extra = list(extra)
        self.unix_path = os.path.join(workdir, "redis-%d.sock" % index) if unix else None
        self.port = port or free_port()
        self.proc = None
        self.stopped = False
        self.replica_of = None  # the index of its master, when Cluster.replicate made it a replica

    @property
    def url(self):
        return "redis://127.0.0.1:%d" % self.port

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def start(self, timeout=10.0, attempts=3, same_port=False):
        """Starts redis-server; on a port taken meanwhile, on another one, unless SAME_PORT (a restart
        that clients configured with this port must find)."""
        for attempt in range(attempts):
            try:
                return self._start(timeout)
            except PortTaken:
                if same_port:
                    raise
                self.port = free_port()
        raise RuntimeError("redis-server found no free port")

    def _start(self, timeout):
        d = os.path.join(self.workdir, "s%d" % self.index)
        os.makedirs(d, exist_ok=True)
        args = ["redis-server"] + self.listen_args() + ["--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", d, "--logfile", os.path.join(d, "log"),
                "--daemonize", "no"]
        if self.unix_path:
            args += ["--unixsocket", self.unix_path, "--unixsocketperm", "700"]
        args += self.extra
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.stopped = False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                log = self.log_tail()
                if "Address already in use" in log:
                    raise PortTaken()
                raise RuntimeError("redis-server exited at start: %s" % log)
            try:
                with self.client() as c:
                    c.call("PING")
                return self
            except RespError as e:
                if "NOAUTH" in str(e) or "WRONGPASS" in str(e):
                    return self  # up, and asking for a password
            except OSError:
                pass
            time.sleep(0.02)
        raise RuntimeError("redis-server on port %d did not answer within %.0fs" % (self.port, timeout))

    def listen_args(self):
        """Where redis-server listens (TlsServer listens with TLS instead)."""
        return ["--port", str(self.port)]

    def log_tail(self):
        try:
            with open(os.path.join(self.workdir, "s%d" % self.index, "log")) as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def client(self, **kw):
        return Resp(self.port, **kw)

    def freeze(self):
        os.kill(self.proc.pid, signal.SIGSTOP)
        self.stopped = True

    def thaw(self):
        os.kill(self.proc.pid, signal.SIGCONT)
        self.stopped = False

    def kill(self):
        if self.proc and self.proc.poll() is None:
            if self.stopped:
                os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.stopped = False

    def restart(self, extra=None):
        self.kill()
        if extra is not None:
            self.extra = list(extra)
        return self.start()

    def get(self, key):
        with self.client() as c:
            return c.call("GET", key)

    def pttl(self, key):
        with self.client() as c:
            return c.call("PTTL", key)


class Pki:
    """A throw-away CA with server and client certificates, made with the openssl command in DIR.

    server(name, sans, expired=False) and client(name) return (certificate, key) paths; the
    certificates are signed by this CA (or by another one: Pki(dir, "other-ca") is a second CA)."""

    # P-256 keys: made in milliseconds, where RSA keys take a good part of a second each.
    NEW_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")

    def __init__(self, directory, ca_name="redlock-test-ca"):
        self.dir = directory
        os.makedirs(directory, exist_ok=True)
        self.ca_key = os.path.join(directory, "ca.key")
        self.ca_cert = os.path.join(directory, "ca.crt")
        self._openssl("req", "-x509", *self.NEW_KEY, "-keyout", self.ca_key, "-out", self.ca_cert,
                      "-days", "2", "-subj", "/CN=" + ca_name, "-addext", "basicConstraints=critical,CA:TRUE",
                      "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        # `openssl ca` sets arbitrary validity dates (for an expired certificate) without faking the clock.
        self.db = os.path.join(directory, "cadb")
        os.makedirs(self.db, exist_ok=True)
        open(os.path.join(self.db, "index.txt"), "w").close()
        with open(os.path.join(self.db, "serial"), "w") as f:
            f.write("1000\n")
        self.config = os.path.join(directory, "ca.cnf")
        with open(self.config, "w") as f:
            f.write("[ca]\ndefault_ca = test\n[test]\ndatabase = %s\nnew_certs_dir = %s\nserial = %s\n"
                    "default_md = sha256\npolicy = any\nunique_subject = no\ncopy_extensions = none\n"
                    "[any]\ncommonName = supplied\n" % (os.path.join(self.db, "index.txt"), self.db,
                                                          os.path.join(self.db, "serial")))

    def _openssl(self, *args):
        r = subprocess.run(["openssl"] + list(args), capture_output=True, timeout=60)
        if r.returncode != 0:
            raise RuntimeError("openssl %s failed: %s" % (args[0], r.stderr.decode(errors="replace")))

    def _issue(self, name, extensions, expired=False):
        key = os.path.join(self.dir, name + ".key")
        csr = os.path.join(self.dir, name + ".csr")
        cert = os.path.join(self.dir, name + ".crt")
        ext = os.path.join(self.dir, name + ".ext")
        with open(ext, "w") as f:
            f.write(extensions)
        self._openssl("req", *self.NEW_KEY, "-keyout", key, "-out", csr, "-subj", "/CN=" + name)
        if expired:
            dates = ["-startdate", "20200101000000Z", "-enddate", "20200102000000Z"]
        else:
            dates = ["-days", "2"]
        self._openssl("ca", "-batch", "-notext", "-config", self.config, "-cert", self.ca_cert, "-keyfile", self.ca_key,
                      "-in", csr, "-out", cert, "-extfile", ext, *dates)
        return cert, key

    def server(self, name, sans, expired=False, usage="serverAuth"):
        """A server certificate for NAME valid for SANS (e.g. ["DNS:localhost", "IP:127.0.0.1"]), for USAGE
        ("serverAuth,clientAuth" for a cluster node, which presents it to the others on the cluster bus)."""
        return self._issue(name, "subjectAltName=%s\nextendedKeyUsage=%s\n" % (",".join(sans), usage), expired)

    def client(self, name):
        return self._issue(name, "extendedKeyUsage=clientAuth\n")


class TlsServer(Server):
    """A redis-server that speaks TLS only (--port 0 --tls-port P), with CERT and KEY, trusting CA for
    client certificates (asked for when AUTH_CLIENTS). The harness talks to it with CLIENT_CERT."""

    def __init__(self, workdir, index, cert, key, ca, auth_clients=False, client_cert=None, extra=()):
        super().__init__(workdir, index, extra)
        self.cert, self.key, self.ca = cert, key, ca
        self.auth_clients = auth_clients
        self.client_cert = client_cert  # (certificate, key) for our own client, when AUTH_CLIENTS

    def listen_args(self):
        return ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file", self.cert, "--tls-key-file", self.key,
                "--tls-ca-cert-file", self.ca, "--tls-auth-clients", "yes" if self.auth_clients else "no"]

    @property
    def url(self):
        return "rediss://127.0.0.1:%d" % self.port

    def client_context(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False  # the harness only looks; redlock is what verifies
        ctx.verify_mode = ssl.CERT_NONE
        if self.client_cert:
            ctx.load_cert_chain(*self.client_cert)
        return ctx

    def client(self, **kw):
        kw.setdefault("tls", self.client_context())
        return Resp(self.port, **kw)


class SentinelGroup:
    """A master, its replica and three redis-sentinel processes watching it as NAME (down-after-milliseconds
    1000), on free loopback ports; stop() kills them all. With TLS (CERT, KEY, CA), every one of them
    speaks TLS only (replication and the sentinels' own connections too); with PLAIN_SENTINELS as well,
    the servers speak TLS only and the sentinels listen in plain text (sentinel+rediss://)."""

    def __init__(self, workdir, index, master_password=None, sentinel_password=None, tls=None,
                 plain_sentinels=False):
        self.workdir = workdir
        self.name = "m%d" % index
        self.master_password = master_password
        self.sentinel_password = sentinel_password
        self.tls = tls
        self.tls_sentinels = bool(tls) and not plain_sentinels
        auth = ("--requirepass", master_password, "--masterauth", master_password) if master_password else ()
        if tls:
            self.servers = [TlsServer(workdir, index * 10 + k, *tls, extra=auth + ("--tls-replication", "yes"))
                            for k in range(2)]
        else:
            self.servers = [Server(workdir, index * 10 + k, auth) for k in range(2)]
        self.sentinels = []  # (port, process)
        self.sentinel_confs = []
        for s in self.servers:
            s.start()
        with self.servers[1].client(password=master_password) as c:
            c.call("REPLICAOF", "127.0.0.1", self.servers[0].port)
        wait_for(lambda: self.replica_synced(self.servers[1]), timeout=20, what="the replica to sync")
        for k in range(3):
            self.sentinels.append(self.start_sentinel(index * 10 + 5 + k))
        wait_for(self.watched, timeout=20, interval=0.1, what="the sentinels to find the replica and each other")

    def start_sentinel(self, index):
        d = os.path.join(self.workdir, "sentinel%d" % index)
        os.makedirs(d, exist_ok=True)
        port = Server(self.workdir, index).port  # a free port
        if self.tls:
            cert, key, ca = self.tls
            ports = ["port 0", "tls-port %d" % port] if self.tls_sentinels else ["port %d" % port]
            listen = ports + ["tls-cert-file %s" % cert, "tls-key-file %s" % key, "tls-ca-cert-file %s" % ca,
                              "tls-replication yes", "tls-auth-clients no"]
        else:
            listen = ["port %d" % port]
        lines = listen + ["bind 127.0.0.1", "dir %s" % d, "logfile %s/log" % d,
                 "sentinel monitor %s 127.0.0.1 %d 2" % (self.name, self.servers[0].port),
                 "sentinel down-after-milliseconds %s 1000" % self.name,
                 "sentinel failover-timeout %s 10000" % self.name]
        if self.master_password:
            lines.append("sentinel auth-pass %s %s" % (self.name, self.master_password))
        if self.sentinel_password:
            lines.append("requirepass %s" % self.sentinel_password)
        conf = os.path.join(d, "sentinel.conf")
        with open(conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.sentinel_confs.append(conf)
        proc = subprocess.Popen(["redis-sentinel", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return port, proc

    def kill_sentinel(self, k):
        """Kills sentinel K; restart_sentinel(K) starts it again on its port, from the configuration it
        rewrote (the master, the replica and the other sentinels it knew)."""
        port, proc = self.sentinels[k]
        proc.kill()
        proc.wait(timeout=10)

    def restart_sentinel(self, k):
        port, _ = self.sentinels[k]
        proc = subprocess.Popen(["redis-sentinel", self.sentinel_confs[k]], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        self.sentinels[k] = (port, proc)

    def ckquorum(self, k):
        """What sentinel K answers to SENTINEL CKQUORUM: "OK …", "NOQUORUM …", or None when it does not answer."""
        try:
            with self.sentinel_client(k) as c:
                answer = c.call("SENTINEL", "CKQUORUM", self.name)
                return answer.decode() if isinstance(answer, bytes) else str(answer)
        except RespError as e:
            return str(e)
        except OSError:
            return None

    def sentinel_client(self, k=0):
        tls = self.servers[0].client_context() if self.tls_sentinels else None
        return Resp(self.sentinels[k][0], password=self.sentinel_password, tls=tls)

    def replica_synced(self, server):
        try:
            with server.client(password=self.master_password) as c:
                return b"master_link_status:up" in c.call("INFO", "replication")
        except (OSError, RespError):
            return False

    def synced_replica(self):
        """True when a server other than the master the sentinels name is its synced replica."""
        try:
            master = self.master_port()
        except (OSError, RespError):
            return False
        return any(self.replica_synced(s) for s in self.servers if s.port != master)

    def watched(self):
        try:
            for k in range(3):
                with self.sentinel_client(k) as c:
                    master = dict(zip(*[iter(c.call("SENTINEL", "MASTER", self.name))] * 2))
                    if int(master[b"num-slaves"]) < 1 or int(master[b"num-other-sentinels"]) < 2:
                        return False
            return True
        except (OSError, RespError):
            return False

    def replica_flags(self, port):
        """The flags the first sentinel gives the replica on PORT."""
        with self.sentinel_client() as c:
            for entry in c.call("SENTINEL", "REPLICAS", self.name):
                fields = dict(zip(entry[::2], entry[1::2]))
                if int(fields[b"port"]) == port:
                    return fields[b"flags"].decode()
        return None

    def master_port(self):
        with self.sentinel_client() as c:
            return int(c.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.name)[1])

    def server_at(self, port):
        return next(s for s in self.servers if s.port == port)

    def sentinel_password_file(self):
        """A file (mode 600) holding the sentinels' password, for ?sentinel_password_file=."""
        path = os.path.join(self.workdir, "%s-sentinel-password" % self.name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, (self.sentinel_password + "\n").encode())
        os.close(fd)
        return path

    def url(self, password_file=None):
        userinfo = ":%s@" % self.master_password if self.master_password else ""
        hosts = ",".join("127.0.0.1:%d" % port for port, _ in self.sentinels)
        query = "?sentinel_password_file=%s" % password_file if password_file else ""
        scheme = "sentinel+tls" if self.tls_sentinels else "sentinel+rediss" if self.tls else "sentinel"
        return "%s://%s%s/%s%s" % (scheme, userinfo, hosts, self.name, query)

    def shown(self, password_file=None):
        return self.url(password_file).replace(":%s@" % self.master_password, "***@") if self.master_password \
            else self.url(password_file)

    def get(self, port, key):
        with self.server_at(port).client(password=self.master_password) as c:
            return c.call("GET", key)

    def stop(self):
        for _, proc in self.sentinels:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        for s in self.servers:
            s.kill()


class Cluster:
    """N independent masters; killed when the test ends."""

    def __init__(self, n, extra=(), unix=False, warm=True):
        self.workdir = tempfile.mkdtemp(prefix="redlock-it-")
        self.servers = [Server(self.workdir, i, extra, unix=unix) for i in range(n)]
        try:
            for s in self.servers:
                s.start()
            if warm:
                self.warm_scripts()
        except Exception:
            self.stop()
            raise

    def warm_scripts(self):
        """Loads redlock's scripts, as on servers that have been up for a while (NOSCRIPT has tests of its own)."""
        scripts = os.path.join(ROOT, "core", "lock", "scripts")
        bodies = []
        for name in sorted(os.listdir(scripts)):
            with open(os.path.join(scripts, name), "rb") as f:
                bodies.append(f.read())
        for s in self.servers:
            with s.client() as c:
                for body in bodies:
                    c.call("SCRIPT", "LOAD", body)

    def stop(self):
        for s in self.servers:
            s.kill()
        shutil.rmtree(self.workdir, ignore_errors=True)

    @property
    def spec(self):
        return ",".join(s.address for s in self.servers)

    def values(self, key):
        out = []
        for s in self.servers:
            if s.stopped:
                out.append("<frozen>")
                continue
            out.append(s.get(key))
        return out

    def flushall(self):
        for s in self.servers:
            if s.replica_of is not None:
                continue  # read-only: it follows its master
            with s.client() as c:
                c.call("FLUSHALL")

    def replicate(self, replica, master, timeout=10.0):
        """Makes server REPLICA a replica of server MASTER and waits until it has synced."""
        with self.servers[master].client() as c:
            c.call("CONFIG", "SET", "repl-diskless-sync-delay", "0")  # sync now, not in 5 s
        with self.servers[replica].client() as c:
            c.call("REPLICAOF", "127.0.0.1", self.servers[master].port)
        self.servers[replica].replica_of = master

        def synced():
            # Up on the replica's side, and online on the master's: ROLE lists online replicas only.
            with self.servers[replica].client() as c:
                if b"master_link_status:up" not in c.call("INFO", "replication"):
                    return False
            with self.servers[master].client() as c:
                line = b"port=%d,state=online" % self.servers[replica].port
                return line in c.call("INFO", "replication")
        wait_for(synced, timeout=timeout, what="the replica to sync")


class Result:
    def __init__(self, proc, elapsed):
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr
        self.elapsed = elapsed

    @property
    def stdout(self):
        return self.out.decode("utf-8", "replace")

    @property
    def stderr(self):
        return self.err.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.out.decode("utf-8"))

    def __repr__(self):
        return "<exit %s in %.3fs stdout=%r stderr=%r>" % (self.code, self.elapsed, self.out[:500], self.err[:500])


# An empty configuration directory for every run of the binary: a ~/.config/redlock/config of the
# user running the tests must not change what they see (tests of the file make their own).
NO_CONFIG_HOME = tempfile.mkdtemp(prefix="redlock-no-config-")
atexit.register(shutil.rmtree, NO_CONFIG_HOME, ignore_errors=True)


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("REDLOCK_")}
    env["XDG_CONFIG_HOME"] = NO_CONFIG_HOME
    env.update(extra or {})
    return env


def redlock(args, servers=None, env=None, timeout=30, input=None):
    """Runs the binary; SERVERS (a Cluster or a string) goes into REDLOCK_SERVERS."""
    e = clean_env(env)
    if servers is not None and "REDLOCK_SERVERS" not in (env or {}):
        e["REDLOCK_SERVERS"] = servers.spec if isinstance(servers, Cluster) else servers
    start = time.monotonic()
    proc = subprocess.run([redlock_binary()] + [a for a in args], env=e, capture_output=True, timeout=timeout,
                          input=input)
    return Result(proc, time.monotonic() - start)


def spawn(args, servers=None, env=None, **kw):
    """Starts the binary in the background (Popen)."""
    e = clean_env(env)
    if servers is not None and "REDLOCK_SERVERS" not in (env or {}):
        e["REDLOCK_SERVERS"] = servers.spec if isinstance(servers, Cluster) else servers
    return subprocess.Popen([redlock_binary()] + list(args), env=e, **kw)


def wait_for(predicate, timeout=10.0, interval=0.01, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("timed out after %.1fs waiting for %s" % (timeout, what))


def settle(value, expected, timeout=10.0, interval=0.02):
    """VALUE() once it equals EXPECTED, else its last value after TIMEOUT, for an assertEqual to show:
    for what the servers get without anyone waiting for it (a frozen server thawed, a request sent
    without waiting), which a busy machine may take a while to run."""
    deadline = time.monotonic() + timeout
    seen = value()
    while seen != expected and time.monotonic() < deadline:
        time.sleep(interval)
        seen = value()
    return seen


def shortest_queue(cluster, key):
    """The fewest members KEY (a sorted set: a lock's waiters) has on any server of CLUSTER."""
    counts = []
    for s in cluster.servers:
        with s.client() as c:
            counts.append(c.call("ZCARD", key))
    return min(counts)


def script_calls(client):
    """How many times the server ran a script (EVALSHA and EVAL) since its last CONFIG RESETSTAT."""
    calls = 0
    for line in client.call("INFO", "commandstats").decode().splitlines():
        if line.startswith(("cmdstat_evalsha:", "cmdstat_eval:")):
            calls += int(line.split("calls=", 1)[1].split(",", 1)[0])
    return calls


def listeners(client, channel):
    """How many listen for the wake-ups of CHANNEL on this server: its own subscribers (watch, a
    semaphore's waiters) and the queued waiters, each on a channel of its own (CHANNEL:ID)."""
    own = client.call("PUBSUB", "NUMSUB", channel)[1]
    return own + len(client.call("PUBSUB", "CHANNELS", channel + ":*"))


def wait_until_waiting(clients, channel, timeout=10.0):
    """Waits until a waiter is subscribed to CHANNEL on every server and has made its attempt there
    (after subscribing it reads the lock with a plain GET, and tries again only when others do not
    hold it on a quorum), so that it sleeps on its wake-ups. CLIENTS(): a fresh list of admin
    clients; reset the script statistics (CONFIG RESETSTAT) before the waiter starts. A release
    sent while an attempt is still out can be overtaken by it, which is a race of its own, not what
    a wake-up test looks at."""
    def ready():
        cs = clients()
        try:
            return all(listeners(c, channel) >= 1 and script_calls(c) >= 1 for c in cs)
        finally:
            for c in cs:
                c.close()
    wait_for(ready, timeout=timeout, what="the waiter to subscribe and make its attempts")
    time.sleep(0.2)  # and to take in the answer to its last attempt


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except OSError:
        return False


class ClusterTest(unittest.TestCase):
    """A test case with a fresh cluster of N servers per test class, flushed between tests."""

    N = 5
    EXTRA = ()

    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(cls.N, cls.EXTRA)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def setUp(self):
        for s in self.cluster.servers:
            if s.stopped:
                s.thaw()
            if s.proc.poll() is not None:
                s.start()
        self.cluster.flushall()

    def rl(self, *args, **kw):
        return redlock(list(args), servers=kw.pop("servers", self.cluster), **kw)

    def scratch_dir(self, prefix="redlock-it-"):
        """A private temporary directory, removed when the test ends."""
        path = tempfile.mkdtemp(prefix=prefix)
        self.addCleanup(shutil.rmtree, path, ignore_errors=True)
        return path


def main():
    unittest.main(verbosity=2)
