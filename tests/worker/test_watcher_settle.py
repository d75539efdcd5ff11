"""The commit watcher's second look (``CommitWatcher._settle``), with the log's writes as
a pipe and the commit counter as a fake: how often it looks, and when it stops."""

from __future__ import annotations

import os
import threading
import time

from django_mqlite.engine import listen


class _Counter:
    """A connection whose commit counter moves once ``moved`` is set."""

    def __init__(self) -> None:
        self.looks = 0
        self.moved = threading.Event()

    def execute(self, sql: str) -> _Counter:
        assert sql == "PRAGMA data_version"
        self.looks += 1
        return self

    def fetchone(self) -> tuple[int]:
        return (2 if self.moved.is_set() else 1,)


class _Writes:
    """The log's writes: each byte in the pipe is one; ``gone`` says the log was replaced."""

    def __init__(self, gone: bool = False) -> None:
        self.r, self.w = os.pipe()
        os.set_blocking(self.r, False)
        self.gone = gone

    def fileno(self) -> int:
        return self.r

    def write(self) -> None:
        os.write(self.w, b"w")

    def drain(self) -> bool:
        try:
            os.read(self.r, 4096)
        except BlockingIOError:
            pass
        return self.gone

    def close(self) -> None:
        os.close(self.r)
        os.close(self.w)


def _settle(conn: _Counter, writes: _Writes) -> tuple[tuple[int, bool], float]:
    watcher = listen.CommitWatcher("unused", [])
    started = time.monotonic()
    try:
        fds = [writes.fileno(), watcher._woken.fileno()]
        got = watcher._settle(conn, 1, writes, fds)  # type: ignore[arg-type]
    finally:
        watcher._close_waker()
        writes.close()
    return got, time.monotonic() - started


def test_after_a_commit_already_seen_it_looks_a_few_times_not_every_millisecond() -> None:
    """A commit's last writes wake the watcher after it saw the commit; nothing moves
    until the next commit. It looks at steps doubling to ``SETTLE_MAX_STEP_S`` (4 ms), not
    every 1 ms: 45-50 looks after each completion of a trickle before. Looking too often
    fails at once; too few looks is what a thread left without the CPU for the whole
    window sees (a loaded CI machine: one look in 50 ms), so that is tried again."""
    seen = []
    for _ in range(3):
        conn = _Counter()
        got, took = _settle(conn, _Writes())
        assert got == (1, False)
        assert took >= listen.SETTLE_S * 0.9
        assert conn.looks <= 20, conn.looks
        seen.append(conn.looks)
        if conn.looks >= 5:
            break
    assert max(seen) >= 5, seen


def test_a_commit_written_meanwhile_is_seen() -> None:
    conn = _Counter()
    writes = _Writes()

    def commit() -> None:
        time.sleep(0.02)
        conn.moved.set()
        writes.write()

    thread = threading.Thread(target=commit)
    thread.start()
    got, took = _settle(conn, writes)
    thread.join()
    assert got == (2, False)
    assert took < listen.SETTLE_S


def test_a_log_replaced_meanwhile_ends_the_look_at_once() -> None:
    writes = _Writes(gone=True)
    writes.write()
    got, took = _settle(_Counter(), writes)
    assert got == (1, True)
    assert took < listen.SETTLE_S / 2
