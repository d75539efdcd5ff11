"""The Messages page's "Cancel selected messages…" action (``mq.request_cancel`` after a
confirmation page), guarded by ``django_mqlite.cancel_message``; the detail page shows the
request, the progress and the checkpoint."""

from __future__ import annotations

from typing import Any

from django.contrib.messages import get_messages
from django.test import Client

import django_mqlite as mq

from .conftest import action_post, state_of

URL = "/admin/django_mqlite/message/"


def _notes(response: Any) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_cancel_asks_running_cancels_waiting_and_skips_finished(
    admin_client: Client, make_queue: Any, dead_letter: Any
) -> None:
    q = make_queue().name
    dead = dead_letter(q)
    running = mq.send(q, b"r")
    (held,) = mq.receive(q)
    waiting = mq.send(q, b"w")
    page = admin_client.post(URL, action_post("cancel_selected", [dead, running, waiting]))
    assert (
        page.status_code == 200
        and "Are you sure? Running messages are asked to stop" in page.content.decode()
    )
    assert state_of(waiting) == "active"
    done = admin_client.post(
        URL,
        {"action": "cancel_selected", "_selected_action": [dead, running, waiting], "post": "yes"},
        follow=True,
    )
    notes = _notes(done)
    assert "Cancelled or asked to stop 2 messages." in notes
    assert "1 selected message had finished or was asked already." in notes
    assert (state_of(running), state_of(waiting)) == ("locked", "dead_lettered")
    held.set_progress({"done": 7})
    held.checkpoint({"page": 2})
    held.renew()
    assert held.cancel_requested
    detail = admin_client.get(f"{URL}{running}/change/").content.decode().lower()
    assert "cancel requested" in detail and "&quot;done&quot;: 7" in detail
    assert "&quot;page&quot;: 2" in detail


def test_cancel_needs_its_permission(staff_client: Any, make_queue: Any) -> None:
    q = make_queue().name
    seq = mq.send(q, b"w")
    viewer = staff_client()
    assert "cancel_selected" not in viewer.get(URL).content.decode()
    viewer.post(URL, {"action": "cancel_selected", "_selected_action": [seq], "post": "yes"})
    assert state_of(seq) == "active"
    canceller = staff_client("cancel_message")
    assert "cancel_selected" in canceller.get(URL).content.decode()
    canceller.post(URL, {"action": "cancel_selected", "_selected_action": [seq], "post": "yes"})
    assert state_of(seq) == "dead_lettered"
