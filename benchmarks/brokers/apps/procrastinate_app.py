"""procrastinate, as its quickstart does: an ``App`` on a psycopg connector (PostgreSQL
only), one task. ``BENCH_PROCRASTINATE_DSN`` names its database."""

from __future__ import annotations

import os

from procrastinate import App, PsycopgConnector

from ..record import started

DSN = os.environ.get(
    "BENCH_PROCRASTINATE_DSN", "postgresql://postgres@127.0.0.1:5432/mqlite_bench_procrastinate"
)

app = App(connector=PsycopgConnector(conninfo=DSN))


@app.task(name="bench.record", queue="bench")
def record(enqueued_at: float | None = None) -> None:
    started(enqueued_at)
