"""The dedicated permissions: staff without redrive_message / purge_message neither see
nor can run the actions, and nothing changes when they try."""

from __future__ import annotations

import pytest
from django.test import Client

import django_mqlite as mq

from .conftest import action_post, state_of

DLQ = "/admin/django_mqlite/deadletter/"
QUEUES = "/admin/django_mqlite/queue/"


def _actions_offered(client: Client, url: str) -> set[str]:
    html = client.get(url).content.decode()
    return {
        name
        for name in (
            "redrive_selected",
            "redrive_selected_to_queue",
            "purge_selected",
            "redrive_queue_dlq",
            "purge_queue_dlq",
        )
        if f'value="{name}"' in html
    }


def test_staff_without_permissions_sees_no_actions(staff_client, make_queue, dead_letter):
    q = make_queue().name
    dead_letter(q)
    client = staff_client()
    assert client.get(DLQ).status_code == 200
    assert _actions_offered(client, DLQ) == set()
    assert _actions_offered(client, QUEUES) == set()


def test_each_permission_unlocks_only_its_actions(staff_client, make_queue, dead_letter):
    dead_letter(make_queue().name)
    redriver = staff_client("redrive_message")
    assert _actions_offered(redriver, DLQ) == {"redrive_selected", "redrive_selected_to_queue"}
    assert _actions_offered(redriver, QUEUES) == {"redrive_queue_dlq"}
    purger = staff_client("purge_message")
    assert _actions_offered(purger, DLQ) == {"purge_selected"}
    assert _actions_offered(purger, QUEUES) == {"purge_queue_dlq"}


@pytest.mark.parametrize(
    ("action", "extra"),
    [
        ("redrive_selected", {}),
        ("redrive_selected_to_queue", {"to_queue": "other"}),
        ("purge_selected", {}),
    ],
)
def test_posting_a_refused_action_changes_nothing(
    staff_client, make_queue, dead_letter, action: str, extra: dict[str, str]
):
    q = make_queue().name
    make_queue("other")
    seq = dead_letter(q)
    client = staff_client()
    for payload in (
        action_post(action, [seq], **extra),
        {"action": action, "_selected_action": [seq], "post": "yes", **extra},
    ):
        response = client.post(DLQ, payload)
        assert response.status_code in (200, 302, 403)  # shown the list again, or refused
    assert state_of(seq) == "dead_lettered"
    assert mq.stats(q).totals["redriven"] == 0 and mq.stats(q).totals["purged"] == 0


def test_posting_refused_queue_actions_changes_nothing(staff_client, make_queue, dead_letter):
    queue = make_queue()
    seq = dead_letter(queue.name)
    from django_mqlite.models import Queue

    pk = Queue.objects.get(name=queue.name).pk
    client = staff_client("purge_message")  # may purge, may not redrive
    client.post(QUEUES, action_post("redrive_queue_dlq", [pk]))
    assert state_of(seq) == "dead_lettered"
    client = staff_client("redrive_message")  # may redrive, may not purge
    client.post(QUEUES, {"action": "purge_queue_dlq", "_selected_action": [pk], "post": "yes"})
    assert state_of(seq) == "dead_lettered"


def test_staff_without_view_permission_is_refused(staff_client, make_queue, dead_letter):
    seq = dead_letter(make_queue().name)
    client = staff_client("redrive_message", "purge_message", view=False)
    for url in (DLQ, QUEUES, "/admin/django_mqlite/message/", "/admin/django_mqlite/worker/"):
        assert client.get(url).status_code == 403
    assert client.get(f"{DLQ}{seq}/change/").status_code in (302, 403)


def test_nobody_adds_changes_or_deletes_by_hand(admin_client: Client, make_queue, dead_letter):
    q = make_queue().name
    seq = dead_letter(q)
    for model in ("queue", "message", "deadletter", "worker"):
        assert admin_client.get(f"/admin/django_mqlite/{model}/add/").status_code == 403
    assert admin_client.get(f"{DLQ}{seq}/delete/").status_code == 403
    response = admin_client.post(f"{DLQ}{seq}/change/", {"dead_letter_reason": "edited"})
    assert response.status_code == 403
    assert state_of(seq) == "dead_lettered"
    html = admin_client.get(QUEUES).content.decode()
    assert 'value="delete_selected"' not in html
