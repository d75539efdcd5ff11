"""Redrive, redrive to another queue and purge, from the Dead letters page."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.test import Client

import django_mqlite as mq

from .conftest import action_post, state_of

URL = "/admin/django_mqlite/deadletter/"


def _notes(response: Any) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_redrive_selected_moves_back_to_active(admin_client: Client, make_queue, dead_letter):
    q = make_queue("orders").name
    a, b, c = (dead_letter(q, f"m{i}") for i in range(3))
    response = admin_client.post(URL, action_post("redrive_selected", [a, b]), follow=True)
    assert "Redrove 2 dead letters." in _notes(response)
    assert (state_of(a), state_of(b), state_of(c)) == ("active", "active", "dead_lettered")
    assert mq.stats(q).totals["redriven"] == 2
    [first] = mq.receive(q)
    assert first.seq == a and first.delivery_count == 1  # reset to 0, then this delivery


def test_redrive_one_is_singular(admin_client: Client, make_queue, dead_letter):
    q = make_queue().name
    seq = dead_letter(q)
    response = admin_client.post(URL, action_post("redrive_selected", [seq]), follow=True)
    assert "Redrove 1 dead letter." in _notes(response)


def test_redrive_reports_rows_that_are_no_longer_dead(
    admin_client: Client, make_queue, dead_letter
):
    q = make_queue().name
    seq = dead_letter(q)
    mq.redrive(q, seqs=[seq])  # someone else got there first
    response = admin_client.post(
        URL, action_post("redrive_selected", [seq], select_across="0"), follow=True
    )
    # The changelist no longer holds the row, so Django's own guard answers.
    assert state_of(seq) == "active"
    assert response.status_code == 200


def test_redrive_to_queue_asks_for_the_target_then_moves(
    admin_client: Client, make_queue, dead_letter
):
    src = make_queue("src").name
    make_queue("dst")
    seq = dead_letter(src, {"n": 1})
    page = admin_client.post(URL, action_post("redrive_selected_to_queue", [seq]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'name="to_queue"' in html and '<option value="dst">' in html
    assert state_of(seq) == "dead_lettered"  # nothing happens before the choice
    done = admin_client.post(
        URL,
        {
            "action": "redrive_selected_to_queue",
            "_selected_action": [seq],
            "post": "yes",
            "to_queue": "dst",
        },
        follow=True,
    )
    assert "Redrove 1 dead letter." in _notes(done)
    [got] = mq.receive("dst")
    assert got.seq == seq and got.json() == {"n": 1}
    assert mq.stats("src").counts["dead_lettered"] == 0


def test_redrive_to_unknown_queue_is_a_form_error(admin_client: Client, make_queue, dead_letter):
    q = make_queue().name
    seq = dead_letter(q)
    page = admin_client.post(
        URL,
        {
            "action": "redrive_selected_to_queue",
            "_selected_action": [seq],
            "post": "yes",
            "to_queue": "nope",
        },
    )
    assert page.status_code == 200 and "errorlist" in page.content.decode()
    assert state_of(seq) == "dead_lettered"


def test_purge_needs_confirmation(admin_client: Client, make_queue, dead_letter):
    q = make_queue().name
    a, b = dead_letter(q, "a"), dead_letter(q, "b")
    page = admin_client.post(URL, action_post("purge_selected", [a, b]))
    html = page.content.decode()
    assert page.status_code == 200 and "Are you sure?" in html
    assert f"#{a} in {q}" in html
    assert state_of(a) == "dead_lettered"
    done = admin_client.post(
        URL, {"action": "purge_selected", "_selected_action": [a, b], "post": "yes"}, follow=True
    )
    assert "Purged 2 dead letters." in _notes(done)
    assert state_of(a) is None and state_of(b) is None
    assert mq.stats(q).totals["purged"] == 2


def test_purge_select_across_takes_the_filtered_changelist(
    admin_client: Client, make_queue, dead_letter
):
    q1, q2 = make_queue().name, make_queue().name
    keep = dead_letter(q2)
    gone = [dead_letter(q1) for _ in range(3)]
    from django_mqlite.models import Queue

    qid = Queue.objects.get(name=q1).pk
    url = f"{URL}?queue__id__exact={qid}"
    page = admin_client.post(url, action_post("purge_selected", gone[:1], select_across="1"))
    assert page.status_code == 200 and 'name="select_across"' in page.content.decode()
    done = admin_client.post(
        url,
        {
            "action": "purge_selected",
            "_selected_action": gone[:1],
            "select_across": "1",
            "post": "yes",
        },
        follow=True,
    )
    assert "Purged 3 dead letters." in _notes(done)
    assert state_of(keep) == "dead_lettered"


@pytest.mark.parametrize("action", ["redrive_selected", "purge_selected"])
def test_actions_never_touch_live_messages(admin_client: Client, make_queue, action: str):
    q = make_queue().name
    seq = mq.send(q, b"live")
    admin_client.post(URL, {"action": action, "_selected_action": [seq], "post": "yes"})
    assert state_of(seq) == "active"
