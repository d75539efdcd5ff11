"""Dead letters: redrive (in place / to another queue), purge, DLQ and result retention."""

from __future__ import annotations

import pytest
from django.test import override_settings

import django_mqlite as mq

pytestmark = pytest.mark.django_db


def bury(q: str, n: int) -> list[int]:
    seqs = mq.send_batch(q, [mq.OutMessage(f"m{i}") for i in range(n)])
    for m in mq.receive(q, max_messages=n):
        m.reject("Bad")
    return seqs


def test_redrive_in_place_resets_delivery_count(q: str) -> None:
    seqs = bury(q, 3)
    assert mq.redrive(q, seqs=[seqs[1]]) == 1
    (m,) = mq.receive(q, max_messages=5)
    assert (m.seq, m.delivery_count) == (seqs[1], 1)
    (p,) = [p for p in mq.peek(q) if p.seq == seqs[1]]
    assert p.dead_letter_reason is None
    assert mq.redrive(q) == 2
    assert mq.redrive(q) == 0
    assert mq.stats(q).totals["redriven"] == 3


def test_redrive_to_another_queue_with_limit(make_queue: object) -> None:
    mq.create_queue("src")
    mq.create_queue("dst")
    seqs = bury("src", 4)
    assert mq.redrive("src", to_queue="dst", limit=3) == 3
    assert [m.seq for m in mq.receive("dst", max_messages=10)] == seqs[:3]
    assert mq.stats("src").counts["dead_lettered"] == 1


def test_redrive_touches_only_dead_letters(q: str) -> None:
    live = mq.send(q, b"live")
    assert mq.redrive(q, seqs=[live]) == 0
    assert mq.peek(q)[0].state == "active"


def test_redrive_unknown_target_is_not_found(q: str) -> None:
    bury(q, 1)
    with pytest.raises(mq.QueueNotFoundError):
        mq.redrive(q, to_queue="nope")
    assert mq.stats(q).counts["dead_lettered"] == 1


def test_purge_removes_dead_letters_only_by_default(q: str) -> None:
    bury(q, 2)
    mq.send(q, b"live")
    assert mq.purge(q) == 2
    assert [p.state for p in mq.peek(q)] == ["active"]
    assert mq.stats(q).totals["purged"] == 2


def test_purge_older_than_and_bad_state(q: str, clock: mq.clock.FrozenClock) -> None:
    bury(q, 1)
    clock.advance(100)
    bury(q, 1)
    assert mq.purge(q, older_than=50) == 1
    assert mq.stats(q).counts["dead_lettered"] == 1
    with pytest.raises(mq.InvalidArgumentError):
        mq.purge(q, state="locked")
    with pytest.raises(mq.InvalidArgumentError):
        mq.purge(q, state="bogus")


def test_purge_in_chunks(q: str) -> None:
    bury(q, 25)
    with override_settings(MQLITE={"REAP_CHUNK": 10}):
        assert mq.purge(q, limit=22) == 22
    assert mq.stats(q).counts["dead_lettered"] == 3


def test_dlq_retention_by_count_oldest_first(make_queue: object) -> None:
    mq.create_queue("d", dlq_max_count=2)
    seqs = bury("d", 5)
    assert mq.reap()["dlq_trimmed"] == 3
    assert [p.seq for p in mq.peek("d")] == seqs[3:]


def test_dlq_retention_by_age(make_queue: object, clock: mq.clock.FrozenClock) -> None:
    mq.create_queue("d", dlq_max_age=60)
    old = bury("d", 2)
    clock.advance(30)
    new = bury("d", 1)
    clock.advance(30)
    assert mq.reap()["dlq_trimmed"] == 2
    assert [p.seq for p in mq.peek("d")] == new
    assert old


def test_dlq_retention_by_bytes(make_queue: object) -> None:
    mq.create_queue("d", dlq_max_bytes=25)
    seqs = mq.send_batch("d", [mq.OutMessage(b"x" * 10) for _ in range(4)])
    for m in mq.receive("d", max_messages=4):
        m.reject("Bad")
    mq.reap()
    assert [p.seq for p in mq.peek("d")] == seqs[2:]  # 20 bytes kept, 10 more would be 30


def test_dlq_retention_global_default_and_overrides(make_queue: object) -> None:
    mq.create_queue("inherit", dlq_max_count=0)
    mq.create_queue("unbounded", dlq_max_count=-1)
    mq.create_queue("own", dlq_max_count=3)
    for name in ("inherit", "unbounded", "own"):
        bury(name, 4)
    with override_settings(MQLITE={"DLQ_MAX_COUNT": 1}):
        mq.reap()
    counts = {n: mq.stats(n).counts["dead_lettered"] for n in ("inherit", "unbounded", "own")}
    assert counts == {"inherit": 1, "unbounded": 4, "own": 3}


def test_dlq_retention_is_unbounded_by_default(q: str) -> None:
    bury(q, 5)
    assert mq.reap()["dlq_trimmed"] == 0


def test_retention_never_touches_live_messages(make_queue: object) -> None:
    mq.create_queue("d", dlq_max_count=1)
    mq.send_batch("d", [mq.OutMessage(b"x") for _ in range(5)])
    mq.reap()
    assert mq.stats("d").counts["active"] == 5


def test_result_retention(make_queue: object, clock: mq.clock.FrozenClock) -> None:
    mq.create_queue("r", keep_results=60)
    mq.send("r", b"x")
    mq.receive("r")[0].complete()
    clock.advance(59)
    assert mq.reap()["results_pruned"] == 0
    clock.advance(1)
    assert mq.reap()["results_pruned"] == 1
    assert mq.peek("r") == []


def test_result_retention_applies_each_queues_own_cutoff(clock: mq.clock.FrozenClock) -> None:
    mq.create_queue("short", keep_results=60)
    mq.create_queue("long", keep_results=3600)
    mq.create_queue("was-kept", keep_results=3600)
    for name in ("short", "long", "was-kept"):
        mq.send_batch(name, [mq.OutMessage(b"x") for _ in range(3)])
        for m in mq.receive(name, max_messages=3):
            m.complete()
    mq.update_queue("was-kept", keep_results=None)  # keeps nothing now: its rows go
    with override_settings(MQLITE={"REAP_CHUNK": 2}):  # chunks across queues
        assert mq.reap()["results_pruned"] == 3
        clock.advance(60)
        assert mq.reap()["results_pruned"] == 3
    assert [len(mq.peek(n)) for n in ("short", "long", "was-kept")] == [0, 3, 0]
    clock.advance(3540)
    assert mq.reap()["results_pruned"] == 3


def test_dlq_retention_global_age_and_bytes_defaults(
    make_queue: object, clock: mq.clock.FrozenClock
) -> None:
    mq.create_queue("aged")
    mq.create_queue("sized")
    bury("aged", 2)
    clock.advance(30)
    new = bury("aged", 1)
    clock.advance(30)
    seqs = mq.send_batch("sized", [mq.OutMessage(b"x" * 10) for _ in range(4)])
    for m in mq.receive("sized", max_messages=4):
        m.reject("Bad")
    with override_settings(MQLITE={"DLQ_MAX_AGE": 60, "DLQ_MAX_BYTES": 25}):
        assert mq.reap()["dlq_trimmed"] == 4
    assert [p.seq for p in mq.peek("aged")] == new
    assert [p.seq for p in mq.peek("sized")] == seqs[2:]


def test_a_global_dlq_bound_of_zero_bounds_nothing(q: str) -> None:
    bury(q, 3)
    with override_settings(MQLITE={"DLQ_MAX_AGE": 0, "DLQ_MAX_COUNT": 0, "DLQ_MAX_BYTES": 0}):
        assert mq.reap()["dlq_trimmed"] == 0
    assert mq.stats(q).counts["dead_lettered"] == 3


def test_dlq_trimmed_sums_every_bound_and_queue_and_counts_as_purged(
    make_queue: object, clock: mq.clock.FrozenClock
) -> None:
    mq.create_queue("both", dlq_max_age=60, dlq_max_count=2)
    mq.create_queue("within", dlq_max_count=10)
    bury("both", 2)
    clock.advance(61)
    new = bury("both", 3)
    bury("within", 2)
    assert mq.reap()["dlq_trimmed"] == 3  # 2 by age, then 1 more by count
    assert [p.seq for p in mq.peek("both")] == new[1:]
    assert mq.stats("both").totals["purged"] == 3
    assert mq.stats("within").counts["dead_lettered"] == 2
    assert mq.reap()["dlq_trimmed"] == 0  # every bound held: nothing more
