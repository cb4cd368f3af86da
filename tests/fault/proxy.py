"""A user-space TCP proxy for the fault-injection suite: `tc netem` is not in this kernel, so delay,
stalls and partitions between the clients and a server are made here.

One Proxy listens on a free loopback port and forwards every connection to one server. It can
  delay   every chunk, each way, by a random time in a range (order kept)
  hold    stall all traffic, each way, and let it through later, in order (a slow network)
  cut     close every connection at once and refuse new ones until healed (a partition)
All proxies share one asyncio loop in a daemon thread; the controls are safe to call from any thread.
"""

import asyncio
import random
import threading
import time


class _Loop:
    """The one event loop all proxies run on."""

    _lock = threading.Lock()
    _loop = None

    @classmethod
    def get(cls):
        with cls._lock:
            if cls._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="proxy-loop", daemon=True).start()
                cls._loop = loop
            return cls._loop


class Proxy:
    def __init__(self, target_port, host="127.0.0.1"):
        self.host, self.target_port = host, target_port
        self.loop = _Loop.get()
        self.delay = (0.0, 0.0)  # seconds, each chunk, each way
        self.port = None
        self._rng = random.Random()
        self._conns = set()
        self._cut = False
        self._open = None
        self._server = None
        self._call(self._start())

    def _call(self, coro, timeout=10):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _start(self):
        self._open = asyncio.Event()
        self._open.set()
        self._server = await asyncio.start_server(self._accept, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]

    @property
    def address(self):
        return "%s:%d" % (self.host, self.port)

    # Controls (any thread).

    def set_delay(self, low, high=None):
        self.delay = (low, low if high is None else high)

    def hold(self):
        self.loop.call_soon_threadsafe(self._open.clear)

    def release(self):
        self.loop.call_soon_threadsafe(self._open.set)

    def cut(self):
        self._call(self._cut_all())

    def heal(self):
        self._cut = False
        self.release()

    def close(self):
        try:
            self._call(self._close())
        except Exception:
            pass

    async def _cut_all(self):
        self._cut = True
        for conn in list(self._conns):
            for w in conn:
                w.transport.abort()
        self._conns.clear()

    async def _close(self):
        await self._cut_all()
        self._server.close()
        self._open.set()

    # Forwarding.

    async def _accept(self, reader, writer):
        if self._cut:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.target_port)
        except OSError:
            writer.transport.abort()
            return
        conn = (writer, up_writer)
        self._conns.add(conn)
        try:
            await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))
        except Exception:
            pass
        finally:
            self._conns.discard(conn)
            for w in conn:
                w.transport.abort()

    async def _pump(self, reader, writer):
        queue = asyncio.Queue()

        async def read():
            while True:
                try:
                    data = await reader.read(65536)
                except (ConnectionError, OSError):
                    data = b""
                low, high = self.delay
                await queue.put((time.monotonic() + (self._rng.uniform(low, high) if high > 0 else 0.0), data))
                if not data:
                    return

        async def write():
            while True:
                due, data = await queue.get()
                await self._open.wait()
                pause = due - time.monotonic()
                if pause > 0:
                    await asyncio.sleep(pause)
                await self._open.wait()
                if not data:
                    writer.transport.abort()
                    return
                writer.write(data)
                await writer.drain()

        reading = asyncio.ensure_future(read())
        try:
            await write()
        finally:
            reading.cancel()
