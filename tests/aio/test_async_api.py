"""The async twins: same arguments, results and errors as the sync functions. Each test
runs its coroutine with ``async_to_sync`` from the test's thread, so the twins' ORM work
runs on that thread's connection, inside the test's transaction."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from asgiref.sync import async_to_sync

import django_mqlite as mq

pytestmark = pytest.mark.django_db


def run(coro_fn: Any, *args: Any, **kwargs: Any) -> Any:
    return async_to_sync(coro_fn)(*args, **kwargs)


def test_asend_and_asend_batch_return_seqs_like_send(q: str) -> None:
    seq = run(mq.asend, q, {"order": 42}, message_id="m-42", subject="order")
    assert isinstance(seq, int) and seq > 0
    assert run(mq.asend, q, {"order": 42}, message_id="m-42") == seq  # dedup, like send
    seqs = run(mq.asend_batch, q, [mq.OutMessage(b"a"), mq.OutMessage("b", group_id="g")])
    assert len(seqs) == 2 and all(s > seq for s in seqs)
    peeked = run(mq.apeek, q)
    assert [p.seq for p in peeked] == [seq, *seqs]
    assert peeked == mq.peek(q)
    assert peeked[0].json() == {"order": 42} and peeked[0].subject == "order"


def test_apeek_and_astats_match_their_twins(q: str, clock: mq.clock.FrozenClock) -> None:
    mq.send(q, b"x")
    mq.send(q, b"y", delay=60)
    clock.advance(5)
    assert run(mq.apeek, q, state="scheduled") == mq.peek(q, state="scheduled")
    s = run(mq.astats, q)
    assert s == mq.stats(q) and s.oldest_active_age == 5
    assert s.counts["active"] == 1 and s.counts["scheduled"] == 1
    assert q in run(mq.astats)


def test_async_twins_raise_the_same_errors(q: str) -> None:
    with pytest.raises(mq.QueueNotFoundError):
        run(mq.asend, "nope", b"x")
    with pytest.raises(mq.InvalidArgumentError):
        run(mq.asend, q, b"x", priority="high")
    with pytest.raises(mq.InvalidArgumentError):
        run(mq.asend_batch, q, "not a list")
    with pytest.raises(mq.InvalidArgumentError):
        run(mq.apeek, q, limit=0)
    with pytest.raises(mq.QueueNotFoundError):
        run(mq.astats, "nope")
    with pytest.raises(mq.InvalidArgumentError):
        run(mq.areceive, q, max_messages=0)
    with pytest.raises(mq.InvalidArgumentError):
        run(mq.areceive, q, wait=-1)
    with pytest.raises(mq.InvalidArgumentError):
        run(mq.areceive, q, mode="nope")
    with pytest.raises(mq.QueueNotFoundError):
        run(mq.areceive, "nope", wait=1)


def test_areceive_and_acomplete(q: str) -> None:
    seqs = mq.send_batch(q, [mq.OutMessage({"n": i}) for i in range(3)])

    async def scenario() -> list[int]:
        got = await mq.areceive(q, max_messages=10, lock_duration=30)
        for m in got:
            await m.acomplete()
        return [m.seq for m in got]

    assert run(scenario) == seqs
    assert mq.peek(q) == []
    assert mq.stats(q).totals["completed"] == 3


def test_settling_twins(q: str) -> None:
    a, b, c, d, e = (mq.send(q, {"n": i}) for i in range(5))

    async def scenario() -> dict[int, Any]:
        got = {m.seq: m for m in await mq.areceive(q, max_messages=5, lock_duration=10)}
        await got[a].aabandon()
        await got[b].aabandon(delay=dt.timedelta(seconds=60))
        await got[c].areject("bad", "not an order")
        await got[d].adefer()
        before = got[e].locked_until
        renewed = await got[e].arenew(lock_duration=120)
        assert renewed == got[e].locked_until and before is not None and renewed > before
        return {s: m.settled for s, m in got.items()}

    settled = run(scenario)
    assert settled == {a: "abandon", b: "abandon", c: "reject", d: "defer", e: None}
    states = {p.seq: p.state for p in mq.peek(q)}
    assert states == {
        a: mq.State.ACTIVE,
        b: mq.State.SCHEDULED,
        c: mq.State.DEAD_LETTERED,
        d: mq.State.DEFERRED,
        e: mq.State.LOCKED,
    }
    [dead] = mq.peek(q, state="dead_lettered")
    assert (dead.dead_letter_reason, dead.dead_letter_description) == ("bad", "not an order")


def test_settling_twins_raise_lock_lost_like_their_twins(q: str) -> None:
    mq.send(q, b"x")

    async def scenario() -> None:
        [m] = await mq.areceive(q)
        await m.acomplete()
        await m.acomplete()  # exact replay: succeeds like the sync one
        for call in (m.aabandon(), m.areject("r"), m.adefer(), m.arenew()):
            with pytest.raises(mq.LockLostError):
                await call

    run(scenario)


def test_areceive_and_delete_grants_no_lease(q: str) -> None:
    mq.send(q, b"x")

    async def scenario() -> None:
        [m] = await mq.areceive(q, mode="receive_and_delete")
        assert m.lock_token is None and m.locked_until is None
        with pytest.raises(mq.LockLostError):
            await m.acomplete()

    run(scenario)
    assert mq.peek(q) == []


def test_areceive_attempt_id_replays_the_same_batch(q: str) -> None:
    mq.send_batch(q, [mq.OutMessage(b"a"), mq.OutMessage(b"b")])

    async def scenario() -> tuple[list[Any], list[Any]]:
        first = await mq.areceive(q, max_messages=2, attempt_id="try-1")
        again = await mq.areceive(q, max_messages=2, attempt_id="try-1", wait=1)
        return first, again

    first, again = run(scenario)
    assert [(m.seq, m.lock_token) for m in again] == [(m.seq, m.lock_token) for m in first]
    assert [m.delivery_count for m in again] == [1, 1]
