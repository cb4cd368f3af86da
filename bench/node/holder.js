// The node-redlock holder of scripts/bench's "hand-off from node-redlock" row: one process that
// takes the same lock round after round, as the bench asks on stdin, one line a round:
//   lock HOLD_MS TTL_MS     node-redlock 4 (the `latest` release): lock(), hold, unlock()
//   using HOLD_MS TTL_MS    node-redlock 5: using(), which extends the lock while the routine runs
//                           (once less than 500 ms of it is left), then releases it
// and answers, with CLOCK_MONOTONIC nanoseconds (process.hrtime, as Python's time.monotonic_ns):
//   held T                  the lock is taken (T: when the acquisition resolved)
//   released T0 T1          T0: just before the release was sent; T1: when it resolved
//   error TEXT              the round failed (no lock, or the extension failed while holding)
// It exits at the end of its input. SERVERS is host:port[,host:port...], one ioredis client each.
//   node holder.js SERVERS NAME
'use strict';

const readline = require('readline');
const Redis = require('ioredis');
const Redlock4 = require('redlock');
const Redlock5 = require('redlock5').default;

const [spec, name] = process.argv.slice(2);
if (!spec || !name) {
  console.error('usage: node holder.js SERVERS NAME');
  process.exit(64);
}

const clients = spec.split(',').map((addr) => {
  const i = addr.lastIndexOf(':');
  return new Redis({host: addr.slice(0, i), port: Number(addr.slice(i + 1)), maxRetriesPerRequest: 1});
});
// No retries: the bench hands the lock over only when the previous waiter has released it.
const v4 = new Redlock4(clients, {retryCount: 0});
const v5 = new Redlock5(clients, {retryCount: 0, automaticExtensionThreshold: 500});
v4.on('clientError', () => {});
v5.on('error', () => {});

const now = () => process.hrtime.bigint().toString();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function roundLock(hold, ttl) {
  const lock = await v4.lock(name, ttl);
  console.log('held ' + now());
  await sleep(hold);
  const t0 = now();
  await lock.unlock();
  console.log('released ' + t0 + ' ' + now());
}

async function roundUsing(hold, ttl) {
  let t0 = null;
  await v5.using([name], ttl, async (signal) => {
    console.log('held ' + now());
    await sleep(hold);
    if (signal.aborted) throw signal.error;
    t0 = now(); // using() releases once this routine returns
  });
  console.log('released ' + t0 + ' ' + now());
}

async function main() {
  const lines = readline.createInterface({input: process.stdin});
  for await (const line of lines) {
    const [mode, hold, ttl] = line.trim().split(/\s+/);
    try {
      await (mode === 'using' ? roundUsing : roundLock)(Number(hold), Number(ttl));
    } catch (e) {
      console.log('error ' + String(e && e.message ? e.message : e).replace(/\s+/g, ' '));
    }
  }
}

main().finally(() => {
  for (const c of clients) c.disconnect();
});
