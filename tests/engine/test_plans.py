"""Query plans are behaviour: every statement the claim path and the reaper run must seek
its partial index, never scan the message table (SPEC §2 "Claims"; mqlite's O(n²) war
story is what happens otherwise). The statements are captured from the real calls and
explained on the database under test, over a backlog large enough that PostgreSQL's
planner would otherwise prefer a sequential scan (``tests/support/plans.py``). Plan text
is each vendor's own, so the few checks of its wording name the vendor."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import django_mqlite as mq
from tests.support.plans import (
    BACKLOG,
    analyze,
    assert_seeks,
    explain,
    full_scans,
    message_statements,
    statement_text,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

#: The reaper's lease-return statement (``maintenance.reclaim_sql``).
RECLAIM = "UPDATE mqlite_message SET state = CASE"


@pytest.fixture
def backlog() -> Iterator[None]:
    """20k messages of one group behind a locked head, plus rows in every other state."""
    mq.create_queue("big", keep_results=3600)
    for _ in range(BACKLOG // 1000):
        mq.send_batch("big", [mq.OutMessage(b"x", group_id="blocked") for _ in range(1000)])
    assert len(mq.receive("big")) == 1  # the group's head, now locked: 19,999 blocked
    mq.send_batch(
        "big",
        [mq.OutMessage(b"s", delay=3600, ttl=60) for _ in range(50)]
        + [mq.OutMessage(b"free") for _ in range(50)],
    )
    for i, m in enumerate(mq.receive("big", max_messages=50)):
        [m.complete, m.defer, lambda m=m: m.reject("Bad")][i % 3]()
    analyze()  # realistic planner statistics on both databases
    yield


def test_claim_seeks_the_claim_index_behind_a_blocked_group(backlog: None) -> None:
    mq.send("big", b"last")
    assert_seeks(lambda: mq.receive("big", max_messages=32), "mqlite_msg_claim")
    plan = explain(
        "SELECT seq FROM mqlite_message WHERE queue_id = 1 AND state = 'active' "
        "AND blocked = 0 AND (expires_at IS NULL OR expires_at > 0) "
        "ORDER BY priority DESC, seq LIMIT 32"
    )
    if connection.vendor == "sqlite":
        assert "TEMP B-TREE" not in plan  # the index already yields claim order
    if connection.vendor == "mysql":
        # MariaDB's claim is its pick (then a guarded UPDATE by key): the pick seeks
        # mqlite_msg_claim in claim order (claim_rank, seq), with no sort.
        [pick] = [
            s
            for s in message_statements(lambda: mq.receive("big", max_messages=32))
            if "FORCE INDEX (mqlite_msg_claim)" in s
        ]
        plan = explain(pick)
        assert "key=mqlite_msg_claim" in plan and "filesort" not in plan, plan
        assert "SKIP LOCKED" in pick
    # Not a timed assertion (see benchmarks/): report the figure for the record.
    start = time.perf_counter()
    for _ in range(20):
        mq.receive("big", max_messages=1)
    print(
        f"\nclaim behind a {BACKLOG}-message blocked group: "
        f"{(time.perf_counter() - start) / 20 * 1000:.2f} ms ({connection.vendor})"
    )


def test_a_claim_with_a_byte_budget_still_seeks_the_claim_index(backlog: None) -> None:
    mq.send_batch("big", [mq.OutMessage(b"y" * 1000) for _ in range(40)])
    assert_seeks(lambda: mq.receive("big", max_messages=32, max_bytes=20_000), "mqlite_msg_claim")


def test_send_and_settle_in_a_line_seek_the_line_index(backlog: None) -> None:
    assert_seeks(lambda: mq.send("big", b"x", group_id="blocked"), "mqlite_msg_line")
    (head,) = mq.peek("big", state="locked", limit=1)
    token = _token(head.seq)
    assert_seeks(lambda: mq.complete("big", head.seq, token), "mqlite_msg_line")


def _token(seq: int) -> str:
    with connection.cursor() as c:
        c.execute("SELECT lock_token FROM mqlite_message WHERE seq = %s", [seq])
        return str(c.fetchone()[0])


def test_reaper_passes_seek_their_partial_indexes(backlog: None) -> None:
    from django_mqlite.engine import maintenance

    for name, index in [
        ("expire_locks", "mqlite_msg_lease"),
        ("reclaim_stale_workers", "mqlite_msg_owner"),
        ("promote_scheduled", "mqlite_msg_due"),
        ("expire_ttl", "mqlite_msg_ttl"),
        # With few completed rows PostgreSQL may seek (queue, state) instead: also a seek.
        ("result_retention", ("mqlite_msg_results", "mqlite_msg_state")),
    ]:
        assert_seeks(lambda name=name: getattr(maintenance, name)("default"), index)
    mq.update_queue("big", dlq_max_count=1)
    assert_seeks(lambda: maintenance.dlq_retention("default"), "mqlite_msg_state")


def test_a_receives_return_of_its_queues_leases_seeks_an_index(backlog: None) -> None:
    """What a receive runs before its claim (``expire_queue_locks``): the reaper's
    statement for one queue, reading that queue's locked rows, never the table."""
    from django_mqlite.engine import maintenance

    statements = list(message_statements(lambda: maintenance.expire_locks("default", "big")))
    # (MariaDB's cursor runs the statement's pick of expired leases, and its UPDATE only
    # when the pick found some.)
    expired = "state = 'locked' AND locked_until <= "
    assert [s for s in statements if s.startswith(RECLAIM) or expired in s], statements
    assert_seeks(
        lambda: maintenance.expire_locks("default", "big"), ("mqlite_msg_state", "mqlite_msg_lease")
    )


def test_operator_reads_and_purge_use_the_state_index(backlog: None) -> None:
    assert_seeks(lambda: mq.peek("big", state="dead_lettered"), "mqlite_msg_state")
    assert_seeks(lambda: mq.purge("big"), "mqlite_msg_state")
    # mq.stats() counts the queue's rows exactly: pinned to the index alone below; the
    # admin and metrics use capped counts or estimates instead (see docs/admin.md).


def test_stats_count_a_queue_from_the_state_index(backlog: None) -> None:
    """The exact depth per state of a queue reads that queue's entries of
    ``mqlite_msg_state`` (SQLite: the covering index alone), never the whole table: the
    stats of a small queue cost nothing for a deep one beside it."""
    mq.create_queue("tiny")
    mq.send_batch("tiny", [mq.OutMessage(b"t") for _ in range(5)])
    analyze()
    (count,) = [s for s in message_statements(lambda: mq.stats("tiny")) if "count(" in s]
    plan = explain(count)
    assert full_scans(plan) == [], plan
    assert "mqlite_msg_state" in plan, plan
    if connection.vendor == "sqlite":
        assert "COVERING INDEX mqlite_msg_state" in plan, plan


def test_a_claim_without_limits_is_the_plain_statement(backlog: None) -> None:
    """A queue with no limit pays nothing for the limits: its claim is the one statement
    it always was, with no budget subquery and no lock on the queue row."""
    mq.send("big", b"last")
    with CaptureQueriesContext(connection) as ctx:
        mq.receive("big", max_messages=4)
    # Not the receive's return of expired leases: its own statement, pinned below.
    sql = [
        statement_text(q["sql"]) for q in ctx.captured_queries if not q["sql"].startswith(RECLAIM)
    ]
    claims = [s for s in sql if "UPDATE mqlite_message SET state = 'locked'" in s]
    assert len(claims) == 1
    claim = claims[0]
    if claim.startswith("WITH"):
        # PostgreSQL's one-statement claim: its claim is the CTE c.
        claim = claim.split(" c AS (", 1)[1].split("), hb AS (", 1)[0]
    assert claim.startswith("UPDATE mqlite_message SET state = 'locked'")
    assert "mqlite_queue" not in claim and "count(" not in claim
    # No statement locks the queue's row (a read of mqlite_queue and a lock clause at the
    # same level of parentheses).
    assert not any(re.search(r"FROM mqlite_queue\b[^()]*FOR UPDATE", s) for s in sql)
    assert not any("rate_tokens" in s for s in sql)


def test_a_limited_claim_seeks_the_claim_and_state_indexes(backlog: None) -> None:
    mq.update_queue("big", rate_limit=1000, max_in_flight=500)
    mq.send("big", b"last")
    statements = list(message_statements(lambda: mq.receive("big", max_messages=8)))
    if connection.vendor == "mysql":
        # MariaDB takes no subquery as a LIMIT: the budget is read first, in the claim's
        # transaction, with the queue row locked; the claim is its pick.
        pick = "SELECT seq FROM mqlite_message FORCE INDEX (mqlite_msg_claim)"
        (claim,) = [s for s in statements if s.startswith(pick)]
        assert [s for s in statements if "FROM mqlite_queue WHERE id" in s]
    else:
        claim_sql = "UPDATE mqlite_message SET state = 'locked'"
        (claim,) = [s for s in statements if s.startswith(claim_sql)]
        assert "mqlite_queue" in claim  # the budget is computed by the claim statement itself
    plan = explain(claim)
    assert full_scans(plan) == [], plan
    assert "mqlite_msg_claim" in plan, plan
    assert_seeks(lambda: mq.receive("big", max_messages=8), "mqlite_msg_claim")


def test_result_retention_reads_a_range_per_queue(backlog: None) -> None:
    """The pass seeks each queue's completed rows up to its cutoff: it never reads kept
    results that are not due, however many a queue keeps."""
    from django_mqlite.engine import maintenance

    statements = list(message_statements(lambda: maintenance.result_retention("default")))
    if connection.vendor == "mysql":
        # MariaDB runs the pick first (a LIMIT in an IN subquery is refused) and deletes
        # what it picked by key: the pick is what must seek.
        [sql] = [s for s in statements if "FORCE INDEX (mqlite_msg_results)" in s]
        plan = explain(sql)
        assert full_scans(plan) == [] and "key=mqlite_msg_results" in plan, plan
        return
    [sql] = [s for s in statements if s.startswith("DELETE")]
    plan = explain(sql)
    print(plan)
    if connection.vendor == "sqlite":
        assert re.search(r"mqlite_msg_results \(queue_id=\? AND completed_at<\?\)", plan), plan
    else:
        assert re.search(r"Index Cond: \(\(queue_id = q\.id\) AND \(completed_at <= ", plan) or (
            "mqlite_msg_state" in plan and "queue_id = q.id" in plan
        ), plan


def test_every_settle_verb_seeks_single_and_batched(backlog: None) -> None:
    """The settle verbs' statements never scan the message table, and a settlement of
    one message (pairs matched by ``seq =``, or joined to a one-row ``VALUES`` list with
    its pair also given as constants) keeps the plan a single settlement always had."""
    from django_mqlite.engine import settle
    from django_mqlite.engine.types import Completion

    mq.send_batch("big", [mq.OutMessage(b"y") for _ in range(40)])
    got = mq.receive("big", max_messages=40)
    pairs = [(m.seq, m.lock_token or "") for m in got]
    by_pk = ("mqlite_message_pkey", "INTEGER PRIMARY KEY", "key=PRIMARY")
    singles: list[Callable[[], object]] = [
        lambda: mq.abandon("big", *pairs[0], delay=5),
        lambda: mq.reject("big", *pairs[4], "Bad"),
        lambda: mq.defer("big", *pairs[8]),
        lambda: mq.renew("big", *pairs[12]),
        lambda: settle.complete_with_result("big", *pairs[20], {"ok": 1}),
        lambda: mq.complete("big", *pairs[21]),
    ]
    # PostgreSQL's planner has always taken the small partial index of locked rows for
    # these as readily as the key (the same cost); SQLite takes the key.
    one = by_pk if connection.vendor == "sqlite" else (*by_pk, "mqlite_msg_lease")
    for run in singles:
        assert_seeks(run, one)
    batches: list[Callable[[], object]] = [
        lambda: settle.abandon_many("big", [settle.AbandonItem(*p) for p in pairs[1:4]]),
        lambda: settle.reject_many("big", [settle.RejectItem(*p, "Bad") for p in pairs[5:8]]),
        lambda: settle.defer_many("big", pairs[9:12]),
        lambda: mq.renew_batch("big", pairs[13:16]),
        lambda: mq.complete_batch("big", pairs[16:20]),
        # With results kept (a batch of the Tasks worker's completions).
        lambda: settle.complete_many(
            "big", pairs[22:26], completions=[Completion(result={"ok": 1})] * 4
        ),
    ]
    for run in batches:  # by key, or by the partial index of locked rows
        assert_seeks(run, (*by_pk, "mqlite_msg_"))
