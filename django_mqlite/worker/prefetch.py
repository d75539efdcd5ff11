"""How much a worker claims at once, and when it writes its completions.

Adaptive prefetch: a worker holds (claimed, not yet finished) at most what its handler
threads can finish within ``HORIZON_S``, judged from recent handler times. Until it has
a measurement it claims one message per free thread. Short handlers therefore get
batches of up to ``MAX_BATCH`` per claim (one claim statement instead of one per
message); slow ones get one per free thread, so a worker never sits on work another
worker process could be running for longer than about ``HORIZON_S``. Prefetched
messages are held under a lease like running ones, and their leases are renewed.

Group commit: completions and failures wait up to ``GROUP_COMMIT_S`` (or until
``MAX_BATCH`` of them are waiting, or nothing else is running) so that one statement
and one commit settle a batch. A crash can then re-deliver at most one batch of
finished work, which the at-least-once contract allows.

Start margin: a prefetched message waits for a thread under its lease, and a worker
frozen meanwhile (SIGSTOP, a VM pause, a swap storm) can wake up holding leases that ran
out while it slept; another worker may have run and completed the message since. So a
handler thread starts a delivery only while its lease has at least ``start_margin_s``
left (by the engine's clock: the claim's ``locked_until``, moved on by each renewal);
otherwise it releases the message (the claim's attempt is given back, ``settle.release``)
and runs nothing. The margin is 10% of the lease, at least 1 s, and never more than a
quarter of the lease: leases are renewed at half their life, so a healthy worker's
waiting messages always have more than that left. A message claimed before a pause
longer than the stale-worker limit (``WORKER_STALE_AFTER``, by the gap between two of
the worker's heartbeats, or no heartbeat for that long) is released too: the
stale-worker pass may have handed it to another worker before its lease ran out.
"""

from __future__ import annotations

import math

HORIZON_S = 0.1
MAX_BATCH = 64
GROUP_COMMIT_S = 0.004
#: Weight of the newest handler time in the running average.
SMOOTHING = 0.2


#: The start margin: this fraction of the lease, at least ``START_MARGIN_MIN_S``, at
#: most ``START_MARGIN_MAX_FRACTION`` of the lease.
START_MARGIN_FRACTION = 0.1
START_MARGIN_MIN_S = 1.0
START_MARGIN_MAX_FRACTION = 0.25


def start_margin_s(lease_s: float) -> float:
    """How much lease a delivery must have left for a handler to start it."""
    wanted = max(START_MARGIN_MIN_S, START_MARGIN_FRACTION * lease_s)
    return min(wanted, START_MARGIN_MAX_FRACTION * lease_s)


class Prefetch:
    """The claim size policy of one worker with ``threads`` handler threads."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.avg_s: float | None = None

    def observe(self, seconds: float) -> None:
        """Record one handler's run time."""
        seconds = max(0.0, seconds)
        if self.avg_s is None:
            self.avg_s = seconds
        else:
            self.avg_s += SMOOTHING * (seconds - self.avg_s)

    def target(self) -> int:
        """How many unfinished messages (waiting or running) the worker may hold."""
        if self.avg_s is None:
            return self.threads
        per_thread = HORIZON_S / max(self.avg_s, 1e-5)
        return max(self.threads, min(self.threads * math.floor(per_thread), MAX_BATCH))

    def want(self, pending: int, running: int) -> int:
        """How many to claim now, given ``pending`` waiting for a thread and ``running``.

        A thread with nothing to do always gets a claim; otherwise the worker tops up
        when half its allowance is used, so a claim is a batch rather than one message
        per finished handler.
        """
        room = self.target() - pending - running
        if room <= 0:
            return 0
        idle_thread = pending == 0 and running < self.threads
        if idle_thread or room >= max(1, self.target() // 2):
            return min(room, MAX_BATCH)
        return 0


def flush_due(waiting: int, oldest_age_s: float, unfinished: int) -> bool:
    """Whether ``waiting`` completions (the oldest ``oldest_age_s`` old) should be
    written now, with ``unfinished`` other messages still pending or running."""
    if waiting == 0:
        return False
    return waiting >= MAX_BATCH or unfinished == 0 or oldest_age_s >= GROUP_COMMIT_S
