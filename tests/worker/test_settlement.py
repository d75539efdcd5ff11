"""The worker's batched settlements (``worker.settlement``): a database error gives the
batch back to the pool (kept, leases and all, for the next flush) instead of dropping
it, a retry of a batch that did commit is an exact replay, and a delivery the worker
knows is lost is never presented."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.db import DatabaseError

import django_mqlite as mq
from django_mqlite.engine import settle
from django_mqlite.worker import settlement, tracing
from django_mqlite.worker.delivery import Delivery
from django_mqlite.worker.pool import Pool
from tests.settings import SECOND

pytestmark = pytest.mark.django_db


def _pool(q: str) -> Pool:
    return Pool(1, using=mq.database_of(q), backoff=lambda n: 0.0, wake=lambda: None)


def _finished(pool: Pool, q: str, n: int, *, failed: bool = False) -> list[Delivery]:
    mq.send_batch(q, [mq.OutMessage(i) for i in range(n)])
    ds = [Delivery(m, None, 30, 0) for m in mq.receive(q, max_messages=n)]  # type: ignore[arg-type]
    if failed:
        pool.failed.extend((d, 5.0, "tb") for d in ds)
    else:
        pool.done.extend(ds)
    return ds


class Flaky:
    """Wraps an engine verb: the first call fails like a dropped connection, after the
    statement (``committed``) or before it."""

    def __init__(self, verb: Any, *, committed: bool) -> None:
        self.verb, self.committed, self.calls = verb, committed, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            if self.committed:
                self.verb(*args, **kwargs)
            raise DatabaseError("server closed the connection unexpectedly")
        return self.verb(*args, **kwargs)


@pytest.mark.parametrize("committed", [False, True], ids=["before", "after-commit"])
def test_a_failed_completion_flush_keeps_the_batch(
    q: str, monkeypatch: pytest.MonkeyPatch, committed: bool
) -> None:
    pool = _pool(q)
    ds = _finished(pool, q, 3)
    monkeypatch.setattr(settle, "complete_many", Flaky(settle.complete_many, committed=committed))
    with pytest.raises(DatabaseError):
        settlement.flush_completions(pool, mq.database_of(q))
    assert pool.done == ds  # given back, to be flushed again
    assert {d for d in pool.held()} == set(ds)  # and their leases still renewed
    outcome = "replayed" if committed else "completed"
    assert settlement.flush_completions(pool, mq.database_of(q)) == {outcome: 3}
    assert mq.peek(q) == [] and mq.stats(q).totals["completed"] == 3


@pytest.mark.parametrize("committed", [False, True], ids=["before", "after-commit"])
def test_a_failed_abandon_flush_keeps_the_batch(
    q: str, monkeypatch: pytest.MonkeyPatch, committed: bool
) -> None:
    pool = _pool(q)
    ds = _finished(pool, q, 3, failed=True)
    monkeypatch.setattr(settle, "abandon_many", Flaky(settle.abandon_many, committed=committed))
    with pytest.raises(DatabaseError):
        settlement.flush_failures(pool, mq.database_of(q))
    assert [f[0] for f in pool.failed] == ds
    outcome = "replayed" if committed else "scheduled"
    assert settlement.flush_failures(pool, mq.database_of(q)) == {outcome: 3}
    assert {p.state for p in mq.peek(q)} == {"scheduled"}
    assert mq.stats(q).totals["abandoned"] == 3


def test_only_the_batches_not_written_are_given_back(
    make_queue: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = make_queue("fa").name, make_queue("fb").name
    pool = _pool(a)
    _finished(pool, a, 2)
    second = _finished(pool, b, 2)
    real = settle.complete_many

    def fail_on_b(queue: str, *args: Any, **kwargs: Any) -> Any:
        if queue == b:
            raise DatabaseError("gone")
        return real(queue, *args, **kwargs)

    monkeypatch.setattr(settle, "complete_many", fail_on_b)
    with pytest.raises(DatabaseError):
        settlement.flush_completions(pool, mq.database_of(a))
    assert pool.done == second
    assert mq.peek(a) == [] and len(mq.peek(b)) == 2


def test_a_delivery_known_lost_is_not_completed(q: str) -> None:
    """Its token may still match (a renewal that failed for another reason, a lease
    that another delivery has not taken yet): presenting it would complete a message
    this worker no longer answers for."""
    pool = _pool(q)
    lost, _kept = _finished(pool, q, 2)
    lost.lost = True
    assert settlement.flush_completions(pool, mq.database_of(q)) == {"stale": 1, "completed": 1}
    assert [(p.seq, p.state) for p in mq.peek(q)] == [(lost.msg.seq, "locked")]
    assert pool.done == []


def test_a_failure_known_lost_is_not_abandoned(q: str) -> None:
    pool = _pool(q)
    lost, kept = _finished(pool, q, 2, failed=True)
    lost.lost = True
    assert settlement.flush_failures(pool, mq.database_of(q)) == {"stale": 1, "scheduled": 1}
    states = {p.seq: p.state for p in mq.peek(q)}
    assert states == {lost.msg.seq: "locked", kept.msg.seq: "scheduled"}


# -- renewals, the completion hook and the log lines, one rule at a time ----------------

LOGGER = "django_mqlite.worker"


def _held(pool: Pool, q: str, n: int = 1, *, using: str | None = None) -> list[Delivery]:
    """``n`` claimed messages of ``q`` waiting for a thread in ``pool``, renewal due now."""
    mq.send_batch(q, [mq.OutMessage(i) for i in range(n)], using=using)
    got = mq.receive(q, max_messages=n, using=using)
    ds = [Delivery(m, None, 30, settlement.clock_s()) for m in got]  # type: ignore[arg-type]
    pool.pending.extend(ds)
    return ds


def _logged(caplog: pytest.LogCaptureFixture, d: Delivery) -> list[tuple[int, str]]:
    """The worker's log lines about ``d``'s message, each carrying its fields."""
    out = []
    for r in caplog.records:
        if r.name == LOGGER and getattr(r, "mqlite_seq", None) == d.msg.seq:
            assert (r.mqlite_queue, r.mqlite_delivery_count) == (  # type: ignore[attr-defined]
                d.msg.queue,
                d.msg.delivery_count,
            )
            out.append((r.levelno, r.getMessage()))
    return out


def test_the_engine_clock_in_seconds(clock: mq.clock.FrozenClock) -> None:
    assert settlement.clock_s() == clock.now_ms() / 1000


def test_a_lease_is_renewed_from_half_its_life_and_by_its_lease(
    q: str, clock: mq.clock.FrozenClock
) -> None:
    pool = _pool(q)
    due, later = _held(pool, q, 2)
    later.next_renew = settlement.clock_s() + 0.001
    [before] = [p.locked_until for p in mq.peek(q) if p.seq == later.msg.seq]
    clock.advance(5)
    now = settlement.clock_s()
    due.next_renew = now  # due exactly now
    later.next_renew = now + 0.001
    settlement.renew_due(pool, mq.database_of(q))
    assert (due.next_renew, due.lease_until) == (now + 15, now + 30)
    assert (later.next_renew, later.lease_until) == (now + 0.001, 0.0)
    locked = {p.seq: p.locked_until for p in mq.peek(q)}
    assert locked[later.msg.seq] == before  # not renewed
    assert locked[due.msg.seq] > before


def test_a_renewal_stamps_the_workers_heartbeat(q: str, clock: mq.clock.FrozenClock) -> None:
    from django_mqlite.models import Worker

    now = clock.now_ms()
    wid = Worker.objects.create(host="h", pid=1, queues=[q], started_at=now, last_seen=now).pk
    pool = _pool(q)
    _held(pool, q)
    clock.advance(5)
    settlement.renew_due(pool, mq.database_of(q), worker_id=wid)
    assert Worker.objects.get(pk=wid).last_seen == clock.now_ms()


def test_a_renewal_writes_the_reports_and_a_failed_one_keeps_them(
    q: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = _pool(q)
    [d] = _held(pool, q)
    d.msg.set_progress({"step": 1})
    real = settle.renew_many
    monkeypatch.setattr(settle, "renew_many", Flaky(real, committed=False))
    with pytest.raises(DatabaseError):
        settlement.renew_due(pool, mq.database_of(q))
    assert mq.peek(q)[0].progress is None
    settlement.renew_due(pool, mq.database_of(q))  # the reports were given back
    assert mq.peek(q)[0].progress == {"step": 1}
    assert d.msg.take_notes() is None


def test_a_requested_cancel_reaches_the_handler_at_the_renewal_and_is_logged_once(
    q: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", LOGGER)
    pool = _pool(q)
    asked, other = _held(pool, q, 2)
    settlement.renew_due(pool, mq.database_of(q))
    assert not asked.msg.cancel_requested and not other.msg.cancel_requested
    assert mq.request_cancel(q, asked.msg.seq)
    asked.next_renew = other.next_renew = 0
    settlement.renew_due(pool, mq.database_of(q))
    assert asked.msg.cancel_requested and not other.msg.cancel_requested
    asked.next_renew = 0
    settlement.renew_due(pool, mq.database_of(q))  # still requested: seen already
    assert _logged(caplog, asked) == [(logging.INFO, f"{q} #{asked.msg.seq}: cancel requested")]
    assert _logged(caplog, other) == []


def test_a_lease_found_lost_at_renewal_is_marked_and_logged(
    make_queue: Any, clock: mq.clock.FrozenClock, caplog: pytest.LogCaptureFixture
) -> None:
    q = make_queue("short", lock_duration=10).name
    pool = _pool(q)
    [d] = _held(pool, q)
    clock.advance(11)
    assert mq.reap()["expired_locks"] == 1
    settlement.renew_due(pool, mq.database_of(q))
    assert d.lost is True and pool.held() == []
    assert d.lease_until == 0.0
    assert _logged(caplog, d) == [(logging.WARNING, f"{q} #{d.msg.seq}: lease lost while held")]


def test_a_message_claimed_again_by_its_own_worker_is_held_once(
    make_queue: Any, clock: mq.clock.FrozenClock
) -> None:
    """A delivery waiting for a thread outlives its lease (the worker stalled), the
    message returns, and the worker's own next claim takes it again under a new token:
    the older delivery is lost at once, so the renewal and the release present the
    message once (a batch naming a message twice is refused, which stopped the worker)
    and only the current token is renewed and released."""
    q = make_queue("again", lock_duration=10).name
    using = mq.database_of(q)
    pool = _pool(q)
    [old] = _held(pool, q)
    clock.advance(11)
    assert mq.reap()["expired_locks"] == 1
    [again] = mq.receive(q)
    assert again.seq == old.msg.seq and again.lock_token != old.msg.lock_token
    new = Delivery(again, None, 30, settlement.clock_s())  # type: ignore[arg-type]
    pool.submit([new])
    assert (old.lost, new.lost) == (True, False)
    assert pool.held() == [new]
    settlement.renew_due(pool, using)  # both were due: only the current one is renewed
    assert new.lease_until == settlement.clock_s() + 30
    settlement.release(pool.take_pending(), using)
    [row] = mq.peek(q)
    assert (row.state, row.delivery_count) == ("active", 1)  # the second claim given back


def test_a_release_hands_each_queues_unstarted_messages_back_and_logs_a_line_per_queue(
    make_queue: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", LOGGER)
    a, b = make_queue("ra").name, make_queue("rb").name
    pool = _pool(a)
    ds = _held(pool, a, 2) + _held(pool, b, 1)
    settlement.release(ds, mq.database_of(a))
    for queue, n in ((a, 2), (b, 1)):
        assert [(p.state, p.delivery_count) for p in mq.peek(queue)] == [("active", 0)] * n
    lines = [
        (r.getMessage(), r.mqlite_queue)  # type: ignore[attr-defined]
        for r in caplog.records
        if r.name == LOGGER
    ]
    assert lines == [
        (f"released 2 unstarted message(s) of {a}", a),
        (f"released 1 unstarted message(s) of {b}", b),
    ]


def test_a_release_of_more_than_a_batch_takes_one_statement_per_batch(
    q: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(settle, "MAX_COMPLETE_BATCH", 2)
    pool = _pool(q)
    ds = _held(pool, q, 3)
    sizes: list[int] = []
    real = settle.release

    def counted(queue: str, items: Any, **kwargs: Any) -> Any:
        sizes.append(len(items))
        return real(queue, items, **kwargs)

    monkeypatch.setattr(settle, "release", counted)
    settlement.release(ds, mq.database_of(q))
    assert sizes == [2, 1]
    assert {p.state for p in mq.peek(q)} == {"active"}


class Hook:
    """A completion's ``on_completed``: records its calls, or raises."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error, self.calls = error, 0

    def __call__(self) -> None:
        self.calls += 1
        if self.error is not None:
            raise self.error


def test_the_completion_hook_runs_once_after_the_completion_commits(q: str) -> None:
    pool = _pool(q)
    [d] = _finished(pool, q, 1)
    hook = Hook()
    d.msg.completion = mq.Completion(on_completed=hook)
    assert settlement.flush_completions(pool, mq.database_of(q)) == {"completed": 1}
    assert hook.calls == 1


def test_a_failing_completion_hook_is_logged_and_the_flush_goes_on(
    q: str, caplog: pytest.LogCaptureFixture
) -> None:
    pool = _pool(q)
    first, second = _finished(pool, q, 2)
    first.msg.completion = mq.Completion(on_completed=Hook(RuntimeError("hook broke")))
    hook = Hook()
    second.msg.completion = mq.Completion(on_completed=hook)
    assert settlement.flush_completions(pool, mq.database_of(q)) == {"completed": 2}
    assert hook.calls == 1
    assert _logged(caplog, first) == [(logging.ERROR, f"after completing {q} #{first.msg.seq}")]
    [r] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert r.exc_info is not None and str(r.exc_info[1]) == "hook broke"
    assert _logged(caplog, second) == []


@pytest.mark.parametrize("how", ["known-lost", "found-lost"])
def test_a_lost_completion_runs_no_hook_and_warns_of_the_redelivery(
    make_queue: Any, clock: mq.clock.FrozenClock, caplog: pytest.LogCaptureFixture, how: str
) -> None:
    q = make_queue("short", lock_duration=10).name
    pool = _pool(q)
    [d] = _finished(pool, q, 1)
    hook = Hook()
    d.msg.completion = mq.Completion(on_completed=hook)
    if how == "known-lost":
        d.lost = True
    else:  # the lease ran out and the reaper took it back before the flush
        clock.advance(11)
        assert mq.reap()["expired_locks"] == 1
    assert settlement.flush_completions(pool, mq.database_of(q)) == {"stale": 1}
    assert hook.calls == 0
    assert _logged(caplog, d) == [
        (
            logging.WARNING,
            f"{q} #{d.msg.seq}: lease lost before completion; it will be redelivered",
        )
    ]


def test_a_failure_is_abandoned_with_its_delay_and_error(
    q: str, clock: mq.clock.FrozenClock
) -> None:
    pool = _pool(q)
    _finished(pool, q, 1, failed=True)
    assert settlement.flush_failures(pool, mq.database_of(q)) == {"scheduled": 1}
    [p] = mq.peek(q)
    assert (p.state, p.last_error) == ("scheduled", "tb")
    assert p.visible_at is not None
    assert p.visible_at.timestamp() == pytest.approx(clock.now_ms() / 1000 + 5.0)


def test_a_failures_checkpoint_is_written_before_it_is_abandoned(q: str) -> None:
    pool = _pool(q)
    [d] = _finished(pool, q, 1, failed=True)
    d.msg.checkpoint({"at": 3})
    assert settlement.flush_failures(pool, mq.database_of(q)) == {"scheduled": 1}
    assert mq.peek(q)[0].checkpoint == {"at": 3}


def test_only_the_failures_not_written_are_given_back(
    make_queue: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = make_queue("fa").name, make_queue("fb").name
    pool = _pool(a)
    _finished(pool, a, 2, failed=True)
    second = _finished(pool, b, 2, failed=True)
    real = settle.abandon_many

    def fail_on_b(queue: str, *args: Any, **kwargs: Any) -> Any:
        if queue == b:
            raise DatabaseError("gone")
        return real(queue, *args, **kwargs)

    monkeypatch.setattr(settle, "abandon_many", fail_on_b)
    with pytest.raises(DatabaseError):
        settlement.flush_failures(pool, mq.database_of(a))
    assert [f[0] for f in pool.failed] == second
    assert {p.state for p in mq.peek(a)} == {"scheduled"}
    assert {p.state for p in mq.peek(b)} == {"locked"}


@pytest.mark.parametrize("how", ["known-lost", "found-lost"])
def test_a_lost_failure_is_logged(
    make_queue: Any, clock: mq.clock.FrozenClock, caplog: pytest.LogCaptureFixture, how: str
) -> None:
    q = make_queue("short", lock_duration=10).name
    pool = _pool(q)
    [d] = _finished(pool, q, 1, failed=True)
    if how == "known-lost":
        d.lost = True
    else:
        clock.advance(11)
        assert mq.reap()["expired_locks"] == 1
    assert settlement.flush_failures(pool, mq.database_of(q)) == {"stale": 1}
    assert _logged(caplog, d) == [
        (logging.WARNING, f"{q} #{d.msg.seq}: could not abandon: lease lost")
    ]


@pytest.mark.django_db(databases=["default", SECOND])
def test_every_write_goes_to_the_workers_database(clock: mq.clock.FrozenClock) -> None:
    """A queue that no setting declares, on the second database: only the worker's
    ``using`` says where it lives."""
    q = mq.create_queue("elsewhere", using=SECOND).name
    pool = Pool(1, using=SECOND, backoff=lambda n: 0.0, wake=lambda: None)
    renewed, done, failed, released = _held(pool, q, 4, using=SECOND)
    renewed.msg.set_progress("half")
    pool.pending.remove(done)
    pool.pending.remove(failed)
    pool.done.append(done)
    pool.failed.append((failed, 5.0, "tb"))
    clock.advance(5)
    settlement.renew_due(pool, SECOND)
    assert renewed.lease_until == settlement.clock_s() + 30
    failed.msg.checkpoint("step 2")  # after the renewal: the abandon's own write
    assert settlement.flush_completions(pool, SECOND) == {"completed": 1}
    assert settlement.flush_failures(pool, SECOND) == {"scheduled": 1}
    settlement.release([released], SECOND)
    states = {p.seq: (p.state, p.progress) for p in mq.peek(q, using=SECOND)}
    assert states == {
        renewed.msg.seq: ("locked", "half"),
        failed.msg.seq: ("scheduled", None),
        released.msg.seq: ("active", None),
    }
    assert mq.peek(q, using=SECOND)[1].checkpoint == "step 2"


def test_each_lost_delivery_counts_as_stale(q: str) -> None:
    pool = _pool(q)
    *lost, _kept = _finished(pool, q, 3)
    for d in lost:
        d.lost = True
    assert settlement.flush_completions(pool, mq.database_of(q)) == {"stale": 2, "completed": 1}
    *lost, _kept = _finished(pool, q, 3, failed=True)
    for d in lost:
        d.lost = True
    assert settlement.flush_failures(pool, mq.database_of(q)) == {"stale": 2, "scheduled": 1}


def test_a_completion_carries_the_last_progress_where_results_are_kept(make_queue: Any) -> None:
    q = make_queue("kept", keep_results=3600).name
    pool = _pool(q)
    reported, silent = _finished(pool, q, 2)
    reported.msg.set_progress("all done")
    assert settlement.flush_completions(pool, mq.database_of(q)) == {"completed": 2}
    progress = {p.seq: (p.state, p.progress) for p in mq.peek(q)}
    assert progress == {
        reported.msg.seq: ("completed", "all done"),
        silent.msg.seq: ("completed", None),
    }


class Spans:
    """A tracer hook that records the outcome each consumer span ends with."""

    def __init__(self) -> None:
        self.ended: dict[Any, str] = {}

    def finish(self, span: Any, msg: Any, outcome: str) -> None:
        self.ended[span] = outcome


def test_each_flushed_delivery_ends_its_span_with_its_outcome(
    q: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spans = Spans()
    monkeypatch.setattr(tracing, "hook", spans)
    pool = _pool(q)
    done, lost = _finished(pool, q, 2)
    failed, lost_failure = _finished(pool, q, 2, failed=True)
    lost.lost = lost_failure.lost = True
    for name, d in (("done", done), ("lost", lost), ("failed", failed), ("lf", lost_failure)):
        d.msg.span = name
    settlement.flush_completions(pool, mq.database_of(q))
    settlement.flush_failures(pool, mq.database_of(q))
    assert spans.ended == {
        "done": "completed",
        "lost": "lock_lost",
        "failed": "scheduled",
        "lf": "lock_lost",
    }
