"""The cancel route (``POST queues/{name}/messages/{seq}/cancel/``): ``mq.request_cancel``
on the wire; a finished message is 409 ``finished``, an unknown one 404, and neither
changes anything. Who may call it: tests/api/test_auth_matrix.py (manage)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext

import django_mqlite as mq

from .conftest import error, url

pytestmark = pytest.mark.django_db


def cancel(api: Any, q: str, seq: int) -> Any:
    return api.post(url(f"queues/{q}/messages/{seq}/cancel/"))


def test_cancel_a_running_then_a_waiting_message(api: Any) -> None:
    mq.create_queue("c", keep_results=60)
    running = mq.send("c", 1)
    (m,) = mq.receive("c")
    waiting = mq.send("c", 2)
    r = cancel(api, "c", running)
    assert (r.status_code, r.json()) == (200, {"requested": True})
    assert cancel(api, "c", running).json() == {"requested": False}
    assert m.renew() and m.cancel_requested
    r = cancel(api, "c", waiting)
    assert (r.status_code, r.json()) == (200, {"requested": True})
    [dead] = mq.peek("c", state="dead_lettered")
    assert (dead.seq, dead.dead_letter_reason) == (waiting, "Cancelled")


def test_finished_and_unknown_messages(api: Any) -> None:
    mq.create_queue("c", keep_results=60)
    seq = mq.send("c", 1)
    (m,) = mq.receive("c")
    m.complete()
    error(cancel(api, "c", seq), 409, "finished")
    error(cancel(api, "c", seq + 100), 404, "not_found")
    error(cancel(api, "nowhere", seq), 404, "not_found")
    assert [p.state for p in mq.peek("c")] == ["completed"]


def test_peek_shows_progress_checkpoint_and_the_request(api: Any) -> None:
    mq.create_queue("c")
    seq = mq.send("c", 1)
    (m,) = mq.receive("c")
    m.set_progress({"done": 2})
    m.checkpoint("page-2")
    m.renew()
    cancel(api, "c", seq)
    r = api.get(url("queues/c/messages/"))
    [shown] = r.json()["messages"]
    assert (shown["progress"], shown["checkpoint"]) == ({"done": 2}, "page-2")
    assert shown["cancel_requested_at"] is not None


def test_the_renewal_answer_carries_the_cancel_request(api: Any) -> None:
    """An HTTP consumer learns of a cancel from its lease renewal, read by the renewal's
    own fenced statement (the statement count of a renewal is unchanged)."""
    mq.create_queue("c")
    seq = mq.send("c", 1)
    (m,) = mq.receive("c")
    path = url(f"queues/c/messages/{seq}/renew/")
    first = api.post(path, {"lock_token": m.lock_token}, format="json")
    assert (first.status_code, first.json()["cancel_requested"]) == (200, False)
    assert mq.request_cancel("c", seq)
    with CaptureQueriesContext(connections[mq.database_of("c")]) as ran:
        r = api.post(path, {"lock_token": m.lock_token}, format="json")
    assert (r.status_code, r.json()["cancel_requested"]) == (200, True)
    # The one renewal statement writes the row and answers (where
    # the database has no UPDATE ... RETURNING, the MariaDB engine cursor locks the row
    # and reads it back around that one UPDATE: dialects.mariadb_sql).
    touching = [q["sql"] for q in ran.captured_queries if "mqlite_message" in q["sql"]]
    writes = [s for s in touching if not s.lstrip().upper().startswith("SELECT")]
    assert len(writes) == 1 and writes[0].lstrip().upper().startswith("UPDATE"), touching
