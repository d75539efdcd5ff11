"""``on_conflict="replace"``/``"debounce"`` under contention: producers race on one key,
each thread on its own connection, while a consumer claims and completes. The oracle:
never two live messages with the key (asked of the database during the race and at the
end); every send got a message of the key, or ``UniqueKeyLockedError`` while a consumer
held it; and the content of every message the key ever had is one a producer sent."""

from __future__ import annotations

import threading
import time

import pytest

import django_mqlite as mq
from tests.support.concurrency import retrying, run_threads, start_threads
from tests.support.unique_keys import held_twice

pytestmark = pytest.mark.django_db(transaction=True)

PRODUCERS = 8
SENDS = 40


def _race(policy: str, consume: bool) -> tuple[set[str], list[bytes], int, list[object]]:
    """Run the producers (and a consumer): the bodies sent, the bodies the consumer
    received, the sends refused as locked, and the doubles seen during the race."""
    sent: set[str] = set()
    received: list[bytes] = []
    refused: list[int] = []
    seen_doubles: list[object] = []
    lock = threading.Lock()
    producing = threading.Event()
    producing.set()

    def producer(i: int) -> None:
        for n in range(SENDS):
            body = f"{i}:{n}"
            with lock:
                sent.add(body)
            try:
                seq = retrying(
                    lambda b=body: mq.send("uniq", b, unique_key="k", on_conflict=policy)
                )
                assert isinstance(seq, int) and seq > 0
            except mq.UniqueKeyLockedError:
                with lock:
                    refused.append(1)
            doubles = retrying(held_twice)
            if doubles:
                seen_doubles.append(doubles)

    def consumer(_: int) -> None:
        while producing.is_set() or mq.stats("uniq").counts["active"]:
            got = retrying(lambda: mq.receive("uniq", max_messages=1))
            assert isinstance(got, list)
            for m in got:
                with lock:
                    received.append(m.body)
                retrying(m.complete)
            if not got:
                time.sleep(0.002)

    errors: list[BaseException] = []
    consuming = start_threads(1, consumer, errors) if consume else []
    run_threads(PRODUCERS, producer)
    producing.clear()
    for t in consuming:
        t.join(120)
    assert not errors, errors
    return sent, received, len(refused), seen_doubles


@pytest.mark.parametrize("policy", ["replace", "debounce"])
def test_racing_replacements_never_make_two_live_messages(policy: str) -> None:
    mq.create_queue("uniq", lock_duration=60)
    sent, _, refused, seen_doubles = _race(policy, consume=False)
    assert seen_doubles == [] and held_twice() == []
    assert refused == 0  # no consumer: the holder was never locked
    (p,) = mq.peek("uniq")
    assert p.text() in sent
    assert mq.stats("uniq").totals["enqueued"] == 1


def test_replacements_racing_a_consumer() -> None:
    mq.create_queue("uniq", lock_duration=60)
    sent, received, refused, seen_doubles = _race("replace", consume=True)
    assert seen_doubles == [] and held_twice() == []
    assert received and {b.decode() for b in received} <= sent
    assert mq.peek("uniq") == []
    totals = mq.stats("uniq").totals
    assert totals["enqueued"] == totals["completed"] == len(received)
    # Every send was an insert, a replacement or refused: fewer messages than sends.
    assert len(received) + refused <= PRODUCERS * SENDS
