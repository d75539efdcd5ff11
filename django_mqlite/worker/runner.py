"""The worker's main loop: claim -> hand to threads -> complete in batches, keep leases
alive, enforce timeouts, heartbeat, and stop cleanly.

The main thread owns claiming, lease renewal, timeouts and batched completion; handler
threads (``pool``) run consumers; background threads heartbeat, reap and (PostgreSQL)
LISTEN. See ``docs/workers.md`` for the operator's view.
"""

from __future__ import annotations

import functools
import logging
import math
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured
from django.db import Error as DatabaseError
from django.db import InterfaceError, OperationalError, connections

from ..conf import current
from ..engine import arguments, databases, listen, running, settle, wakeup
from ..engine.claim import receive
from ..engine.claimable import claimable
from ..engine.clock import now_ms, to_ms
from ..engine.dialects import dialect_for
from ..engine.queues import create_queue, get_queue, sync_declared
from ..exceptions import Cancelled, LockLostError, QueueNotFoundError
from . import background, clockskew, db_health, handling, prefetch, settlement, tracing
from . import registry as registry_mod
from .delivery import Delivery, log_fields
from .memory import rss_mb
from .pool import Pool
from .prefetch import GROUP_COMMIT_S, Prefetch
from .prefork import TELL_EVERY_S
from .registry import Consumer, Registry
from .retry import backoff_delay
from .stopping import drain_then_exit, stop_on_signals

if TYPE_CHECKING:
    from .prefork import Siblings

logger = logging.getLogger("django_mqlite.worker")

IDLE_MIN_S = 0.01
IDLE_MAX_S = 1.0  # with no wake-up source: the bounded back-off poll tops out here
# With NOTIFY (PostgreSQL) or the commit watcher (SQLite) a poll only catches due retries
# and schedules (and a wake-up that went missing).
IDLE_MAX_LISTENING_S = 5.0
#: A standby process (``prefork``) whose last claim found nothing polls this seldom: the
#: first process's poll finds what time makes claimable, and tells it of a backlog.
STANDBY_POLL_S = 60.0
#: How long every thread of the first process (``prefork``) must have been busy before
#: it passes a wake-up on to the standby processes (``Worker._pass_on``): longer than a
#: quick task runs, so a trickle of quick tasks is not raced for by every process.
FIRST_BUSY_S = 0.003
#: A retry's poll comes this long after its delay ends (the engine's clock decides).
RETRY_MARGIN_S = 0.05
START_RETRY_S = 60.0  # how long start-up keeps retrying a database that does not answer
SHUTDOWN_ERROR = "worker stopped before the handler finished (shutdown timeout)"
# After a database error the loop waits this long (doubling) before trying again.
FAULT_MIN_S = 0.05
FAULT_MAX_S = 5.0


class Worker:
    """Runs the consumers of ``queues`` (all registered ones when empty) on
    ``concurrency`` threads until stopped. ``run()`` returns the exit code (0)."""

    def __init__(
        self,
        queues: Iterable[str] | None = None,
        *,
        concurrency: int = 1,
        burst: bool = False,
        max_messages: int | None = None,
        max_memory_mb: float | None = None,
        shutdown_timeout_s: float = 30.0,
        reaper: bool = True,
        periodic: bool = True,
        standby: bool = False,
        siblings: Siblings | None = None,
        registry: Registry | None = None,
        install_signals: bool = True,
        rng: random.Random | None = None,
        using: str | None = None,
    ) -> None:
        self.using = databases.alias_of(using)
        self.registry = registry if registry is not None else registry_mod.registry
        self.consumers: dict[str, Consumer] = self.registry.select(list(queues or []))
        if not self.consumers:
            raise ImproperlyConfigured("no consumers are registered")
        self.concurrency = arguments.check_int(concurrency, "concurrency", 1, 1024)
        self.burst = burst
        self.max_messages = max_messages
        self.max_memory_mb = max_memory_mb
        self.shutdown_timeout_s = shutdown_timeout_s
        self.reaper = reaper
        self.periodic = periodic
        #: A standby process of ``runworker --processes`` (``prefork``): after a claim
        #: that found nothing it claims at its poll or when the first process tells it
        #: of a backlog through ``siblings``, not on every wake-up.
        self.standby = standby
        self.siblings = siblings
        self._found = True
        self._told = False
        #: The first process of several: when to look again at whether every thread of
        #: its is still busy with a wake-up waiting (``_pass_on``; infinity: no look
        #: due), and the wake-up generations it last passed on.
        self._first_check_at = math.inf
        self._passed_on: dict[str, int] = {}
        #: A standby process on SQLite: it watches no commits, the first tells it.
        self._follows_first = False
        self._full_claims = 0
        self.install_signals = install_signals
        self.rng = rng or random.Random()  # noqa: S311 - jitter, not security
        self.worker_id: int | None = None
        self._skew_leases: list[float] = []
        self._clock: clockskew.ClockGuard | None = None
        self.claimed = 0
        #: What this worker's batched settlements did, by outcome (``engine.types.Outcome``)
        #: as the engine's verbs answered: completed, retried, dead_lettered, forwarded...
        self.outcomes: Counter[str] = Counter()
        self.stop_reason: str | None = None
        self._drain_deadline: float | None = None
        self._wake_key = f"#worker-{id(self)}"
        self._on_signal = drain_then_exit(self.stop)
        self._threads: list[Any] = []
        self._rotation = 0
        self.listening = False
        self._listener: listen.Listener | None = None
        self._watcher: listen.CommitWatcher | None = None
        # While wake-ups are reliable (``_tick_woken``): claim every queue at the next
        # tick; the queues to claim at the next tick whatever else woke the loop (their
        # last claim took all it asked for, or a flush heard them); the queues' wake-up
        # generations and (SQLite) this connection's commit counter as of the last
        # claim; the poll's interval and next time.
        self._again = True
        self._due: set[str] = set()
        self._heard: dict[str, int] = {}
        self._commits: int | None = None
        self._poll_s = IDLE_MAX_LISTENING_S
        self._poll_at = 0.0
        self._limited = False
        self._undrained: set[str] = set()
        #: When this worker's own retries become claimable (``time.monotonic()``).
        self._retries: list[float] = []
        self.prefetch = Prefetch(self.concurrency)
        self.pool = Pool(
            self.concurrency,
            using=self.using,
            backoff=self._backoff,
            wake=self._wake,
            observe=self.prefetch.observe,
            needs_wake=self._needs_wake,
        )

    # -- public -------------------------------------------------------------------------

    def run(self) -> int:
        with stop_on_signals(self._on_signal, install=self.install_signals):
            try:
                self._start()
                self._loop()
            finally:
                self._finish()
        return 0

    def stop(self, reason: str = "stop requested") -> None:
        """Stop claiming; finish in-flight work within the shutdown timeout; release
        what was claimed but not started. Safe from any thread and signal handlers."""
        if self.stop_reason is None:
            self.stop_reason = reason
            self._drain_deadline = time.monotonic() + self.shutdown_timeout_s
        self._wake()

    # -- start and stop -----------------------------------------------------------------

    def _start(self) -> None:
        # The database may be briefly unavailable at start too (a locked SQLite file, a
        # PostgreSQL restart): retry the start-up writes like the loop retries its ticks.
        fault_s = FAULT_MIN_S
        deadline = time.monotonic() + START_RETRY_S
        while True:
            try:
                self._register()
                break
            except (OperationalError, InterfaceError) as exc:
                if time.monotonic() > deadline or self.stop_reason is not None:
                    raise
                logger.warning("database error at start (%s); retrying in %.2fs", exc, fault_s)
                self._close_connection()
                time.sleep(fault_s)
                fault_s = min(fault_s * 2, FAULT_MAX_S)
        self.pool.note_beat(time.monotonic())  # registering was this worker's first beat
        self.pool.start()
        wid = self.worker_id
        assert wid is not None  # set by _register
        self._threads = [
            background.heartbeat_loop(
                wid,
                current().heartbeat_interval_s,
                self.pool.busy,
                self.using,
                self._gauges,
                self.pool.note_beat,
            )
        ]
        if self.reaper:
            self._threads.append(background.reaper_loop(current().reap_interval_s, self.using))
        if self.periodic:
            for service in registry_mod.services():  # the periodic ticker (tasks.plugin)
                thread = service(self.using)
                if thread is not None:
                    self._threads.append(thread)
        self.listening = dialect_for(self.using).has_listen_notify
        if self.listening:
            self._listener = background.Listener(self.using, on_unavailable=self._stop_listening)
            self._threads.append(self._listener)
            wakeup.watch(self._hear)
        elif (path := listen.watched_file(self.using)) is not None:
            if self.standby and self.siblings is not None:
                # The first process's watcher hears every commit and tells this one
                # when it cannot claim for one itself (``_pass_on``): a watcher in
                # every process woke them all at each commit, on the same cores.
                self._follows_first = True
            else:
                self._watcher = listen.CommitWatcher(path, list(self.consumers))
                self._threads.append(self._watcher)
        for t in self._threads:
            t.start()
        if self.standby and self.siblings is not None:
            self.siblings.listen(self._on_told)
        logger.info(
            "worker %s started: queues %s, concurrency %s",
            wid,
            ", ".join(self.consumers),
            self.concurrency,
        )

    def _register(self) -> None:
        """Declared queues, the served queues' existence, and this worker's registry row."""
        if current().queues:
            sync_declared(registry_mod.declared_queues(), using=self.using)
        leases = []
        for name, consumer in self.consumers.items():
            try:
                queue = get_queue(name, using=self.using)  # fail fast on a missing queue
            except QueueNotFoundError:
                if consumer.queue_options is None:
                    raise
                queue = create_queue(name, using=self.using, **consumer.queue_options)
            leases.append(queue.lock_duration)
        self._skew_leases = leases
        skew = clockskew.check_at_start(self.using, leases)
        logger.info("clock: %s", clockskew.describe(skew))
        self.worker_id = background.register_worker(list(self.consumers), self.using, skew)
        self._clock = clockskew.ClockGuard(self.using, clockskew.bound_s(leases))

    def _gauges(self) -> dict[str, int | None]:
        """What the heartbeat records beside ``in_flight`` (runs in the heartbeat thread)."""
        skew = clockskew.measure_ms(self.using)
        if abs(skew) > clockskew.bound_s(self._skew_leases) * 1000:
            logger.warning("clock: %s; fix NTP on this host", clockskew.describe(skew))
        return {"claimed": self.claimed, "failed": self.pool.failures, "clock_skew_ms": skew}

    def _finish(self) -> None:
        # Each step may meet a database fault; what it could not hand back returns
        # through lease expiry or the stale-worker pass, so log it and go on stopping.
        self._safely(lambda: self._release(self.pool.take_pending()))
        self._safely(self._flush_completions)
        for d in self.pool.held():  # still running past the shutdown timeout
            self._safely(functools.partial(self._abandon, d, SHUTDOWN_ERROR))
        self._safely(self._flush_completions)
        self.pool.close()
        wakeup.unwatch(self._hear)
        for t in self._threads:  # all asked at once, so their last passes overlap
            t.request_stop()
        for t in self._threads:
            t.stop()
        unsettled = self.pool.held()
        if unsettled:
            # A stopped worker's locks are reclaimed at once (a dead one's only after
            # WORKER_STALE_AFTER): marking this one stopped while it still holds live
            # leases it failed to settle would hand them to another worker before they
            # end. Left unmarked, they come back when they expire, as after a crash.
            logger.warning(
                "stopping with %s unsettled lease(s) after database errors; they "
                "return when they expire",
                len(unsettled),
            )
        elif self.worker_id is not None:
            wid = self.worker_id
            self._safely(
                lambda: background.mark_stopped(
                    wid, self.using, claimed=self.claimed, failed=self.pool.failures
                )
            )
        settled = ", ".join(f"{n} {name}" for name, n in sorted(self.outcomes.items()))
        logger.info(
            "worker %s stopped (%s)%s",
            self.worker_id,
            self.stop_reason or "done",
            f"; settled in batches: {settled}" if settled else "",
        )
        self._close_connection()

    def _safely(self, step: Callable[[], Any]) -> None:
        try:
            step()
        except DatabaseError as exc:
            logger.warning("while stopping: database error (%s: %s)", type(exc).__name__, exc)
            self._close_connection()

    # -- the loop -----------------------------------------------------------------------

    def _loop(self) -> None:
        """Run ticks until one says the worker is done.

        A database error (a dropped connection, a locked SQLite file, a failover) never
        ends the worker: it is logged, the connection is closed so the next tick opens a
        fresh one, and the loop backs off (50 ms doubling to 5 s) and carries on. Every
        step is safe to repeat: held leases are renewed on the next tick, completions
        that did not go through are retried (an exact replay of one that did commit
        succeeds, thanks to its receipt), and a claim whose reply was lost comes back
        through lease expiry.
        """
        idle_s = IDLE_MIN_S
        fault_s = 0.0
        keys = [*self.consumers, self._wake_key]
        while True:
            since = wakeup.generations(keys)
            try:
                next_idle = self._tick(since, idle_s)
            except DatabaseError as exc:
                fault_s = min(max(fault_s * 2, FAULT_MIN_S), FAULT_MAX_S)
                logger.warning(
                    "database error (%s: %s); reconnecting in %.2fs",
                    type(exc).__name__,
                    exc,
                    fault_s,
                )
                self._close_connection()
                db_health.suspect_all()  # the handler threads' connections may be gone too
                self._again = True  # a wake-up the failed tick took is not lost
                if self._drain_deadline is not None and time.monotonic() > self._drain_deadline:
                    return
                wakeup.wait_any(since, fault_s)
                continue
            fault_s = 0.0
            if next_idle is None:
                return
            idle_s = next_idle

    def _woken(self) -> bool:
        """Whether a send elsewhere wakes this worker now: its LISTEN works (PostgreSQL),
        or its commit watcher watches (SQLite)."""
        if self._listener is not None:
            return self.listening and self._listener.listening.is_set()
        if self._follows_first:
            return True  # the first process's watcher (``_pass_on``)
        return self._watcher is not None and self._watcher.watching.is_set()

    def _tick(self, since: Any, idle_s: float) -> float | None:
        """One pass of the loop; returns the next idle back-off, or None to stop."""
        woken = self._woken()
        idle_max = IDLE_MAX_LISTENING_S if woken else IDLE_MAX_S
        db_health.refresh()  # the main thread's connection, once per tick
        self._flush_completions(force=self.stop_reason is not None)
        self._expire_timeouts()
        self._renew_due()
        self._check_memory()
        if self.stop_reason is not None:
            self._interrupt_resumable()
            self._release(self.pool.take_pending())
            self._flush_completions()
            if not self.pool.busy():
                return None
            if self._drain_deadline is not None and time.monotonic() > self._drain_deadline:
                logger.warning("shutdown timeout: abandoning %s running", self.pool.busy())
                return None
            wakeup.wait_any(since, self._next_deadline(0.5))
            return idle_s
        if self._clock is not None and not self._clock.may_claim():
            # The clock jumped: claim nothing until the skew is measured again.
            wakeup.wait_any(since, self._next_deadline(clockskew.RECHECK_EVERY_S))
            return idle_s
        if woken and not self.burst:
            return self._tick_woken(since, idle_s)
        self._again = True  # when wake-ups work again, claim first (``_tick_woken``)
        idle_before = not self.pool.busy()
        got = self._claim()
        if got:
            if self._room():
                return IDLE_MIN_S  # claimed less than asked: look again at once
            idle_s = IDLE_MIN_S
        elif self._out_of_work(idle_before):
            return None
        wakeup.wait_any(since, self._next_deadline(idle_s if self.pool.free() else 1.0))
        return idle_s if got else min(idle_s * 2, idle_max)

    def _tick_woken(self, since: Any, idle_s: float) -> float | None:
        """The claim of a tick while wake-ups work (``_woken``): claim only when there
        can be something new to claim, and only the queues where there can be,
        otherwise sleep until woken or the poll is due.

        A message becomes claimable (a) by a send, resume or released dependency, each
        of which wakes the queue (NOTIFY; on SQLite the commit watcher, which sees every
        commit, this worker's own as well: the claim then waits for this connection's
        commit counter to move, which only other connections' commits do, unless the
        wake-up came while this worker's own settlements committed, and claims only the
        queues a read finds something claimable in, ``engine.claimable``: a completion
        or a heartbeat wakes it too, and on SQLite an empty claim is a write
        transaction); a settlement that makes a group's next message claimable wakes the
        queue too (``lines``); (b) when its last claim took all it asked for (there may
        be more): claim at once; (c) with time (a retry's or schedule's delay ends, a
        lease runs out, a rate limit's budget returns): the poll, every
        ``IDLE_MAX_LISTENING_S``, at a retry's due time for the worker's own, and on the
        back-off from ``IDLE_MIN_S`` for a limited queue. So an idle worker claims once
        per poll, and a trickle costs a claim and a completion
        per message, not a string of empty claims between them. The poll (and a retry's
        due time, and the first claim after wake-ups resume) claims every queue; (a) and
        (b) claim only the queues they concern, so a send to one queue of a worker that
        consumes several costs no empty claims of the others."""
        got = 0
        if self._claim_due():
            now = time.monotonic()
            every = (
                self._again
                or self._told
                or now >= self._poll_at
                or any(t <= now for t in self._retries)
            )
            woken = set() if every else set(self._woken_queues()) - self._due
            self._retries = [t for t in self._retries if t > now]
            self._heard = wakeup.generations(list(self.consumers))
            self._commits = listen.commit_counter(self.using) if self._watcher else None
            self._told = False
            if woken and self._watcher is not None:
                # Most commits the watcher hears put nothing in a queue (a completion, a
                # heartbeat): a read says where a claim could take something, after the
                # wake-up was taken in (a commit after the read wakes it again).
                woken &= claimable(self.using, woken)
            only = None if every else self._due | woken
            got = self._claim(only) if only is None or only else 0
            self._tell_full(self._want() <= 0)
            self._again = False
            self._due = self._undrained
            self._found = got > 0
            if self.standby and not got:
                self._poll_s = STANDBY_POLL_S
            elif not self._limited:
                self._poll_s = IDLE_MAX_LISTENING_S
            elif got:
                self._poll_s = IDLE_MIN_S
            else:
                self._poll_s = min(max(self._poll_s, IDLE_MIN_S / 2) * 2, IDLE_MAX_LISTENING_S)
            poll_at = time.monotonic() + self._poll_s
            # A claim of some queues never puts off the poll of the others.
            self._poll_at = poll_at if only is None else min(self._poll_at, poll_at)
        if not got and self._out_of_work():
            return None
        if self._due and self._want() > 0:
            return idle_s  # took all it asked for, and has room: claim again at once
        now = time.monotonic()
        due = min([self._poll_at, self._first_check_at, *self._retries])
        poll_in = max(0.0, due - now)
        full_in = min(1.0, max(0.0, self._first_check_at - now))
        wakeup.wait_any(since, self._next_deadline(poll_in if self.pool.free() else full_in))
        return idle_s

    def _claim_due(self) -> bool:
        """Whether ``_tick_woken`` claims now (its docstring's rule)."""
        full = self._want() <= 0
        self._tell_full(full)
        now = time.monotonic()
        if full:
            self._pass_on(now)
            return False  # a wake-up stays pending until a thread is free
        # A thread is free: the first claims for itself, no look at being stuck is due
        # (one left in the past would end every wait of the loop at once).
        self._first_check_at = math.inf
        if self._again or self._due or self._told or now >= self._poll_at:
            return True
        if any(t <= now for t in self._retries):
            return True
        if self.standby and not self._found:
            return False  # the first claims for wake-ups, or tells (``_pass_on``)
        return bool(self._woken_queues())

    def _tell_backlog(self) -> None:
        """After each claim (``_claim``) of the first process of several: two full
        claims in a row are a backlog (one full claim is also what a single message is
        to a worker that asked for one), and the standby processes are told to claim
        too. Whether the claim was woken or polled: while the first's wake-ups are down
        (a commit watcher or listener retrying, or none on this database), it polls, and
        a backlog it finds is still shared."""
        self._full_claims = self._full_claims + 1 if self._undrained else 0
        if self._full_claims > 1 and not self.standby and self.siblings is not None:
            self.siblings.tell()

    def _tell_full(self, full: bool) -> None:
        """The first process of several says whether it claims nothing now, every
        thread of its busy (``Siblings.first_busy_for``), at each claim decision and
        after each claim."""
        if not self.standby and self.siblings is not None:
            self.siblings.set_first_full(full)

    def _pass_on(self, now: float) -> None:
        """The first process of several, every thread of its busy: a wake-up it cannot
        claim for is passed on to the standby processes (``Siblings.tell``) once every
        thread has been busy for ``FIRST_BUSY_S`` (a slow task, or a process's cold first
        one: a message sent meanwhile waited for it, 20-100 ms), not sooner, so a
        trickle of quick tasks stays the first's; sooner, it looks again then. A wake-up
        is passed on once. The standby ones follow no wake-ups of their own while they
        stand by; on SQLite they watch no commits at all."""
        if self.standby or self.siblings is None:
            return
        if self._first_check_at <= now:
            self._first_check_at = math.inf
        heard = self._woken_queues()
        if not heard or all(self._passed_on.get(q) == g for q, g in heard.items()):
            return
        busy_s = self.siblings.first_busy_for()
        if busy_s < FIRST_BUSY_S:
            self._first_check_at = min(self._first_check_at, now + FIRST_BUSY_S - busy_s)
        elif self.siblings.tell():
            self._passed_on = heard
        else:  # told of a backlog a moment ago: look again when it may tell again
            self._first_check_at = min(self._first_check_at, now + TELL_EVERY_S)

    def _woken_queues(self) -> dict[str, int]:
        """The queues woken since the last claim (their wake-up generation moved), each
        with the generation heard. On SQLite the commit watcher wakes every queue on any
        commit, this worker's own as well: none counts unless this connection's commit
        counter moved too."""
        heard = wakeup.generations(list(self.consumers))
        woken = {name: g for name, g in heard.items() if g != self._heard.get(name)}
        if woken and self._watcher is not None:
            if listen.commit_counter(self.using) == self._commits:
                return {}
        return woken

    def _retry_at(self, delay_s: float) -> None:
        """A message this worker gave back becomes claimable in ``delay_s``: poll then."""
        self._retries.append(time.monotonic() + delay_s + RETRY_MARGIN_S)

    def _close_connection(self) -> None:
        try:
            connections[self.using].close()
        except DatabaseError:
            pass  # it was broken; Django has dropped it either way

    def _out_of_work(self, idle_before: bool = True) -> bool:
        """True when the worker should exit: burst found nothing, or max-messages is done.

        A burst ends only on an empty claim made while nothing ran (``idle_before``): a
        handler still running during the claim may give its message back as it ends (a
        snooze, a retry with no delay), after the claim looked and before this check."""
        if self.pool.busy():
            return False
        if self.burst and self.pool.free() and idle_before:
            self.stop_reason = "burst: nothing left to claim"
            return True
        if self.max_messages is not None and self.claimed >= self.max_messages:
            self.stop_reason = f"max-messages {self.max_messages} reached"
            return True
        return False

    def _next_deadline(self, cap_s: float) -> float:
        """How long the loop may sleep: until a lease needs renewing, a handler's
        timeout runs out or the group commit is due; at most ``cap_s``."""
        now, clock_now = time.monotonic(), settlement.clock_s()
        wait = cap_s
        for d in self.pool.held():
            wait = min(wait, d.next_renew - clock_now)
            if d.timeout is not None and d.started is not None:
                wait = min(wait, d.started + d.timeout - now)
        if self.pool.counts()[2]:
            wait = min(wait, GROUP_COMMIT_S - self.pool.oldest_done_age(now))
        return max(0.001, wait)

    def _needs_wake(self, pending: int, running: int, waiting: int) -> bool:
        """Whether a handler's return (the pool's counts after it) gives the loop
        something to do before the deadline it sleeps to (``_next_deadline``, which
        covers lease renewals, handler timeouts and the group commit of what was
        waiting): a stop in progress, an empty pool (flush now, claim, or end a burst),
        a full batch to flush, or room to claim (the prefetch policy). Called from
        handler threads; the pool itself wakes the loop for the first settlement that
        waits, whose group commit the sleep does not yet cover."""
        if self.stop_reason is not None or pending + running == 0:
            return True
        return waiting >= prefetch.MAX_BATCH or self.prefetch.want(pending, running) > 0

    def _want(self) -> int:
        """How many messages to claim now (the prefetch policy, within max-messages)."""
        pending, running, _ = self.pool.counts()
        want = self.prefetch.want(pending, running)
        if self.max_messages is not None:
            want = min(want, self.max_messages - self.claimed)
        return max(0, want)

    def _room(self) -> bool:
        """A handler thread has nothing to run."""
        return self.pool.free() > 0

    def _claim(self, only: set[str] | None = None) -> int:
        """Claim up to ``_want()`` from the worker's queues (those in ``only``, when
        given); ``_undrained`` is then the queues among them that may hold more: those
        that gave all they were asked for, and those not asked once the want was met."""
        want = self._want()
        got = 0
        limited = False
        undrained: set[str] = set()
        # Rotate which queue claims first, so one busy queue cannot starve the others.
        names = list(self.consumers)
        self._rotation = (self._rotation + 1) % len(names)
        for name in names[self._rotation :] + names[: self._rotation]:
            if only is not None and name not in only:
                continue
            consumer = self.consumers[name]
            if want - got <= 0:
                undrained.add(name)
                continue
            claimed_at = time.monotonic()
            asked = want - got
            msgs = receive(name, max_messages=asked, worker_id=self.worker_id, using=self.using)
            if len(msgs) >= asked:
                undrained.add(name)
            limited = limited or getattr(msgs, "limited", False)
            now = now_ms()
            batch = []
            for m in msgs:
                # The lease ends when the row says, not ``lease_s`` after this line runs:
                # a worker paused between the claim's commit and here (SIGSTOP, a VM
                # pause) must not see a spent lease as a fresh one.
                until_ms = to_ms(m.locked_until) if m.locked_until else now
                lease_s = max(0.1, (until_ms - now) / 1000)
                delivery = Delivery(m, consumer, lease_s, now / 1000 + lease_s / 2, until_ms / 1000)
                delivery.claimed_at = claimed_at
                delivery.timeout = consumer.timeout_of(m)
                m.resumable = consumer.resumable
                batch.append(delivery)
            self.pool.submit(batch)
            got += len(batch)
        self.claimed += got
        self._limited = limited
        self._undrained = undrained
        if want > 0:  # a full worker's claim asks for nothing: it is no claim
            self._tell_backlog()
        return got

    # -- leases, timeouts, settlements --------------------------------------------------

    def _renew_due(self) -> None:
        settlement.renew_due(self.pool, self.using, self.worker_id)

    def _expire_timeouts(self) -> None:
        for d in self.pool.expire(time.monotonic()):
            with self.pool.lock:
                self.pool.failures += 1
            self._abandon(d, f"TimeoutError: handler ran longer than its timeout of {d.timeout}s")

    def _abandon(self, d: Delivery, error: str) -> None:
        try:
            self._give_up(d, error)
        finally:
            # After the abandon, so that its settle span is the process span's child.
            tracing.finish(d.msg, "timed_out")

    def _give_up(self, d: Delivery, error: str) -> None:
        token = d.msg.lock_token
        assert token is not None
        if d.msg.cancel_requested:
            self._cancel(d, error)
            return
        if d.msg.resumable and self.stop_reason is not None:
            # Still running at the shutdown deadline: resume elsewhere, not a failure.
            try:
                handling.release_to_resume(d.msg, self.using)
            except LockLostError as exc:
                logger.warning(
                    "%s #%s: could not release: %s",
                    d.msg.queue,
                    d.msg.seq,
                    exc,
                    extra=log_fields(d.msg),
                )
            d.lost = True
            return
        if d.consumer.give_up is not None:
            try:
                d.consumer.give_up(d.msg, error)
            except Exception:
                logger.exception(
                    "%s #%s: giving up failed", d.msg.queue, d.msg.seq, extra=log_fields(d.msg)
                )
            d.lost = True
            return
        delay = self._backoff(d.msg.delivery_count)
        self._retry_at(delay)
        try:
            settle.abandon(
                d.msg.queue, d.msg.seq, token, delay=delay, error=error, using=self.using
            )
            logger.warning(
                "%s #%s abandoned: %s", d.msg.queue, d.msg.seq, error, extra=log_fields(d.msg)
            )
        except LockLostError as exc:
            logger.warning(
                "%s #%s: could not abandon: %s",
                d.msg.queue,
                d.msg.seq,
                exc,
                extra=log_fields(d.msg),
            )
        d.lost = True

    def _interrupt_resumable(self) -> None:
        """While stopping: ask each running ``resumable`` handler to stop
        (``msg.stop_requested``; an ``async def`` one is cancelled), so it can be given
        back to resume from its checkpoint (``handling.release_to_resume``)."""
        for d in self.pool.held():
            if d.msg.resumable and not d.msg.stop_requested:
                d.msg.stop_seen()

    def _cancel(self, d: Delivery, error: str) -> None:
        """A handler that ignored a cancel request until the worker gave up on it (its
        timeout, or the shutdown's): dead-lettered as cancelled, not retried."""
        token = d.msg.lock_token
        assert token is not None
        item = settle.RejectItem(d.msg.seq, token, Cancelled.REASON, f"cancelled: {error}")
        got = settle.reject_many(d.msg.queue, [item], using=self.using)[0]
        d.msg.outcome = got
        if got.ok:
            logger.warning(
                "%s #%s cancelled: %s", d.msg.queue, d.msg.seq, error, extra=log_fields(d.msg)
            )
        else:
            logger.warning(
                "%s #%s: could not cancel: lease lost",
                d.msg.queue,
                d.msg.seq,
                extra=log_fields(d.msg),
            )
        d.lost = True

    def _flush_completions(self, force: bool = True) -> None:
        """Write finished work: now when ``force``, else when the group commit is due."""
        if not force:
            pending, running, done = self.pool.counts()
            age = self.pool.oldest_done_age(time.monotonic())
            if not prefetch.flush_due(done, age, pending + running):
                return
        with wakeup.noted() as announced:
            self.outcomes.update(settlement.flush_completions(self.pool, self.using))
            delays = self.pool.retry_delays()
            self.outcomes.update(settlement.flush_failures(self.pool, self.using))
        for delay in delays:
            self._retry_at(delay)
        # What this flush's commits made claimable (the next message of a group's line, a
        # dependent: ``lines``, ``dependencies``) is announced in this thread: claim those
        # queues without asking the commit counter, which on SQLite this connection's own
        # commits leave where it was. A wake-up another thread heard meanwhile (a send
        # elsewhere; on SQLite the watcher, which sees this flush's commit too) is
        # ``_woken_queues``'s to judge, so a flush alone never costs an empty claim.
        self._due |= {name for name in self.consumers if name in announced}

    def _release(self, ds: list[Delivery]) -> None:
        settlement.release(ds, self.using)

    def _check_memory(self) -> None:
        # Checked once a handler has returned, so a limit below the baseline recycles
        # after each message instead of never starting (a claim alone is not work done:
        # a stop right after it would release every message unstarted).
        pending, running, _ = self.pool.counts()
        finished = self.claimed - pending - running
        if self.max_memory_mb is not None and self.stop_reason is None and finished > 0:
            rss = rss_mb()
            if rss > self.max_memory_mb:
                self.stop(f"max-memory: {rss:.0f} MB > {self.max_memory_mb:g} MB")

    def _backoff(self, attempt: int) -> float:
        conf = current()
        return backoff_delay(
            attempt,
            base_s=conf.retry_backoff_base_s,
            cap_s=conf.retry_backoff_cap_s,
            rng=self.rng,
        )

    def _hear(self, key: str) -> None:
        """A cancel request heard through NOTIFY (``running.parse_heard``) reaches the
        handler of the message at once; the next renewal would bring it otherwise."""
        heard = running.parse_heard(key)
        if heard is None or heard[0] != self.using:
            return
        for d in self.pool.held():
            if d.key == heard[1:] and not d.msg.cancel_requested:
                d.msg.cancel_seen()

    def _stop_listening(self) -> None:
        self.listening = False  # no NOTIFY here: poll like SQLite does

    def _wake(self) -> None:
        wakeup.notify(self._wake_key)

    def _on_told(self) -> None:
        """The first process's claim took all it asked for, or it passed on a wake-up
        (``Siblings``, ``_pass_on``)."""
        self._told = True
        self._wake()
