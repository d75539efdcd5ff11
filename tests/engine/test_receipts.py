"""One receipt format (SPEC §2.1): a retry is answered by the receipt of the same request,
keyed by queue, seq, lock token, verb and the effect-bearing arguments, whichever path
(single call, batch, the worker's batched settlement) wrote it and whichever replays."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

import django_mqlite as mq
from django_mqlite.engine import receipts, settle
from django_mqlite.engine.types import Outcome

pytestmark = pytest.mark.django_db


def _claim(q: str) -> tuple[int, str]:
    mq.send(q, b"x")
    (m,) = mq.receive(q)
    assert m.lock_token is not None
    return m.seq, m.lock_token


@pytest.mark.parametrize(
    ("first", "retry"),
    [("complete", "defer"), ("defer", "complete")],
)
def test_a_receipt_answers_only_its_own_verb(q: str, first: str, retry: str) -> None:
    """complete and defer both have empty arguments: only the verb tells them apart."""
    seq, token = _claim(q)
    getattr(mq, first)(q, seq, token)
    with pytest.raises(mq.LockLostError):
        getattr(mq, retry)(q, seq, token)
    many = getattr(settle, f"{retry}_many")
    assert [r.outcome for r in many(q, [(seq, token)])] == [Outcome.STALE]
    getattr(mq, first)(q, seq, token)  # its own verb still replays


def test_a_replay_through_the_other_path_succeeds(q: str) -> None:
    seq, token = _claim(q)
    mq.complete(q, seq, token)
    assert mq.complete_batch(q, [(seq, token)]) == [True]
    seq, token = _claim(q)
    assert mq.complete_batch(q, [(seq, token)]) == [True]
    mq.complete(q, seq, token)
    seq, token = _claim(q)
    [done] = settle.abandon_many(q, [settle.AbandonItem(seq, token, 5, "err")])
    assert done.outcome is Outcome.SCHEDULED
    mq.abandon(q, seq, token, delay=5)  # the error is not part of the request
    seq, token = _claim(q)
    mq.reject(q, seq, token, "Bad", "why")
    [again] = settle.reject_many(q, [settle.RejectItem(seq, token, "Bad", "why")])
    assert again.outcome is Outcome.REPLAYED


def test_a_receipt_keeps_arguments_that_array_and_json_syntax_would_quote(q: str) -> None:
    """The arguments are stored as written, whatever they hold (on PostgreSQL a batch's
    receipts go as arrays: braces, commas, quotes and backslashes must survive)."""
    description = 'a {b, "c"} \\ d\te NULL'
    seqs = []
    items = []
    for _ in range(3):
        seq, token = _claim(q)
        seqs.append(seq)
        items.append(settle.RejectItem(seq, token, "Bad,{x}", description))
    assert [r.outcome for r in settle.reject_many(q, items)] == [Outcome.DEAD_LETTERED] * 3
    assert [r.outcome for r in settle.reject_many(q, items)] == [Outcome.REPLAYED] * 3
    with connection.cursor() as cursor:
        cursor.execute("SELECT args FROM mqlite_receipt WHERE seq IN (%s, %s, %s)", seqs)
        stored = {row[0].split("|", 1)[1] for row in cursor.fetchall()}
    assert stored == {receipts.reject_args("Bad,{x}", description)}


@pytest.mark.parametrize(
    "retry",
    [
        lambda q, s, t: mq.complete_batch(q, [(s, t)]) == [True],
        lambda q, s, t: mq.complete(q, s, t) is None,  # None: it did not raise
    ],
    ids=["batch", "single"],
)
def test_a_receipt_never_answers_for_another_queue(make_queue: Any, retry: Any) -> None:
    a, b = make_queue("ra").name, make_queue("rb").name
    seq, token = _claim(a)
    mq.complete(a, seq, token)
    try:
        ok = retry(b, seq, token)
    except mq.LockLostError:
        ok = False
    assert not ok


def test_other_arguments_are_another_request(q: str) -> None:
    seq, token = _claim(q)
    settle.abandon_many(q, [settle.AbandonItem(seq, token, 5)])
    for delay in (None, 0, 6):
        with pytest.raises(mq.LockLostError):
            mq.abandon(q, seq, token, delay=delay)
    seq, token = _claim(q)
    settle.reject_many(q, [settle.RejectItem(seq, token, "Bad", "a")])
    for reason, description in (("Bad", "b"), ("Other", "a"), ("Bad", "")):
        with pytest.raises(mq.LockLostError):
            mq.reject(q, seq, token, reason, description)


def test_the_worker_failure_path_writes_the_receipt_mq_abandon_reads(q: str) -> None:
    """The worker's batched abandon and ``mq.abandon`` are one verb: one receipt."""
    from django_mqlite.worker import settlement
    from django_mqlite.worker.delivery import Delivery
    from django_mqlite.worker.pool import Pool

    mq.send(q, b"x")
    (m,) = mq.receive(q)
    assert m.lock_token is not None
    using = mq.database_of(q)
    pool = Pool(1, using=using, backoff=lambda n: 7.0, wake=lambda: None)
    pool.failed.append((Delivery(m, None, 30, 0), 7.0, "tb"))  # type: ignore[arg-type]
    assert settlement.flush_failures(pool, using) == {Outcome.SCHEDULED: 1}
    mq.abandon(q, m.seq, m.lock_token, delay=7)
    with pytest.raises(mq.LockLostError):
        mq.abandon(q, m.seq, m.lock_token, delay=8)
