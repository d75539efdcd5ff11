"""Pausing and resuming queues from the admin, under the dedicated pause_queue
permission; the queues page shows the pause state and the limits."""

from __future__ import annotations

from django.test import Client

import django_mqlite as mq
from django_mqlite.models import Queue

from .conftest import action_post

QUEUES = "/admin/django_mqlite/queue/"


def _pk(name: str) -> int:
    return int(Queue.objects.get(name=name).pk)


def _offered(client: Client) -> set[str]:
    html = client.get(QUEUES).content.decode()
    return {a for a in ("pause_queues", "resume_queues") if f'value="{a}"' in html}


def test_pause_and_resume_actions(staff_client, make_queue) -> None:
    a, b = make_queue("a"), make_queue("b")
    client = staff_client("pause_queue")
    assert _offered(client) == {"pause_queues", "resume_queues"}
    r = client.post(QUEUES, action_post("pause_queues", [_pk(a.name), _pk(b.name)]), follow=True)
    assert "2 queues paused." in r.content.decode()
    assert mq.get_queue("a").paused and mq.get_queue("b").paused
    r = client.post(QUEUES, action_post("resume_queues", [_pk("a")]), follow=True)
    assert "1 queue resumed." in r.content.decode()
    assert not mq.get_queue("a").paused and mq.get_queue("b").paused


def test_without_the_permission_nothing_is_offered_or_changed(staff_client, make_queue) -> None:
    make_queue("a")
    client = staff_client("redrive_message", "purge_message")
    assert _offered(client) == set()
    client.post(QUEUES, action_post("pause_queues", [_pk("a")]))
    assert not mq.get_queue("a").paused
    mq.pause_queue("a")
    client.post(QUEUES, action_post("resume_queues", [_pk("a")]))
    assert mq.get_queue("a").paused


def test_queues_page_shows_pause_and_limits(admin_client: Client, make_queue) -> None:
    make_queue("lim", rate_limit=2.5, max_in_flight=40)
    make_queue("plain")
    mq.pause_queue("lim")
    html = admin_client.get(QUEUES).content.decode()
    assert "2.5/s" in html and ">40<" in html and "unlimited" in html
    assert 'alt="True"' in html and 'alt="False"' in html  # the paused column's icons
    detail = admin_client.get(f"{QUEUES}{_pk('lim')}/change/").content.decode()
    assert "2.5/s" in detail and "rate limit" in detail.lower()
    filtered = admin_client.get(QUEUES + "?paused__exact=1").content.decode()
    assert ">lim<" in filtered and ">plain<" not in filtered
