"""The cancel route (``POST queues/{name}/messages/{seq}/cancel/``): ``mq.request_cancel``
on the wire; a finished message is 409 ``finished``, an unknown one 404, and neither
changes anything. Who may call it: tests/api/test_auth_matrix.py (manage)."""

from __future__ import annotations

from typing import Any

import pytest

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
