"""PostgreSQL LISTEN: a thread with a dedicated connection that turns each notification
(its payload is a queue name) into an in-process wake-up (``wakeup.notify``). On SQLite,
which has no NOTIFY, ``CommitWatcher`` does the same job for a worker: it watches the
file's commit counter and wakes the worker when another connection commits; and it
checkpoints the write-ahead log when writes pause, so a commit rarely has to.

Every send runs ``pg_notify('mqlite', queue)`` in its transaction, so a notification
arrives on commit and never for a rollback; a settlement that finished messages sends
``#done <queue>`` (``finished``). A worker runs its own listener; code that waits
outside a worker (``areceive(wait=...)``, ``mq.wait``) shares one listener per database
per process, started on first use (``ensure_listener``), and on SQLite one commit
watcher (``ensure_watcher``).
"""

from __future__ import annotations

import logging
import secrets
import select
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any

from django.db import connections

from . import inotify, running, wakeup
from .dialects import dialect_for

logger = logging.getLogger("django_mqlite.worker")

NOTIFY_CHANNEL = "mqlite"


#: Seconds the listener waits for its own test notification after LISTEN.
PROBE_S = 5.0


def listen_wrapper(using: str) -> Any:
    """The connection settings LISTEN uses for database ``using``, or None when
    ``MQLITE["LISTEN"]`` turns it off there. A dict there overrides the database's own
    settings (e.g. the PORT of PostgreSQL itself when the alias points at PgBouncer)."""
    from ..conf import current

    overrides = current().listen.get(using, {})
    wrapper = connections[using]
    if overrides is False or overrides is None:
        return None
    if overrides:
        wrapper = type(wrapper)({**wrapper.settings_dict, **overrides}, alias=f"{using}:listen")
    return wrapper


class Service(threading.Thread):
    """A daemon thread that runs until asked to stop: ``request_stop()`` asks (so many
    can be asked at once and their last passes overlap), ``stop()`` asks and waits.

    A ``wakeable`` one blocks in ``select`` rather than on ``stopping``: it adds
    ``self._woken`` to what it selects on, and ``request_stop()`` writes a byte there, so
    the wait ends at once instead of after its timeout (a burst worker's exit would
    otherwise wait for it). It closes the pair when it ends (``_close_waker``)."""

    def __init__(self, name: str, *, wakeable: bool = False) -> None:
        super().__init__(name=name, daemon=True)
        self.stopping = threading.Event()
        self._wakeable = wakeable
        if wakeable:
            self._waker, self._woken = socket.socketpair()

    def request_stop(self) -> None:
        self.stopping.set()
        if self._wakeable:
            try:
                self._waker.send(b"x")
            except OSError:
                pass  # the thread has ended and closed it

    def _close_waker(self) -> None:
        self._waker.close()
        self._woken.close()

    def stop(self, wait_s: float = 2.0) -> None:
        self.request_stop()
        if self.is_alive():
            self.join(wait_s)


class Listener(Service):
    """LISTENs on a dedicated PostgreSQL connection and turns each notification (its
    payload is a queue name) into an in-process wake-up. Reconnects after errors.

    LISTEN needs a session of its own: through a transaction-pooling PgBouncer it
    succeeds but never hears anything. So after LISTEN the listener sends itself a test
    notification the way producers send theirs; when it does not arrive, the listener
    says so in the log and stops (``on_unavailable``): the worker then polls.
    """

    def __init__(
        self,
        using: str,
        poll_s: float = 0.25,
        on_unavailable: Callable[[], Any] | None = None,
    ) -> None:
        super().__init__("mqlite-listener", wakeable=True)
        self.using = using
        self.poll_s = poll_s
        self.on_unavailable = on_unavailable
        self.listening = threading.Event()

    def run(self) -> None:
        try:
            wrapper = listen_wrapper(self.using)
            if wrapper is None:
                self._give_up(f'LISTEN is off for database {self.using!r} (MQLITE["LISTEN"])')
                return
            while not self.stopping.is_set():
                try:
                    self._listen(wrapper)
                except Exception:
                    self.listening.clear()
                    logger.exception("LISTEN connection failed; reconnecting")
                    self.stopping.wait(1.0)
        finally:
            self._close_waker()

    def _notes(self, conn: Any) -> Any:
        """The notifications that have arrived, then a wait of at most ``poll_s`` for
        more (or for stop())."""
        yield from conn.notifies(timeout=0)
        if not self.stopping.is_set():
            select.select([conn.fileno(), self._woken], [], [], self.poll_s)

    def _listen(self, wrapper: Any) -> None:
        conn = wrapper.get_new_connection(wrapper.get_connection_params())
        try:
            conn.autocommit = True
            conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
            if not self._probe(conn):
                self._give_up(
                    f"LISTEN on database {self.using!r} hears no notifications (a "
                    "transaction-pooling PgBouncer in between?); point "
                    f'MQLITE["LISTEN"][{self.using!r}] at PostgreSQL itself, e.g. '
                    '{"PORT": 5432}'
                )
                return
            self.listening.set()
            while not self.stopping.is_set():
                for note in self._notes(conn):
                    if note.payload.startswith(running.CANCEL_NOTE):
                        # For a message, not a queue: said with its database.
                        wakeup.announce(f"{note.payload} {self.using}")
                    else:
                        wakeup.notify(note.payload)
        finally:
            conn.close()
            connections[self.using].close()

    def _probe(self, conn: Any) -> bool:
        """Send a notification through the database's ordinary connection (as a
        producer would) and wait for it on ``conn``."""
        payload = f"#probe-{secrets.token_hex(8)}"
        try:
            with connections[self.using].cursor() as cursor:
                cursor.execute("SELECT pg_notify(%s, %s)", [NOTIFY_CHANNEL, payload])
        finally:
            # This thread's ordinary connection served the probe only: do not hold it.
            connections[self.using].close()
        deadline = time.monotonic() + PROBE_S
        while not self.stopping.is_set() and time.monotonic() < deadline:
            for note in self._notes(conn):
                if note.payload == payload:
                    return True
                wakeup.notify(note.payload)
        return False

    def _give_up(self, why: str) -> None:
        logger.warning("%s: idle workers poll for new messages instead", why)
        self.stopping.set()
        if self.on_unavailable is not None:
            self.on_unavailable()


#: Where inotify is not available (not Linux): how often an idle SQLite worker's watcher
#: looks at the commit counter (seconds), at most this long from another process's
#: commit to the worker's claim. Each look is about 10 µs of SQLite, but the thread's
#: wake-up is what costs: about 0.2 ms of CPU here, 2-3% of a core every 10 ms.
WATCH_S = 0.01
#: With inotify: how many looks the watcher takes at once after a quiet spell before
#: the rate of one every ``WATCH_S`` holds it back. A trickle's message is three commits
#: (the send, the claim, the completion) and a heartbeat can fall just before the send:
#: with one look at once, a send within ``WATCH_S`` of a heartbeat waited the rest of it.
WATCH_BURST = 4
#: With inotify: how often the watcher looks anyway, should an event go missing.
RECHECK_S = 1.0
#: After the log was written with no new commit visible yet, how long the watcher looks
#: again (``_settle``): ``SETTLE_FIRST_S`` after each new write to the log, and between
#: writes at steps doubling from ``SETTLE_FIRST_S`` to ``SETTLE_MAX_STEP_S``. A commit
#: publishes itself just after its last write (after an fsync with ``synchronous=FULL``),
#: and what wakes the watcher is its first write: the first look nearly always comes
#: too early (119 of 130 at a trickle, measured). A commit's last writes also wake it
#: after the commit was seen, and then nothing comes until the next commit: at a steady
#: step of 1 ms that was 45-50 looks after every completion of a trickle, per worker
#: process, about a third of a trickle's CPU on SQLite (docs/benchmark.md).
SETTLE_S = 0.05
SETTLE_FIRST_S = 0.00025
SETTLE_MAX_STEP_S = 0.004
#: With inotify: once the watcher has seen this many commits since its last checkpoint,
#: and then the writes pause for ``CHECKPOINT_QUIET_S`` (no write to the log), it
#: checkpoints the log (``PRAGMA wal_checkpoint(PASSIVE)``: no reader or writer waits
#: for it). A message's commits (send, claim, completion) write about five pages each,
#: so 50 is a log of a few hundred frames: at a trickle the log never reaches SQLite's
#: ``wal_autocheckpoint`` (1,000), where the commit that crosses it checkpoints in the
#: committing thread (3-8 ms here: a pickup in about every 50 paid it). Counted, not
#: read off the log's index: opening and closing a descriptor on SQLite's files would
#: release this process's own POSIX locks on them (SQLite's documented hazard).
CHECKPOINT_COMMITS = 50
CHECKPOINT_QUIET_S = 0.01


def commit_counter(using: str) -> int | None:
    """This thread's connection to database ``using``: its commit counter (SQLite's
    ``PRAGMA data_version``, which moves when another connection commits, never for
    this one's own commits), or None where there is none. A read of shared memory,
    no transaction: it goes to the driver's connection, not through Django's cursor."""
    if not dialect_for(using).has_commit_counter:
        return None
    wrapper = connections[using]
    wrapper.ensure_connection()
    # Django's error wrapper: a closed or broken connection raises a Django
    # ``DatabaseError``, which the worker's loop answers by reconnecting.
    with wrapper.wrap_database_errors:
        return int(wrapper.connection.execute("PRAGMA data_version").fetchone()[0])


def watched_file(using: str) -> str | None:
    """The database file a ``CommitWatcher`` can watch for database ``using``, or None
    (no commit counter there, or an in-memory database)."""
    if not dialect_for(using).has_commit_counter:
        return None
    name = str(connections[using].settings_dict.get("NAME") or "")
    if not name or name == ":memory:" or "mode=memory" in name:
        return None
    return name


class CommitWatcher(Service):
    """Wakes an idle worker within milliseconds of another connection's commit on its
    SQLite database, without claiming: ``PRAGMA data_version`` on a connection of its
    own changes whenever any other connection (any process) commits, and reading it
    touches only the WAL index in shared memory (a few microseconds, no transaction). On
    a change it signals ``queues`` (``wakeup.notify``): the worker's wait ends and it
    claims. A commit of something else (a heartbeat, another app's table) wakes it for
    one empty claim; a bounded back-off poll still runs beside it, so a missed change
    costs at most that interval, never a message.

    When to look: on Linux, when the write-ahead log (``<file>-wal``) is written
    (inotify, ``engine.inotify``; every commit writes it): at once after a quiet spell
    (up to ``WATCH_BURST`` writes), then at most once every ``WATCH_S`` while writes
    keep coming; and every ``RECHECK_S``
    anyway, so an idle watcher costs no CPU. Elsewhere (or when the log cannot be
    watched) every ``poll_s``.

    With inotify it also checkpoints the log on its own connection when the writes
    pause after ``CHECKPOINT_COMMITS`` commits it saw (``CHECKPOINT_QUIET_S``), so the
    next commit does not have to."""

    def __init__(self, path: str, queues: list[str], poll_s: float = WATCH_S) -> None:
        super().__init__("mqlite-commit-watcher", wakeable=True)
        self.path = path
        self.queues = list(queues)
        self.poll_s = poll_s
        self.watching = threading.Event()
        #: How the last watch looked: "inotify" or "poll".
        self.mode = ""
        #: The checkpoints it ran, and the last one's log and checkpointed frames.
        self.checkpoints = 0
        self.last_checkpoint: tuple[int, int] = (0, 0)

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                try:
                    self._watch()
                except sqlite3.Error:
                    logger.exception("watching %s for commits failed; retrying", self.path)
                    self.watching.clear()
                    self.stopping.wait(1.0)
        finally:
            self._close_waker()

    def _watch(self) -> None:
        conn = sqlite3.connect(self.path, timeout=1.0, check_same_thread=False)
        changes = None
        try:
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            try:  # after the read above, which opened (or created) the log
                changes = inotify.FileChanges(f"{self.path}-wal")
            except OSError:
                changes = None
            self.mode = "poll" if changes is None else "inotify"
            self.watching.set()
            # The looks left to take at once, and when they were counted (a bucket
            # that refills one look every WATCH_S, up to WATCH_BURST).
            looks, counted = float(WATCH_BURST), time.monotonic()
            commits = 0  # the commits seen since the last checkpoint
            while not self.stopping.is_set():
                if changes is None:
                    self.stopping.wait(self.poll_s)
                    gone = written = False
                else:
                    fds = [changes.fileno(), self._woken.fileno()]
                    due = commits >= CHECKPOINT_COMMITS
                    ready, _, _ = select.select(
                        fds, [], [], CHECKPOINT_QUIET_S if due else RECHECK_S
                    )
                    if due and not ready:  # the writes paused
                        commits = 0
                        self._checkpoint(conn)
                        continue
                    written = fds[0] in ready
                    if written:
                        # At most one look every WATCH_S while writes keep coming: a
                        # busy database (this worker's own settlements among its
                        # commits) wakes the claim loop no more often than that; the
                        # first WATCH_BURST writes after a quiet spell are looked at at
                        # once (an idle worker's pickup, a send just after a heartbeat).
                        now = time.monotonic()
                        looks = min(WATCH_BURST, looks + (now - counted) / WATCH_S)
                        counted = now
                        if looks < 1:
                            self.stopping.wait((1 - looks) * WATCH_S)
                            looks, counted = 1.0, time.monotonic()
                        looks -= 1
                    gone = changes.drain() if written else False
                if self.stopping.is_set():
                    return
                now = conn.execute("PRAGMA data_version").fetchone()[0]
                if now == version and changes is not None and written and not gone:
                    # The log was written (not a timed recheck, which must not spin for
                    # SETTLE_S every RECHECK_S on an idle database) but the commit is not
                    # visible yet: a commit
                    # writes its frames first and publishes them in the shared-memory
                    # index after (which inotify cannot see). Look again for a moment.
                    now, gone = self._settle(conn, version, changes, fds)
                if now != version:
                    version = now
                    commits += 1
                    for queue in self.queues:
                        wakeup.notify(queue)
                if gone:  # the log was replaced: watch the new one
                    return
        finally:
            if changes is not None:
                changes.close()
            conn.close()

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        """Checkpoint the log on the watcher's connection, ``PASSIVE``: as much as no
        reader needs, never waiting (another process's checkpoint running: nothing)."""
        try:
            _, log, done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error:  # the commit that crosses the line still checkpoints
            logger.debug("checkpointing %s failed", self.path, exc_info=True)
            return
        self.checkpoints += 1
        self.last_checkpoint = (int(log), int(done))

    def _settle(
        self,
        conn: sqlite3.Connection,
        version: int,
        changes: inotify.FileChanges,
        fds: list[int],
    ) -> tuple[int, bool]:
        """The commit counter once it moves, for up to ``SETTLE_S``, and whether the log
        was replaced meanwhile. A write that was no commit (a transaction spilling its
        pages, the last frames of a commit already seen) leaves the counter where it
        was; a commit writes the log again, and that write is looked at
        ``SETTLE_FIRST_S`` after it, not at once: a look at each write of a commit took
        the CPU from the writer (two cores, a watcher per worker process). ``fds`` are
        the log's changes and the stop's wake-up, as ``_watch`` selects on them."""
        deadline = time.monotonic() + SETTLE_S
        step, now = SETTLE_FIRST_S, version
        while now == version:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select(fds, [], [], min(step, left))
            if self.stopping.is_set():
                break
            if fds[0] in ready:
                if changes.drain():
                    return int(now), True
                if self.stopping.wait(SETTLE_FIRST_S):
                    break
                step = SETTLE_FIRST_S
            else:
                step = min(step * 2, SETTLE_MAX_STEP_S)
            now = conn.execute("PRAGMA data_version").fetchone()[0]
        return int(now), False


_shared: dict[str, Listener] = {}
_shared_watchers: dict[str, CommitWatcher] = {}
_shared_lock = threading.Lock()


def commit_key(using: str) -> str:
    """The wake-up key this process's shared commit watcher of database ``using``
    signals on every commit there (``ensure_watcher``)."""
    return f"#commit {using}"


def ensure_listener(using: str) -> bool:
    """Start this process's shared listener for database ``using`` unless it runs; True
    when the database has LISTEN/NOTIFY (PostgreSQL), False otherwise (SQLite)."""
    if not dialect_for(using).has_listen_notify:
        return False
    with _shared_lock:
        current = _shared.get(using)
        if current is None or not current.is_alive():
            current = _shared[using] = Listener(using)
            current.start()
    return True


def ensure_watcher(using: str) -> CommitWatcher | None:
    """Start this process's shared commit watcher of database ``using`` unless it runs
    (what waits outside a worker use on SQLite: ``waiting.wait``); it signals
    ``commit_key(using)`` on every commit there. None where there is no commit counter
    to watch (PostgreSQL, whose NOTIFY does the job; an in-memory database)."""
    path = watched_file(using)
    if path is None:
        return None
    with _shared_lock:
        current = _shared_watchers.get(using)
        if current is None or not current.is_alive():
            current = _shared_watchers[using] = CommitWatcher(path, [commit_key(using)])
            current.start()
    return current


def stop_shared_listeners() -> None:
    """Stop the shared listeners and commit watchers (tests, before their database is
    dropped)."""
    with _shared_lock:
        services: list[Service] = [*_shared.values(), *_shared_watchers.values()]
        _shared.clear()
        _shared_watchers.clear()
    for service in services:
        service.stop()


def shared_listener(using: str) -> Listener | None:
    """This process's shared listener of database ``using``, when one was started."""
    with _shared_lock:
        return _shared.get(using)
