"""Checkers over a merged history: pure functions, no I/O, each unit-tested (test_checkers.py) with
histories that pass and histories that must fail.

A history is a list of events (dicts) with at least "ev" and "t" (CLOCK_MONOTONIC ns):
  attempt / done   written by a worker around one `redlock run` (or acquire ... release) cycle
  enter / write / exit   written by the guarded critical section (guarded.py)
  fault / heal     written by a nemesis
Events of one cycle carry the worker "w" and the cycle number "n".
"""

import math

INF = float("inf")


class Hold:
    """One believed-held interval: from the child's enter record to its exit record. Without an exit
    record (killed by SIGKILL), it ends at the worker's done record, which comes later: the checkers
    can only overstate a hold, never shorten one."""

    __slots__ = ("w", "n", "start", "end", "fence", "token", "code", "outcome", "exit_how", "exit_sig", "wrote",
                 "fenced_answer", "attempt", "done", "report", "slot", "reader")

    def __init__(self, w, n):
        self.w, self.n = w, n
        self.start = self.end = None
        self.fence = self.token = self.code = self.outcome = self.exit_how = self.exit_sig = None
        self.slot = None  # a semaphore's holder: its slot (REDLOCK_SLOT)
        self.reader = False  # a reader of the shared mode (--shared)
        self.wrote = False
        self.fenced_answer = None
        self.attempt = self.done = None
        self.report = {}

    @property
    def key(self):
        return (self.w, self.n)

    def __repr__(self):
        return "Hold(w=%s n=%s %s..%s fence=%s code=%s)" % (self.w, self.n, self.start, self.end, self.fence, self.code)


def holds(events):
    """The holds of a history, in order of entry."""
    cycles = {}
    for e in events:
        if "w" not in e or "n" not in e:
            continue
        c = cycles.setdefault((e["w"], e["n"]), Hold(e["w"], e["n"]))
        ev = e["ev"]
        if ev == "attempt":
            c.attempt = e["t"]
        elif ev == "enter":
            c.start = e["t"]
            c.fence = e.get("fence")
            c.token = e.get("token")
            c.slot = e.get("slot")
            c.reader = bool(e.get("reader"))
        elif ev == "exit":
            c.end = e["t"] if c.end is None else min(c.end, e["t"])
            c.exit_how = e.get("how")
            c.exit_sig = e.get("sig")
        elif ev == "write":
            c.wrote = True
            c.fenced_answer = e.get("fenced_answer")
        elif ev == "done":
            c.done = e["t"]
            c.code = e.get("code")
            c.outcome = e.get("outcome")
            c.report = e.get("report") or {}
            if c.fence is None:
                c.fence = c.report.get("fence")
    out = []
    for c in cycles.values():
        if c.start is None:
            continue
        if c.end is None:
            c.end = c.done if c.done is not None else INF
        out.append(c)
    out.sort(key=lambda h: (h.start, h.w, h.n))
    return out


def overlaps(hs, exclude=()):
    """Pairs of holds of different cycles that overlap in time (a sweep over the intervals sorted by
    start, keeping the one that reaches furthest). Holds whose key is in EXCLUDE are left out."""
    found = []
    exclude = set(exclude)
    reach = None  # the hold that ends last among those started so far
    for h in sorted((h for h in hs if h.key not in exclude), key=lambda h: h.start):
        if reach is not None and h.start < reach.end:
            found.append((reach, h, min(reach.end, h.end) - h.start))
        if reach is None or h.end > reach.end:
            reach = h
    return found


def over_limit(hs, limit):
    """A semaphore's overlaps: the moments more than LIMIT holds were active at once (a sweep over
    starts and ends, an end first at equal times). Each as (the earliest of them, the one that made
    LIMIT + 1, how long all of them were active together), the shape of overlaps()."""
    found = []
    active = []
    for h in sorted(hs, key=lambda h: h.start):
        active = [a for a in active if a.end > h.start]
        active.append(h)
        if len(active) > limit:
            first = min(active, key=lambda a: a.start)
            found.append((first, h, min(a.end for a in active) - h.start))
    return found


def shared_overlaps(hs):
    """The shared mode's overlaps: pairs of holds that overlap in time where one is a writer
    (readers may overlap one another), in the shape of overlaps()."""
    found = []
    ordered = sorted(hs, key=lambda h: h.start)
    for i, a in enumerate(ordered):
        for b in ordered[i + 1:]:
            if b.start >= a.end:
                continue
            if not (a.reader and b.reader):
                found.append((a, b, min(a.end, b.end) - b.start))
    return found


def shared_fence_violations(hs):
    """The shared mode's fences: the writers' increase as fence_violations() says; a reader's (the
    highest counter on its quorum) is at least the fence of every writer that left before it came."""
    writers = [h for h in hs if not h.reader]
    bad = fence_violations(writers)
    for r in (h for h in hs if h.reader):
        before = [w for w in writers if w.end <= r.start and w.fence is not None]
        last = max(before, key=lambda w: w.fence, default=None)
        if last is not None and (r.fence is None or r.fence < last.fence):
            bad.append((last, r, "a reader's fence below an earlier writer's"))
    return bad


def most_at_once(hs):
    """The largest number of holds active at one instant."""
    edges = sorted([(h.start, 1) for h in hs] + [(h.end, -1) for h in hs], key=lambda e: (e[0], e[1]))
    running = peak = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    return peak


def slot_fence_violations(hs):
    """A semaphore's fences: each slot is a lock of its own, whose fences must increase as
    fence_violations() says; a hold with no slot is a violation."""
    bad = [(h, None, "no slot") for h in hs if h.slot is None]
    for slot in sorted({h.slot for h in hs if h.slot is not None}):
        bad += fence_violations([h for h in hs if h.slot == slot])
    return bad


def fence_violations(hs):
    """Fences must strictly increase from one holder to the next, in order of entry; two holders
    with different tokens may never share a fence."""
    bad = []
    prev = None
    seen = {}
    for h in hs:
        if h.fence is None:
            bad.append((h, None, "no fence"))
            continue
        other = seen.get(h.fence)
        if other is not None and other.token != h.token:
            bad.append((other, h, "two holders share fence %s" % h.fence))
        seen.setdefault(h.fence, h)
        if prev is not None and prev.fence is not None and h.fence <= prev.fence:
            bad.append((prev, h, "fence %s after %s" % (h.fence, prev.fence)))
        prev = h
    return bad


def stale_accepted(log):
    """Writes a resource accepted with a fence lower than one it had accepted before. LOG: the
    fences of the accepted writes in the resource's own order."""
    bad = []
    top = -INF
    for i, fence in enumerate(log):
        if fence < top:
            bad.append((i, fence, top))
        top = max(top, fence)
    return bad


def lost_updates(final, accepted):
    """How many accepted increments the final counter is missing (a read-modify-write that ran
    beside another loses one). Negative would mean increments from nowhere."""
    return accepted - final


def after_heals(heals, enters):
    """For every heal time, the delay to the first entry at or after it (None when none came)."""
    enters = sorted(enters)
    out = []
    j = 0
    for t in sorted(heals):
        while j < len(enters) and enters[j] < t:
            j += 1
        out.append(enters[j] - t if j < len(enters) else None)
    return out


def starved(hs, workers, start, limit_ns):
    """Workers that did not enter within LIMIT_NS of START."""
    got = {h.w for h in hs if h.start - start <= limit_ns}
    return sorted(set(workers) - got)


def outlived_validity(hs, losses, ttl_ns, drift=0.01, fixed_ns=2_000_000):
    """S13: when the quorum is lost at time T (no renewal can succeed after it), every hold active at
    T must end before T + TTL - drift allowance (TTL x DRIFT + FIXED_NS, as redlock computes it), the
    latest its validity can reach (a renewal that started before T). LOSSES: the times T. Returns
    (hold, T, late by ns) for each that did not."""
    allowance = ttl_ns * drift + fixed_ns
    bad = []
    for t in losses:
        limit = t + ttl_ns - allowance
        for h in hs:
            if h.start < t < h.end and h.end > limit:
                bad.append((h, t, h.end - limit))
    return bad


def order_inversions(hs, slack_ns):
    """--fair: fair waiters served out of their order of arrival. X began its attempt more than
    SLACK_NS (the time its join may take) before Y began its own, was still waiting when Y entered,
    and Y's hand-off was reported "fair" (a degraded one went the unfair way, and says so). Only
    holds whose report has "fairness" (waiters that asked for --fair) are judged. Returns [(X, Y)]."""
    fair = sorted((h for h in hs if h.attempt is not None and h.report.get("fairness")), key=lambda h: h.attempt)
    out = []
    for i, x in enumerate(fair):
        for y in fair[i + 1:]:
            if y.attempt - x.attempt > slack_ns and y.start < x.start and y.report.get("fairness") == "fair":
                out.append((x, y))
    return out


def percentile(values, p):
    """The P-th percentile (nearest rank) of VALUES, None when empty."""
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return None
    rank = max(1, math.ceil(p / 100.0 * len(vals)))
    return vals[rank - 1]


def gave_up_early(dones, waits_ms, codes):
    """The "done" records with an exit code in CODES whose wait (report.wait_ms) ended before their
    worker's -w (WAITS_MS[w], None: it does not wait, so any such exit is early): a wait must run to
    its end before it reports CODES. [(worker, cycle, code, waited ms, -w ms)]."""
    out = []
    for e in dones:
        if e.get("code") not in codes:
            continue
        w = e.get("w")
        wait = waits_ms[w] if isinstance(w, int) and 0 <= w < len(waits_ms) else None
        waited = (e.get("report") or {}).get("wait_ms")
        if wait is None or waited is None or waited < wait:
            out.append((w, e.get("n"), e.get("code"), None if waited is None else round(waited), wait))
    return out


def overdue_waits(dones, limits_ms):
    """The "done" records whose wait (report.wait_ms) went on past the limit of their worker
    (LIMITS_MS[w], None: no limit): [(worker, cycle, waited ms, limit ms)]."""
    out = []
    for e in dones:
        w = e.get("w")
        limit = limits_ms[w] if isinstance(w, int) and 0 <= w < len(limits_ms) else None
        waited = (e.get("report") or {}).get("wait_ms")
        if limit is not None and waited is not None and waited > limit:
            out.append((w, e.get("n"), round(waited), round(limit)))
    return out
