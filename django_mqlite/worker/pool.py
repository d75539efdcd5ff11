"""Handler threads: each takes a claimed message, runs its consumer and settles it.

Every thread uses its own database connection (Django connections are per thread) and
closes it when the thread exits. Successful messages are not completed here: they are
queued for the worker's main loop, which completes them in batches.

Timeouts: Python cannot kill a thread. When a handler runs past its consumer's
``timeout`` the worker abandons the message (a failed attempt, retried with backoff),
stops renewing its lease and starts a replacement thread so the worker keeps its
concurrency. The stuck thread is left to finish; whatever it then tries to settle meets
``LockLostError`` (its token is no longer current), which is logged, and the thread exits.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable

from django.db import DatabaseError, connections

from ..conf import current
from ..engine import settle
from ..engine.clock import now_ms
from ..exceptions import Cancelled, LockLostError, Reject, Snooze
from . import db_health, handling, tracing
from .delivery import Delivery, log_fields
from .prefetch import start_margin_s

logger = logging.getLogger("django_mqlite.worker")


class Pool:
    """``size`` handler threads fed from a pending queue.

    ``backoff(attempt)`` gives the retry delay; ``wake()`` nudges the main loop;
    ``observe(seconds)`` hears how long each handler ran (the prefetch policy's
    measurement).

    A handler's return wakes the main loop when its settlement is the first one waiting
    (the loop's sleep must now end at the group commit), and otherwise only when
    ``needs_wake(waiting for a thread, running, finished and waiting to be settled)``
    says it has something to do before the deadline it sleeps to (without
    ``needs_wake``: always). Waking it for every return cost a pass of the loop per
    message in a drain.
    """

    def __init__(
        self,
        size: int,
        *,
        using: str,
        backoff: Callable[[int], float],
        wake: Callable[[], None],
        observe: Callable[[float], None] | None = None,
        needs_wake: Callable[[int, int, int], bool] | None = None,
    ) -> None:
        self.size = size
        self.using = using
        self.backoff = backoff
        self.wake = wake
        self.observe = observe
        self.needs_wake = needs_wake
        self.lock = threading.Lock()
        self._ready = threading.Condition(self.lock)
        self.pending: deque[Delivery] = deque()
        self.running: set[Delivery] = set()
        self.done: list[Delivery] = []
        #: Failed handlers waiting to be abandoned in a batch: (delivery, delay_s, error).
        self.failed: list[tuple[Delivery, float, str]] = []
        self._closing = False
        #: Handler attempts that failed (raised, rejected or finished after a timeout).
        self.failures = 0
        self._threads: list[threading.Thread] = []
        self._serial = 0
        #: Deliveries released unstarted because their lease had run (nearly) out.
        self.stale_skipped = 0
        self._last_beat = 0.0
        self._paused_until = 0.0
        #: Handlers that returned and whose outcome is not yet handed over (queued for the
        #: main loop or settled here): still busy, so a burst cannot end in between.
        self._handing_over = 0

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        for _ in range(self.size):
            self._spawn()

    def _spawn(self) -> None:
        with self.lock:  # handler threads replace themselves too
            self._serial += 1
            t = threading.Thread(target=self._thread_main, name=f"mqlite-handler-{self._serial}")
            t.daemon = True
            self._threads.append(t)
        t.start()

    def close(self, wait_s: float = 1.0) -> None:
        """Let idle threads exit; threads still running a handler are left behind."""
        with self.lock:
            self._closing = True
            self._ready.notify_all()
        deadline = time.monotonic() + wait_s
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))

    # -- accounting (callers hold no lock) ----------------------------------------------

    def submit(self, deliveries: list[Delivery]) -> None:
        """Queue freshly claimed deliveries for the threads. A message this worker still
        holds under an older delivery (its lease lapsed while it waited or ran, and this
        worker's own claim took it again) is held once: the older delivery is lost, as
        its token is no longer the message's, so no renewal, release or settlement
        presents both (a batch may not name a message twice) and it never starts."""
        with self.lock:
            claimed = {d.key: d.msg.lock_token for d in deliveries}
            for d in self._holding():
                if claimed.get(d.key, d.msg.lock_token) != d.msg.lock_token:
                    d.lost = True
            self.pending.extend(deliveries)
            self._ready.notify(len(deliveries))

    def busy(self) -> int:
        """Messages this worker holds: waiting for a thread, running, or to settle."""
        with self.lock:
            return len(self.pending) + len(self.running) + self._waiting() + self._handing_over

    def counts(self) -> tuple[int, int, int]:
        """(waiting for a thread, running, finished and waiting to be settled)."""
        with self.lock:
            return len(self.pending), len(self.running), self._waiting()

    def _waiting(self) -> int:
        """Finished deliveries whose settlement is still to be written (completions and
        failed attempts); the caller holds ``lock``."""
        return len(self.done) + len(self.failed)

    def oldest_done_age(self, now: float) -> float:
        """Seconds since the oldest handler whose settlement is still to be written
        returned."""
        with self.lock:
            finished = [*self.done, *(f[0] for f in self.failed)]
            ended = [d.ended for d in finished if d.ended is not None]
        return now - min(ended) if ended else 0.0

    def take_failed(self) -> list[tuple[Delivery, float, str]]:
        with self.lock:
            out, self.failed = self.failed, []
            return out

    def retry_delays(self) -> list[float]:
        """The retry delays (seconds) of the failures waiting to be abandoned."""
        with self.lock:
            return [f[1] for f in self.failed]

    def give_back_failed(self, failures: list[tuple[Delivery, float, str]]) -> None:
        with self.lock:
            self.failed[:0] = failures

    def free(self) -> int:
        with self.lock:
            return max(0, self.size - len(self.pending) - len(self.running))

    def take_pending(self) -> list[Delivery]:
        with self.lock:
            out = list(self.pending)
            self.pending.clear()
            return out

    def take_done(self) -> list[Delivery]:
        with self.lock:
            out, self.done = self.done, []
            return out

    def give_back_done(self, deliveries: list[Delivery]) -> None:
        """Return completions that could not be flushed, to be tried again."""
        with self.lock:
            self.done[:0] = deliveries

    def held(self) -> list[Delivery]:
        """Deliveries whose lease the worker must keep alive."""
        with self.lock:
            return self._holding()

    def _holding(self) -> list[Delivery]:
        """Every delivery not known lost, waiting, running, finished or failed (called
        holding the lock)."""
        failed = (f[0] for f in self.failed)
        return [d for d in (*self.pending, *self.running, *self.done, *failed) if not d.lost]

    def expire(self, now: float) -> list[Delivery]:
        """Mark running handlers past their timeout as timed out, replace their threads,
        and return them for the worker to abandon."""
        with self.lock:
            late = [
                d
                for d in self.running
                if d.timeout is not None and d.started is not None and now - d.started > d.timeout
            ]
            for d in late:
                d.timed_out = True
                self.running.discard(d)
        for _ in late:
            self._spawn()
        return late

    # -- the thread ---------------------------------------------------------------------

    def _thread_main(self) -> None:
        d: Delivery | None = None
        try:
            while True:
                with self.lock:
                    while not self.pending and not self._closing:
                        self._ready.wait()
                    if not self.pending:
                        return
                    d = self.pending.popleft()
                    self.running.add(d)  # held (renewed) while the connection is checked
                db_health.refresh()  # this thread's connection, once per message
                # The start margin is checked last, immediately before the handler is
                # called: nothing that can block (a connection probe, a reconnect, the
                # lock) comes between the check and the start. The lease is checked
                # against one reading of the engine's clock, kept as ``start_checked_at``:
                # a process frozen after that reading (even before the check returns)
                # was frozen between the check and the start, and the time says so.
                with self.lock:
                    checked_at = now_ms() / 1000
                    stale = not self._may_start(d, checked_at)
                    if stale:
                        self.running.discard(d)
                        self._handing_over += 1  # ``_release_stale`` gives it back
                    else:
                        d.started = time.monotonic()
                        d.msg.start_checked_at = checked_at
                if stale:
                    self._release_stale(d)
                    d = None
                    continue
                self._execute(d)
                if d.timed_out:
                    return  # a replacement thread took this one's place
                d = None
        except BaseException as exc:
            self._thread_died(d, exc)
        finally:
            connections.close_all()

    def note_beat(self, before: float) -> None:
        """A heartbeat committed (``before``: monotonic time read before it was written).
        A gap between two beats longer than the stale-worker limit is a pause (SIGSTOP,
        a VM pause, the database away): the stale-worker pass may have reclaimed every
        lease this worker held then, whatever their deadlines said."""
        with self.lock:
            if before - self._last_beat > self._stale_limit_s():
                self._paused_until = before
            self._last_beat = max(self._last_beat, before)

    def _stale_limit_s(self) -> float:
        # The margin keeps clear of the reaper's own rounding and timing.
        return current().worker_stale_after_s * 0.8

    def _may_start(self, d: Delivery, now_s: float) -> bool:
        """The start-margin rule (``prefetch``): ``d``'s lease has the margin left at
        ``now_s`` (the engine's clock, epoch seconds), and no pause long enough for the
        stale-worker pass came between its claim and now (called holding the lock)."""
        if d.lost:
            return False
        if d.claimed_at < self._paused_until:
            return False
        if self._last_beat and time.monotonic() - self._last_beat > self._stale_limit_s():
            return False  # no heartbeat for that long: it may be another pause
        return d.lease_left_s(now_s) >= start_margin_s(d.lease_s)

    def _release_stale(self, d: Delivery) -> None:
        """Give back a delivery whose lease is (nearly) spent without running it (the
        caller counted it as being handed over; this gives that back once written)."""
        msg = d.msg
        with self.lock:
            self.stale_skipped += 1
        d.lost = d.finished = True
        try:
            logger.warning(
                "%s #%s: not started, its lease may be gone (less than %.1fs left, or "
                "this worker was paused past the stale-worker limit); releasing it",
                msg.queue,
                msg.seq,
                start_margin_s(d.lease_s),
                extra=log_fields(msg),
            )
            db_health.retry_lost(
                lambda: settle.release(msg.queue, [d.item()], using=self.using),
                self.using,
                f"releasing {msg.queue} #{msg.seq}",
            )
        except DatabaseError as exc:  # the lease runs out and the reaper takes it back
            logger.warning(
                "%s #%s: could not release: %s", msg.queue, msg.seq, exc, extra=log_fields(msg)
            )
        finally:
            self._handed_over()

    def _handed_over(self, first_waiting: bool = False) -> None:
        """A delivery counted as being handed over (``_handing_over``, counted with the
        change that took it out of ``running``) has been written: count it no more, and
        wake the main loop when it has something to do now (the class docstring), such
        as the pool having emptied."""
        with self.lock:
            self._handing_over -= 1
            counts = len(self.pending), len(self.running), self._waiting()
        if first_waiting or self.needs_wake is None or self.needs_wake(*counts):
            self.wake()

    def _thread_died(self, d: Delivery | None, exc: BaseException) -> None:
        """Whatever killed this thread (a bug, ``SystemExit`` from the settle path), its
        delivery is failed like any failed attempt, not left running with a renewed
        lease, and a new thread takes its place so the worker keeps its concurrency."""
        logger.error("handler thread died: %r", exc, exc_info=exc)
        with self.lock:
            replace = not self._closing
            owned = d is not None and d in self.running
            if owned:
                assert d is not None
                self.running.discard(d)
                d.finished = True
                self._handing_over += 1
        if owned:
            assert d is not None
            try:
                failure = RuntimeError(f"handler thread died: {exc!r}")
                tb = f"{failure}\n{traceback.format_exc()}"
                self._settle_directly(d, failure, tb)
            except Exception:  # the lease then runs out and the reaper takes it back
                logger.exception(
                    "could not fail %s #%s", d.msg.queue, d.msg.seq, extra=log_fields(d.msg)
                )
            finally:
                self._handed_over()
        if replace:
            self._spawn()
        self.wake()

    def _execute(self, d: Delivery) -> None:
        msg = d.msg
        failure, tb = handling.run_handler(d)  # coroutines run on the event loop (``aio``)
        failure = handling.as_cancelled(msg, failure)
        with self.lock:
            d.ended = time.monotonic()
            late = d.timed_out
            if not late:
                d.finished = True
                self.running.discard(d)
            if self.observe is not None and d.started is not None:
                self.observe(d.ended - d.started)
            self._handing_over += 1  # the ``finally`` below gives it back
        first_waiting = False
        try:
            if msg.settled is not None:
                tracing.finish(msg, msg.outcome)  # the handler settled the message itself
            elif failure is None and not late:
                with self.lock:
                    self.done.append(d)
                    first_waiting = self._waiting() == 1
            elif not late and handling.resumes(msg, failure):
                db_health.retry_lost(
                    lambda: handling.release_to_resume(msg, self.using),
                    self.using,
                    f"releasing {msg.queue} #{msg.seq}",
                )
                tracing.finish(msg, msg.outcome)
            elif failure is not None and not late and not isinstance(failure, Reject | Snooze):
                first_waiting = self._fail_later(d, failure, tb)
            else:
                self._settle_directly(d, failure, tb)
                tracing.finish(msg, msg.outcome)
        except LockLostError as exc:
            tracing.finish(msg, tracing.LOCK_LOST)
            what = "finished after its timeout" if late else "could not settle"
            logger.warning(
                "handler for %s #%s %s: %s", msg.queue, msg.seq, what, exc, extra=log_fields(msg)
            )
        except Exception:
            tracing.finish(msg, "settle_failed")
            logger.exception("settling %s #%s failed", msg.queue, msg.seq, extra=log_fields(msg))
        finally:
            self._handed_over(first_waiting)

    def _fail_later(self, d: Delivery, failure: BaseException, tb: str) -> bool:
        """Queue a failed attempt for the main loop's next batch of abandons; whether
        it is the only settlement waiting."""
        msg = d.msg
        delay = self.backoff(msg.delivery_count)
        with self.lock:
            self.failed.append((d, delay, tb))
            self.failures += 1
            first_waiting = self._waiting() == 1
        handling.log_failure(msg, failure, delay)
        return first_waiting

    def _settle_directly(self, d: Delivery, failure: BaseException | None, tb: str) -> None:
        # Neither a snooze nor a cancel is a failure of the handler.
        if failure is not None and not isinstance(failure, Snooze | Cancelled):
            with self.lock:
                self.failures += 1
        # The handler may have failed because this thread's connection was lost: check
        # it first, and retry the settle on a fresh one (a settle is receipted).
        db_health.refresh()
        delay = self.backoff(d.msg.delivery_count)
        db_health.retry_lost(
            lambda: handling.settle_failure(
                d.msg, failure, tb, using=self.using, backoff=lambda _attempt: delay
            ),
            self.using,
            f"settling {d.msg.queue} #{d.msg.seq}",
        )
