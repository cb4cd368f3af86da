"""The redis-py reference of scripts/bench (Debian's python3-redis): one process per use, as a script
would run it. redis-py's Lock is a single-server lock (SET NX PX, a Lua compare-and-delete release).

    python3 lock.py cycle HOST:PORT NAME      acquire without waiting and release: exit 0, or 75 when busy
    python3 lock.py hold HOST:PORT NAME MS    acquire, hold MS milliseconds, release
"""

import sys
import time

import redis


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("cycle", "hold"):
        print(__doc__.strip(), file=sys.stderr)
        return 64
    mode, address, name = sys.argv[1:4]
    host, port = address.rsplit(":", 1)
    client = redis.Redis(host=host, port=int(port), socket_timeout=5)
    lock = client.lock(name, timeout=30 if mode == "cycle" else 10)
    if not lock.acquire(blocking=False):
        return 75
    if mode == "hold":
        time.sleep(int(sys.argv[4] if len(sys.argv) > 4 else 2000) / 1000.0)
    lock.release()
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
