"""The floor: the engine's own statements through the stdlib ``sqlite3`` module, with no
Django, no argument checks and no Python objects per message. Beside each floor figure
is the engine doing the same thing in-process, so the ratio is Django + engine overhead.

Statements per transaction, as the engine issues them: a send is (queue lookup, INSERT
... RETURNING, totals); a claim is (queue lookup, promote due, UPDATE ... RETURNING,
totals); a batch complete is (queue lookup, DELETE ... RETURNING, receipts INSERT,
totals). The totals statement is the one ``bump_totals`` runs on a queue whose totals row
exists (on SQLite an ``UPDATE``).
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from django.db import connection

import django_mqlite as mq
from django_mqlite.engine import claim, totals
from django_mqlite.engine.dialects import dialect_for
from django_mqlite.engine.rows import QUEUE_COLUMNS

from ..backlog import BODY, fill
from ..harness import Context, Stopwatch, repeat, reset, skipped

BATCH = 64


def _q(sql: str) -> str:
    return sql.replace("%s", "?")


def _now() -> int:
    return int(time.time() * 1000)


class Floor:
    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        d = dialect_for("default")
        self.lookup = _q(f"SELECT {QUEUE_COLUMNS} FROM mqlite_queue WHERE name = %s")
        self.promote = _q(claim._promote_statement(d))
        self.claim = _q(claim._claim_statement(d, False))
        self.totals_d = self._totals(d, "delivered")
        self.totals_c = self._totals(d, "completed")
        self.totals_e = self._totals(d, "enqueued")

    @staticmethod
    def _totals(d: Any, name: str) -> tuple[str, list[str]]:
        """The statement ``bump_totals`` runs when the queue's row exists, and where its
        parameters take the queue's id (``"q"``) and the count (``"n"``)."""

        class Capture:
            sql = ""
            params: list[Any] = []
            rowcount = 1

            def execute(self, sql: str, params: Any) -> None:
                Capture.sql, Capture.params = sql, list(params)

        totals.bump_totals(Capture(), d, -1, **{name: 1})  # type: ignore[arg-type]
        return _q(Capture.sql), ["q" if p == -1 else "n" for p in Capture.params]

    def bump(self, statement: tuple[str, list[str]], qid: int, k: int) -> None:
        sql, order = statement
        self.db.execute(sql, [qid if p == "q" else k for p in order])

    def queue_id(self) -> int:
        return int(self.db.execute(self.lookup, ["bench"]).fetchone()[0])

    def send(self, k: int) -> None:
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        qid = self.queue_id()
        now = _now()
        values = ", ".join(["(?, 'active', 0, ?, NULL, ?, ?, 0, 0)"] * k)
        params: list[Any] = []
        for _ in range(k):
            params += [qid, now, now, BODY]
        db.execute(
            "INSERT INTO mqlite_message (queue_id, state, priority, visible_at, expires_at, "
            f"enqueued_at, body, blocked, delivery_count) VALUES {values} RETURNING seq",
            params,
        ).fetchall()
        self.bump(self.totals_e, qid, k)
        db.execute("COMMIT")

    def claim_and_complete(self) -> int:
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        qid = self.queue_id()
        now = _now()
        db.execute(self.promote, [now, qid, 1000])
        rows = db.execute(self.claim, [now + 30_000, None, now, qid, now, BATCH]).fetchall()
        if rows:
            self.bump(self.totals_d, qid, len(rows))
        db.execute("COMMIT")
        if not rows:
            return 0
        items = [(r[0], r[12]) for r in rows]
        db.execute("BEGIN IMMEDIATE")
        qid = self.queue_id()
        now = _now()
        pairs = ", ".join(["(?, ?)"] * len(items))
        done = db.execute(
            "DELETE FROM mqlite_message WHERE queue_id = ? AND state = 'locked' "
            f"AND locked_until > ? AND (seq, lock_token) IN (VALUES {pairs}) "
            "RETURNING seq, order_key",
            [qid, now, *(v for i in items for v in i)],
        ).fetchall()
        receipts = ", ".join(["(?, ?, 'complete', '', ?)"] * len(items))
        db.execute(
            f"INSERT INTO mqlite_receipt (seq, lock_token, verb, args, expires_at) "
            f"VALUES {receipts}",
            [v for s, t in items for v in (s, t, now + 300_000)],
        )
        self.bump(self.totals_c, qid, len(done))
        db.execute("COMMIT")
        return len(done)


def raw_floor(ctx: Context) -> dict[str, Any]:
    if connection.vendor != "sqlite":
        return {"sqlite3.floor": skipped("the floor is measured on SQLite only")}
    floor = Floor(connection.settings_dict["NAME"])
    n = ctx.size("batch")
    single = ctx.size("single")
    out: dict[str, Any] = {}

    def produce(k: int, total: int, raw: bool) -> tuple[float, float]:
        reset()
        with Stopwatch() as t:
            for _ in range(total // k):
                if raw:
                    floor.send(k)
                elif k == 1:
                    mq.send("bench", BODY)
                else:
                    mq.send_batch("bench", [mq.OutMessage(BODY) for _ in range(k)])
        return t.result(total // k * k)

    def drain(raw: bool) -> tuple[float, float]:
        reset()
        fill("bench", n)
        done = 0
        with Stopwatch() as t:
            if raw:
                while k := floor.claim_and_complete():
                    done += k
            else:
                while got := mq.receive("bench", max_messages=BATCH):
                    done += sum(
                        mq.complete_batch("bench", [(m.seq, m.lock_token or "") for m in got])
                    )
        return t.result(done)

    for who, raw in (("sqlite3", True), ("mqlite", False)):
        out[f"{who}.floor_produce_single"] = repeat(
            ctx, lambda raw=raw: produce(1, single, raw), "msg/s", n=single
        )
        out[f"{who}.floor_produce_batch_256"] = repeat(
            ctx, lambda raw=raw: produce(256, n, raw), "msg/s", n=n
        )
        out[f"{who}.floor_drain_batch_{BATCH}"] = repeat(
            ctx, lambda raw=raw: drain(raw), "msg/s", n=n
        )
    floor.db.close()
    return out
