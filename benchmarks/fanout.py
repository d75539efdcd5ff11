"""``python -m benchmarks.fanout [--db sqlite|postgres|both] [--n 2000] [--repeat 3]``:
one publish to a topic with 10 subscriptions against 10 sends (one to each queue) in one
transaction, in one run, on a fresh database per vendor (docs/topics.md cites it).

Both sides do the same work: one transaction per fan-out, a copy in each of 10
``standard`` queues, bodies and properties alike. The two are interleaved repeat by
repeat, so a change in the machine's load falls on both. Prints the median wall time
per fan-out of each and their ratio; writes nothing.
"""

from __future__ import annotations

import statistics
import sys
import time

from . import per_database
from .per_database import setup_child

QUEUES = 10
BODY = {"order": 1234, "status": "paid", "lines": [1, 2, 3]}
PROPS = {"country": "NL", "total": 120.5}


def measure(n: int, repeat: int) -> dict[str, float]:
    from django.db import transaction

    import django_mqlite as mq

    from .harness import reset

    names = [f"fan{i}" for i in range(QUEUES)]
    mq.create_topic("fanout")
    for name in names:
        mq.create_queue(name)
        mq.subscribe("fanout", name)

    def publish() -> None:
        assert mq.publish("fanout", BODY, subject="order.paid", properties=PROPS) == QUEUES

    def sends() -> None:
        for name in names:
            mq.send(name, BODY, subject="order.paid", properties=PROPS)

    # "txn": one transaction per fan-out, its commit included (what a view pays);
    # "work": the fan-out's statements alone, timed inside an open transaction (the
    # commit is the same for both sides, and on a busy disk it dominates the first).
    samples: dict[str, list[float]] = {}
    for _ in range(repeat):
        for label, fn in (("publish", publish), ("sends", sends)):
            reset()
            for _ in range(20):  # warm: connections, prepared statements, caches
                with transaction.atomic():
                    fn()
            start = time.perf_counter()
            for _ in range(n):
                with transaction.atomic():
                    fn()
            samples.setdefault(f"{label}.txn", []).append((time.perf_counter() - start) / n * 1e6)
            reset()
            spent = 0.0
            for _ in range(n // 50):
                with transaction.atomic():
                    start = time.perf_counter()
                    for _ in range(50):
                        fn()
                    spent += time.perf_counter() - start
            samples.setdefault(f"{label}.work", []).append(spent / (n // 50 * 50) * 1e6)
    return {k: statistics.median(v) for k, v in samples.items()}


def child(db: str, n: int, repeat: int) -> None:
    setup_child(db)
    got = measure(n, repeat)
    for kind in ("txn", "work"):
        pub, snd = got[f"publish.{kind}"], got[f"sends.{kind}"]
        print(
            f"{db:9s} {kind:5s} publish to {QUEUES}: {pub:8.1f} µs   "
            f"{QUEUES} sends: {snd:8.1f} µs   ratio {snd / pub:.2f}x",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    return per_database.main(
        "benchmarks.fanout", argv, default_n=2000, n_help="fan-outs per sample", child=child
    )


if __name__ == "__main__":
    sys.exit(main())
