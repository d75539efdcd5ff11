"""The Messages page: read-only, filters, search, body previews, times as datetimes."""

from __future__ import annotations

import json

from django.test import Client

import django_mqlite as mq
from django_mqlite.models import Queue

URL = "/admin/django_mqlite/message/"


def seqs_listed(client: Client, query: str = "") -> set[int]:
    response = client.get(URL + query)
    assert response.status_code == 200
    return {m.seq for m in response.context["cl"].result_list}


def test_changelist_filters_by_queue_and_state(admin_client: Client, make_queue, dead_letter):
    q1, q2 = make_queue().name, make_queue().name
    dead = dead_letter(q1)
    a = mq.send(q1, b"a")
    b = mq.send(q2, b"b")
    later = mq.send(q2, b"c", delay=60)
    assert seqs_listed(admin_client) == {dead, a, b, later}
    qid = Queue.objects.get(name=q2).pk
    assert seqs_listed(admin_client, f"?queue__id__exact={qid}") == {b, later}
    assert seqs_listed(admin_client, "?state=scheduled") == {later}
    assert seqs_listed(admin_client, "?state=dead_lettered") == {dead}
    assert seqs_listed(admin_client, f"?queue__id__exact={qid}&state=active") == {b}


def test_search_by_message_id_group_id_subject(admin_client: Client, make_queue):
    q = make_queue().name
    a = mq.send(q, b"a", message_id="order-17")
    b = mq.send(q, b"b", group_id="customer-9")
    c = mq.send(q, b"c", subject="invoice.created")
    mq.send(q, b"d")
    assert seqs_listed(admin_client, "?q=order-17") == {a}
    assert seqs_listed(admin_client, "?q=customer-9") == {b}
    assert seqs_listed(admin_client, "?q=invoice") == {c}


def test_body_previews_in_the_list(admin_client: Client, make_queue):
    q = make_queue().name
    mq.send(q, {"order": 17, "items": ["x"]})
    mq.send(q, "plain words")
    mq.send(q, bytes(range(256)) * 4)
    mq.send(q, "x" * 5000)
    html = admin_client.get(URL).content.decode()
    assert "{&quot;order&quot;:17" in html
    assert "plain words" in html
    assert "&lt;binary 1.0 KiB&gt; 00 01 02" in html
    assert "x" * 80 + "…" in html and "x" * 200 not in html


def test_detail_page_is_read_only_and_pretty(admin_client: Client, make_queue, clock):
    q = make_queue().name
    seq = mq.send(q, {"order": 17, "lines": [1, 2]}, subject="s", properties={"k": "v"})
    response = admin_client.get(f"{URL}{seq}/change/")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'data-kind="json"' in html
    assert json.dumps({"order": 17, "lines": [1, 2]}, indent=2).replace('"', "&quot;") in html
    assert 'name="_save"' not in html
    assert admin_client.post(f"{URL}{seq}/change/", {"subject": "x"}).status_code == 403


def test_detail_page_binary_and_large_bodies(admin_client: Client, make_queue):
    q = make_queue().name
    binary = mq.send(q, b"\x00\xffhello\x01" * 100)
    big = mq.send(q, "y" * 100_000)
    html = admin_client.get(f"{URL}{binary}/change/").content.decode()
    assert 'data-kind="binary"' in html and "binary, 800 bytes, truncated" in html
    assert "00ff68656c6c6f01"[:2] in html and "00 ff 68 65 6c 6c 6f 01" in html
    html = admin_client.get(f"{URL}{big}/change/").content.decode()
    assert "text, 97.7 KiB, truncated" in html and "y" * 20_000 not in html


def test_times_are_datetimes(admin_client: Client, make_queue, clock):
    import datetime as dt

    clock.set(dt.datetime(2031, 5, 6, 7, 8, 9, tzinfo=dt.UTC))
    q = make_queue().name
    mq.send(q, b"x")
    html = admin_client.get(URL).content.decode()
    assert "May 6, 2031, 7:08" in html


def test_the_message_page_shows_a_dead_steps_remaining_chain_and_what_waits(
    admin_client: Client, make_queue
):
    q = make_queue(max_delivery_count=1).name
    first = (
        mq.Step(q, {"step": 1})
        .then(mq.Step(q, {"step": "two"}))
        .then(mq.Step(q, {"step": "three"}))
        .send()
    )
    waiting = mq.send(q, b"after", depends_on=[first])
    page = admin_client.get(f"{URL}{waiting}/change/").content.decode()
    assert f"waits for message {first}" in page
    (m,) = [m for m in mq.receive(q, max_messages=5) if m.seq == first]
    m.reject("Bad")
    page = admin_client.get(f"/admin/django_mqlite/deadletter/{first}/change/").content.decode()
    assert "chain step +1" in page and "two" in page
    assert "chain step +2" in page and "three" in page


def test_a_batch_child_others_depend_on_shows_its_batch(admin_client: Client, make_queue):
    """Its row points at its own node; the page names the batch the node counts in."""
    q = make_queue().name
    with mq.batch() as b:
        child = b.send(q, "x")
    mq.send(q, "after", depends_on=[child])
    page = admin_client.get(f"{URL}{child}/change/").content.decode()
    assert f"child of batch {b.id}" in page
