"""Batch metrics on ``GET metrics/``: batches kept by state, their children by outcome,
callbacks fired and callback errors, read from the batch rows the settlements write
(``api/metrics.py``); shown with the view permission across queues only."""

from __future__ import annotations

from typing import Any

from django.db import connection
from prometheus_client.parser import text_string_to_metric_families

import django_mqlite as mq
from django_mqlite.api import metrics
from django_mqlite.engine import tally

from . import queue_perms
from .conftest import url


def scrape(client: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    r = client.get(url("metrics/"), HTTP_ACCEPT="text/plain")
    assert r.status_code == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(r.content.decode())
        for s in family.samples
    }


def batches(samples: Any, state: str) -> float:
    return samples[("mqlite_batches", (("state", state),))]


def children(samples: Any, state: str, outcome: str) -> float:
    return samples[("mqlite_batch_children", (("batch_state", state), ("outcome", outcome)))]


def fired(samples: Any, name: str) -> float:
    return samples[("mqlite_batch_callbacks_fired", (("callback", name),))]


def test_batches_children_and_callbacks(api: Any, q: str, make_queue: Any) -> None:
    make_queue("done")
    callbacks = {
        "on_complete": mq.Callback("done", "c"),
        "on_success": mq.Callback("done", "s"),
        "on_failure": mq.Callback("done", "f"),
    }
    empty = scrape(api)
    assert batches(empty, "running") == 0 and fired(empty, "on_complete") == 0
    with mq.batch(**callbacks) as ok:
        ok.send(q, 1)
    with mq.batch(**callbacks) as bad:
        bad.send(q, 2)
        bad.send(q, 3)
    with mq.batch(**callbacks) as running:
        running.send(q, 4)
    a = mq.send(q, "a")
    mq.send(q, "d", depends_on=[a])  # a message's own node is not a batch
    got = {m.body: m for m in mq.receive(q, max_messages=10)}
    got[b"1"].complete()  # ok finishes: completed
    got[b"2"].complete()
    got[b"3"].reject("Bad")  # bad finishes: failed
    s = scrape(api)
    assert (batches(s, "open"), batches(s, "running"), batches(s, "finished")) == (0, 1, 2)
    assert children(s, "running", "pending") == 1
    assert children(s, "finished", "completed") == 2
    assert children(s, "finished", "failed") == 1
    assert children(s, "finished", "pending") == 0
    assert fired(s, "on_complete") == 2
    assert fired(s, "on_success") == 1
    assert fired(s, "on_failure") == 1
    assert s[("mqlite_batch_callback_errors", ())] == 0


def test_a_callback_error_is_counted(api: Any, q: str, make_queue: Any) -> None:
    make_queue("gone")
    with mq.batch(on_complete=mq.Callback("gone", "c")) as b:
        b.send(q, 1)
    mq.delete_queue("gone")
    (m,) = mq.receive(q)
    m.complete()
    assert mq.get_batch(b.id).callback_error
    s = scrape(api)
    assert s[("mqlite_batch_callback_errors", ())] == 1
    assert fired(s, "on_complete") == 1  # marked fired: it will not be tried again


def test_a_scrape_of_batches_is_one_read_per_state(api: Any, q: str) -> None:
    from django.test.utils import CaptureQueriesContext

    with mq.batch() as b:
        b.send(q, 1)
    with CaptureQueriesContext(connection) as ctx:
        scrape(api)
    batch_reads = [x["sql"] for x in ctx.captured_queries if "mqlite_batch" in x["sql"]]
    assert len(batch_reads) == 3
    assert not [x for x in batch_reads if not x.lstrip().upper().startswith("SELECT")]


def test_batch_gauges_need_the_view_permission_across_queues(per_queue: Any, q: str) -> None:
    with mq.batch() as b:
        b.send(q, 1)
    queue_perms.GRANTS[("pq", "django_mqlite.view_queue")] = {q}
    r = per_queue.get(url("metrics/"), HTTP_ACCEPT="text/plain")
    assert r.status_code == 200 and f'queue="{q}"'.encode() in r.content
    assert b"mqlite_batch" not in r.content


def test_the_callback_bits_are_the_engines() -> None:
    assert metrics._CALLBACK_BITS == tally.CALLBACK_BITS
