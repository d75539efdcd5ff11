"""The Dead letters page and whole-queue actions stay bounded on a huge dead-letter
queue: the reason filter lists a bounded number of reasons, whole-queue redrive and
purge stop after a bounded number per request."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.test import Client

import django_mqlite as mq
from django_mqlite.admin import actions
from django_mqlite.admin.messages import ReasonFilter
from django_mqlite.models import Queue

pytestmark = pytest.mark.django_db
DLQ = "/admin/django_mqlite/deadletter/"
QUEUES = "/admin/django_mqlite/queue/"


def test_reason_filter_lists_a_bounded_number_of_reasons(
    admin_client: Client,
    make_queue: Callable[..., Any],
    dead_letter: Callable[..., int],
    monkeypatch: Any,
) -> None:
    q = make_queue().name
    for n in range(8):
        dead_letter(q, reason=f"Reason{n}")
    dead_letter(q, reason="Reason7")
    monkeypatch.setattr(ReasonFilter, "SHOWN", 3)
    page = admin_client.get(DLQ)
    (spec,) = [f for f in page.context["cl"].filter_specs if isinstance(f, ReasonFilter)]
    choices = [c for c, _ in spec.lookup_choices]
    assert len(choices) == 3
    assert choices[0] == "Reason7"  # the most common first


@pytest.mark.parametrize("action", ["redrive_queue_dlq", "purge_queue_dlq"])
def test_whole_queue_actions_stop_after_a_bounded_number(
    admin_client: Client,
    make_queue: Callable[..., Any],
    dead_letter: Callable[..., int],
    monkeypatch: Any,
    action: str,
) -> None:
    q = make_queue().name
    for _ in range(5):
        dead_letter(q)
    monkeypatch.setattr(actions, "WHOLE_QUEUE_LIMIT", 3)
    pk = Queue.objects.get(name=q).pk
    post = {"action": action, "_selected_action": [pk], "post": "yes"}
    response = admin_client.post(QUEUES, post, follow=True)
    said = " ".join(str(m) for m in get_messages(response.wsgi_request))
    assert "run the action again" in said
    assert mq.stats(q).counts["dead_lettered"] == 2
    admin_client.post(QUEUES, post, follow=True)
    assert mq.stats(q).counts["dead_lettered"] == 0
