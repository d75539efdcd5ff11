"""The Queues page: settings, gauges per state, oldest active age, DLQ actions."""

from __future__ import annotations

import re

from django.contrib.messages import get_messages
from django.test import Client

import django_mqlite as mq
from django_mqlite.models import Queue

from .conftest import action_post, state_of

URL = "/admin/django_mqlite/queue/"


def gauge(html: str, queue: str, state: str) -> str:
    m = re.search(rf'data-queue="{queue}" data-state="{state}">([^<]*)<', html)
    assert m, (queue, state)
    return m.group(1)


def test_changelist_shows_gauges_per_state(admin_client: Client, make_queue, dead_letter, clock):
    q = make_queue("billing", lock_duration=90).name
    dead_letter(q)
    mq.send(q, b"a")
    mq.send(q, b"b", delay=60)
    clock.advance(125)
    html = admin_client.get(URL).content.decode()
    assert gauge(html, q, "active") == "1"
    assert gauge(html, q, "scheduled") == "1"
    assert gauge(html, q, "dead_lettered") == "1"
    assert gauge(html, q, "locked") == "0"
    assert "2m 5s" in html  # oldest active age
    assert "1m 30s" in html  # lock duration, humanized


def test_detail_page_shows_settings_and_exact_stats(admin_client: Client, make_queue, dead_letter):
    q = make_queue("reports", default_ttl=3600, dedup_window=0, max_delivery_count=3).name
    dead_letter(q)
    pk = Queue.objects.get(name=q).pk
    response = admin_client.get(f"{URL}{pk}/change/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "1h" in html and "off" in html and "30s" in html
    assert 'class="mqlite-count" data-state="dead_lettered">1<' in html
    assert "rejected" in html  # lifetime totals
    assert 'name="_save"' not in html  # read-only


def test_redrive_dlq_action(admin_client: Client, make_queue, dead_letter):
    q = make_queue().name
    seqs = [dead_letter(q) for _ in range(2)]
    pk = Queue.objects.get(name=q).pk
    response = admin_client.post(URL, action_post("redrive_queue_dlq", [pk]), follow=True)
    assert "Redrove 2 dead letters." in [str(m) for m in get_messages(response.wsgi_request)]
    assert [state_of(s) for s in seqs] == ["active", "active"]


def test_purge_dlq_action_confirms_first(admin_client: Client, make_queue, dead_letter):
    q = make_queue().name
    seq = dead_letter(q)
    live = mq.send(q, b"live")
    pk = Queue.objects.get(name=q).pk
    page = admin_client.post(URL, action_post("purge_queue_dlq", [pk]))
    assert page.status_code == 200 and "Are you sure?" in page.content.decode()
    assert state_of(seq) == "dead_lettered"
    response = admin_client.post(
        URL, {"action": "purge_queue_dlq", "_selected_action": [pk], "post": "yes"}, follow=True
    )
    assert "Purged 1 dead letter." in [str(m) for m in get_messages(response.wsgi_request)]
    assert state_of(seq) is None and state_of(live) == "active"
