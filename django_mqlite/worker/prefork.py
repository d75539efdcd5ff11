"""``runworker --processes N``: a parent process supervising N forked worker processes.

Each child is a complete worker (its own threads, connections and registry row), so
CPU-bound handlers use N cores. The parent does no queue work and holds no database
connection; it only:

- forks the children (after closing its connections, so no socket is shared);
- restarts a child that exits with an error or is killed, and one that exits cleanly
  because it recycled itself (``--max-messages``, ``--max-memory``); a child that keeps
  dying right after starting is restarted with a growing delay instead of in a loop;
- forwards SIGTERM/SIGINT to every child, which then drains gracefully (a second signal
  is forwarded too: the children exit at once), and exits once all of them have;
- with ``--burst``, lets a child that drained its queues (exit 0) stay gone, and exits
  when every child has.

The children are not all alike: the first (slot 0) runs the reaper and the periodic
ticker and claims on every wake-up; the others are *standby*: once a claim of theirs
finds nothing they leave the wake-ups to the first and claim again at their poll, or
when the first tells them (``Siblings``): its last claims took all they asked for, so
there is a backlog to share, or a wake-up came while every thread of its has been busy
for a few milliseconds (shared memory says since when), so a message sent meanwhile
does not wait for the first to be free (``Worker._pass_on``). On SQLite a standby
watches no commits: the first's commit watcher hears them for all. An idle
``runworker -p 4`` then costs the database what one worker costs plus three
heartbeats, and a trickle of messages is not raced for by every process at once.

Without ``--processes``, ``runworker`` decides the count (``default_processes``): one
per core the process may use; where the database serializes its writers (SQLite), two
per core, at most four, and one on a single core. Each process there waits for the
write lock about a third of its time, which another process fills (measured on two
cores: four processes drained 1.1-1.3 times as fast as two; six were slower again, and
on one core two were slower than one).

Children run in their own process group, so a Ctrl-C in a terminal reaches them once,
through the parent. A child whose parent disappears (SIGKILL, OOM) drains and exits as
if it had been sent SIGTERM.
"""

from __future__ import annotations

import logging
import mmap
import os
import select
import signal
import struct
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Protocol

from django.core.exceptions import ImproperlyConfigured
from django.db import connections

from ..exceptions import MQLiteError
from .stopping import stop_on_signals

logger = logging.getLogger("django_mqlite.worker")

#: A child's exit code for an error that restarting cannot fix (an unknown queue, no
#: consumers): the parent stops the others and exits with it (``EX_CONFIG``).
EXIT_CONFIG = 78
POLL_S = 0.2  # how often the parent looks for exited children
RESTART_MIN_S, RESTART_MAX_S = 0.5, 30.0  # back-off for a child that dies young
HEALTHY_AFTER_S = 10.0  # a child that lived this long resets the back-off


#: Worker processes at most, by default, on a database with one writer at a time.
SERIAL_WRITER_PROCESSES = 4
#: The shared memory of ``Siblings.first_busy_for``: one float.
_BUSY = struct.Struct("d")
#: The first process tells standby siblings about a backlog at most this often.
TELL_EVERY_S = 0.05


class Runnable(Protocol):
    def run(self) -> int: ...


def cores() -> int:
    """The cores this process may use: its CPU affinity, bounded by a cgroup v2 CPU
    quota (a container's ``--cpus``), at least one."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        n = os.cpu_count() or 1
    quota = _cgroup_quota()
    if quota is not None:
        n = min(n, quota)
    return max(1, n)


def _cgroup_quota(path: str = "/sys/fs/cgroup/cpu.max") -> int | None:
    """Whole cores of a cgroup v2 quota (``"150000 100000"`` is 2), None without one."""
    try:
        with open(path) as f:
            quota, period = f.read().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    try:
        return max(1, -(-int(quota) // int(period)))
    except (ValueError, ZeroDivisionError):
        return None


def default_processes(serial_writer: bool) -> int:
    """``runworker``'s process count when neither ``--processes`` nor
    ``MQLITE["WORKER_PROCESSES"]`` says: a process per core; when a database it serves
    has one writer at a time, two per core, at most ``SERIAL_WRITER_PROCESSES``, and one
    on a single core (a second would only take turns with it on that core)."""
    n = cores()
    if not serial_writer:
        return n
    return 1 if n == 1 else min(2 * n, SERIAL_WRITER_PROCESSES)


def roles(slot: int) -> dict[str, bool]:
    """The ``Worker`` options of the process in ``slot``: the first reaps, ticks the
    periodic schedules and follows every wake-up; the others stand by."""
    return {"reaper": slot == 0, "periodic": slot == 0, "standby": slot > 0}


class Siblings:
    """How the first worker process tells the standby ones to claim: a backlog, or a
    wake-up it cannot claim for (a pipe made by the supervisor before it forks, one byte
    per standby sibling), and since when every thread of its has been busy (shared
    memory)."""

    def __init__(self, standby: int) -> None:
        self.standby = standby
        self._r, self._w = os.pipe()
        os.set_blocking(self._w, False)
        self._told = 0.0
        #: Memory shared by every child (made before the fork): since when (the
        #: system-wide ``time.monotonic()``) every thread of the first process has been
        #: busy, 0.0 while it is not (``Worker._tell_full``).
        self._full = mmap.mmap(-1, _BUSY.size)

    def set_first_full(self, full: bool) -> None:
        """Whether the first process claims nothing now, every thread of its busy
        (called by the first)."""
        since = _BUSY.unpack_from(self._full)[0]
        if full and not since:
            _BUSY.pack_into(self._full, 0, time.monotonic())
        elif not full and since:
            _BUSY.pack_into(self._full, 0, 0.0)

    def first_busy_for(self) -> float:
        """For how long every thread of the first process has been busy (seconds; 0.0:
        it has a thread free). A standby process claims on its own wake-ups once that
        is ``runner.FIRST_BUSY_S``."""
        since: float = _BUSY.unpack_from(self._full)[0]
        return max(time.monotonic() - since, 1e-9) if since else 0.0

    def tell(self) -> bool:
        """Tell the standby processes to claim (called by the first process: its claim
        took all it asked for, or a wake-up came that it cannot claim for); False when
        it told them less than ``TELL_EVERY_S`` ago, and does not again yet."""
        now = time.monotonic()
        if self.standby < 1 or now - self._told < TELL_EVERY_S:
            return False
        self._told = now
        try:
            os.write(self._w, b"!" * self.standby)
        except (BlockingIOError, BrokenPipeError):
            pass  # full: they have been told already
        return True

    def listen(self, hear: Callable[[], None]) -> threading.Thread:
        """A thread of a standby process calling ``hear()`` for each byte it reads."""

        def run() -> None:
            while True:
                try:
                    if not os.read(self._r, 1):
                        return
                except OSError:
                    return
                hear()

        thread = threading.Thread(target=run, name="mqlite-siblings", daemon=True)
        thread.start()
        return thread


@dataclass
class _Slot:
    index: int
    pid: int = 0
    started: float = 0.0
    restart_at: float = 0.0
    delay_s: float = 0.0
    done: bool = False  # drained (burst) or stopped: not to be restarted


class Supervisor:
    """Keeps ``processes`` children running ``make_worker(slot).run()`` until stopped;
    slot 0 is the first (``Siblings``)."""

    def __init__(
        self, make_worker: Callable[[int], Runnable], processes: int, *, burst: bool = False
    ) -> None:
        self.make_worker = make_worker
        self.slots = [_Slot(i) for i in range(processes)]
        self.burst = burst
        self.stopping = 0  # how many stop signals arrived
        self.restarts = 0
        self.code = 0
        self._wake_fds: tuple[int, ...] = ()

    def run(self) -> int:
        try:
            # A child's exit (SIGCHLD) wakes the wait in _supervise at once through the
            # wakeup fd, so a burst ends when its last child does, not at the next poll.
            with stop_on_signals(self._on_signal, extra={signal.SIGCHLD: _on_child}):
                self._supervise()
        finally:
            for pid in self.pids():  # only after an unexpected error: never orphan a child
                _kill(pid, signal.SIGTERM)
        logger.info("all worker processes exited (%s restarts)", self.restarts)
        return self.code

    def _supervise(self) -> None:
        """Spawn the children and keep them running until none is left to run."""
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        self._wake_fds = (wake_r, wake_w)
        previous_fd = signal.set_wakeup_fd(wake_w)
        try:
            for slot in self.slots:
                self._spawn(slot)
            while any(s.pid or not s.done for s in self.slots):
                self._reap_children()
                self._restart_due()
                if any(s.pid or not s.done for s in self.slots):
                    _wait(wake_r, POLL_S)
        finally:
            signal.set_wakeup_fd(previous_fd)
            os.close(wake_r)
            os.close(wake_w)

    def pids(self) -> list[int]:
        return [s.pid for s in self.slots if s.pid]

    # -- signals ------------------------------------------------------------------------

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stop_all(signum)

    def _stop_all(self, signum: int) -> None:
        self.stopping += 1
        for slot in self.slots:
            if not slot.pid:
                slot.done = True  # waiting to be restarted: not any more
            else:
                _kill(slot.pid, signum)

    # -- children -----------------------------------------------------------------------

    def _spawn(self, slot: _Slot) -> None:
        connections.close_all()  # never share a database socket with a child
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child never returns here
            signal.set_wakeup_fd(-1)  # the parent's wake-up pipe is not the child's
            for fd in self._wake_fds:
                os.close(fd)
            _child(self.make_worker, slot.index)
        slot.pid, slot.started, slot.restart_at = pid, time.monotonic(), 0.0
        logger.info("worker process %s started (slot %s)", pid, slot.index)
        if self.stopping:  # a signal raced the fork: pass it on
            _kill(pid, signal.SIGTERM)

    def _reap_children(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            slot = next((s for s in self.slots if s.pid == pid), None)
            if slot is None:
                continue
            slot.pid = 0
            self._exited(slot, os.waitstatus_to_exitcode(status))

    def _exited(self, slot: _Slot, code: int) -> None:
        lived = time.monotonic() - slot.started
        if code == EXIT_CONFIG and not self.stopping:
            logger.error("a worker process cannot run (see its error above); stopping")
            self.code = EXIT_CONFIG
            slot.done = True
            self._stop_all(signal.SIGTERM)
            return
        if self.stopping or (self.burst and code == 0):
            slot.done = True
            logger.info("worker process of slot %s exited (%s)", slot.index, code)
            return
        if code == 0 or lived >= HEALTHY_AFTER_S:
            slot.delay_s = 0.0
        else:
            slot.delay_s = min(max(slot.delay_s * 2, RESTART_MIN_S), RESTART_MAX_S)
        slot.restart_at = time.monotonic() + slot.delay_s
        logger.warning(
            "worker process of slot %s exited (%s) after %.1fs; restarting in %.1fs",
            slot.index,
            "recycled" if code == 0 else f"code {code}",
            lived,
            slot.delay_s,
        )

    def _restart_due(self) -> None:
        now = time.monotonic()
        for slot in self.slots:
            if not slot.pid and not slot.done and not self.stopping and slot.restart_at <= now:
                self.restarts += 1
                self._spawn(slot)


def _on_child(signum: int, frame: FrameType | None) -> None:
    """SIGCHLD: nothing to do here; its arrival wrote to the wakeup fd."""


def _wait(fd: int, timeout_s: float) -> None:
    """Sleep until a signal arrives (its number is written to ``fd``) or the timeout."""
    select.select([fd], [], [], timeout_s)
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass


def _kill(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass  # already gone; its exit is collected by the next poll


def _child(make_worker: Callable[[int], Runnable], slot: int) -> None:
    """The body of a forked child: run one worker, then leave without returning into
    the parent's code (``os._exit``: no atexit handlers, no parent cleanup)."""
    code = 1
    try:
        os.setpgid(0, 0)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)  # the worker installs its own
        _watch_parent(os.getppid())
        code = make_worker(slot).run()
    except (MQLiteError, ImproperlyConfigured) as exc:
        sys.stderr.write(f"worker process {os.getpid()}: {exc}\n")
        code = EXIT_CONFIG
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _watch_parent(parent: int) -> None:
    """Drain (as on SIGTERM) once the parent is gone, instead of running unsupervised."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="mqlite-parent-watch", daemon=True).start()
