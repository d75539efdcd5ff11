"""Which pages each commit of one message's life writes on SQLite, by table and index:
``python -m benchmarks.wal_pages`` (a scratch database in the temporary directory, or
``BENCH_SQLITE_PATH``).

Each step runs alone on a checkpointed, empty WAL with auto-checkpoints off; the WAL then
holds one frame (a 24-byte header and the page) for every page each commit wrote, and the
frame header names the page. ``dbstat`` says which table or index owns a page. The steps
run after ``WARM`` whole lives (default 50), so the tables and indexes have their pages
and a step is measured as it runs in a steady queue, not the first time.

The lives: django-mqlite at batch 1 (``send_batch`` of one message, ``receive`` of one,
``complete_batch`` of one, what ``write_amplification`` runs) and django-tasks-db's task
(``enqueue``, the claim its ``db_worker`` makes, ``set_successful``), when installed.
"""

from __future__ import annotations

import os
import struct
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .per_database import setup_script

WAL_HEADER = 32
FRAME_HEADER = 24


def commits(wal: Path) -> list[list[int]]:
    """The page numbers of each commit in a WAL file, in order."""
    data = wal.read_bytes() if wal.exists() else b""
    if len(data) < WAL_HEADER:
        return []
    page_size = struct.unpack(">I", data[8:12])[0]
    out: list[list[int]] = []
    pages: list[int] = []
    for off in range(
        WAL_HEADER, len(data) - FRAME_HEADER - page_size + 1, FRAME_HEADER + page_size
    ):
        page, commit_size = struct.unpack(">II", data[off : off + 8])
        pages.append(page)
        if commit_size:  # the last frame of a commit holds the database's size
            out.append(pages)
            pages = []
    return out


def owners() -> dict[int, str]:
    """Page number -> the table or index that owns it (``dbstat``)."""
    from django.db import connection

    with connection.cursor() as c:
        c.execute("SELECT name, pageno FROM dbstat")
        return {int(page): str(name) for name, page in c.fetchall()}


def step(run: Callable[[], None]) -> dict[str, Any]:
    """Run ``run`` on an empty WAL: its commits' pages by owner, and the WAL's bytes."""
    from django.db import connection

    wal = Path(connection.settings_dict["NAME"] + "-wal")
    with connection.cursor() as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        c.execute("PRAGMA wal_autocheckpoint=0")
    try:
        run()
        found = commits(wal)
        own = owners()
        return {
            "commits": [
                Counter(own.get(p, "database header" if p == 1 else "free page") for p in c)
                for c in found
            ],
            "bytes": wal.stat().st_size if wal.exists() else 0,
        }
    finally:
        with connection.cursor() as c:
            c.execute("PRAGMA wal_autocheckpoint=1000")
            c.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _mqlite_life() -> list[tuple[str, Callable[[], None]]]:
    import django_mqlite as mq

    from .backlog import BODY

    got: list[Any] = []

    def send() -> None:
        mq.send_batch("bench", [mq.OutMessage(BODY)])

    def claim() -> None:
        got[:] = mq.receive("bench", max_messages=1)

    def complete() -> None:
        mq.complete_batch("bench", [(m.seq, m.lock_token or "") for m in got])

    return [("send", send), ("claim", claim), ("complete (and its receipt)", complete)]


def _tasks_life() -> list[tuple[str, Callable[[], None]]]:
    from . import peers

    got: list[Any] = []

    def enqueue() -> None:
        peers.enqueue_tasks(1)

    def claim() -> None:
        got[:] = [peers.claim_one_task()]

    def result() -> None:
        got[0].set_successful(None)

    return [("enqueue", enqueue), ("claim", claim), ("result", result)]


def measure(life: list[tuple[str, Callable[[], None]]], warm: int) -> list[tuple[str, Any]]:
    for _ in range(warm):
        for _, run in life:
            run()
    return [(name, step(run)) for name, run in life]


def table(system: str, steps: list[tuple[str, Any]]) -> list[str]:
    lines = []
    total = 0
    pages = 0
    for name, got in steps:
        for counts in got["commits"]:
            owned = ", ".join(f"{o} x{k}" if k > 1 else o for o, k in sorted(counts.items()))
            n = sum(counts.values())
            lines.append(f"| {system} | {name} | {n} | {owned} | {got['bytes']:,} |")
            pages += n
        total += got["bytes"]
    lines.append(f"| {system} | **whole life** | **{pages}** | | **{total:,}** |")
    return lines


def main() -> None:
    os.environ["BENCH_DB"] = "sqlite"  # the WAL's frames are what is read
    setup_script("mqlite-wal-pages.sqlite3")
    import django_mqlite as mq

    from . import peers
    from .harness import reset

    mq.create_queue("bench")
    warm = int(os.environ.get("WARM", "50"))
    lines = ["| system | step | pages | pages by table or index | bytes |", "|---|---|---|---|---|"]
    reset()
    lines += table("django-mqlite", measure(_mqlite_life(), warm))
    if peers.has_tasks_db():
        reset()
        lines += table("django-tasks-db", measure(_tasks_life(), warm))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
