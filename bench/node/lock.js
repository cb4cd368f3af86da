// The node-redlock reference of scripts/bench: one process per use, as a script would run it.
//   node lock.js cycle SERVERS NAME          lock (no retry) and unlock: exit 0, or 75 when busy
//   node lock.js hold SERVERS NAME MS        lock, hold MS milliseconds, unlock
//   node lock.js wait SERVERS NAME           lock, retrying for ever (its retry loop), then unlock
// SERVERS is host:port[,host:port...]; one ioredis client per server, as node-redlock's README says.
// Needs redlock@4.2.0 and ioredis on NODE_PATH (scripts/bench installs them into a cache directory).
'use strict';

const Redis = require('ioredis');
const Redlock = require('redlock');

const [mode, spec, name, holdArg] = process.argv.slice(2);
if (!mode || !spec || !name) {
  console.error('usage: node lock.js cycle|hold|wait SERVERS NAME [MS]');
  process.exit(64);
}

const clients = spec.split(',').map((addr) => {
  const i = addr.lastIndexOf(':');
  return new Redis({host: addr.slice(0, i), port: Number(addr.slice(i + 1)), maxRetriesPerRequest: 1});
});

// node-redlock's defaults (retryDelay 200 ms, retryJitter 100 ms) except the attempt count.
const redlock = new Redlock(clients, {retryCount: mode === 'wait' ? -1 : 0});
redlock.on('clientError', () => {});

function done(code) {
  for (const c of clients) c.disconnect();
  process.exitCode = code;
}

const ttl = mode === 'hold' ? 10000 : 30000;
redlock.lock(name, ttl).then(
  (lock) => {
    const hold = mode === 'hold' ? Number(holdArg || 2000) : 0;
    setTimeout(() => {
      lock.unlock().then(() => done(0), () => done(1));
    }, hold);
  },
  () => done(75));
