"""The Dead letters page: only dead letters, with why they died and what they carried."""

from __future__ import annotations

import datetime as dt

from django.test import Client

import django_mqlite as mq

URL = "/admin/django_mqlite/deadletter/"

TRACEBACK = """Traceback (most recent call last):
  File "app/consumers.py", line 12, in handle
    charge(order)
ValueError: card declined"""


def test_lists_only_dead_letters_with_their_story(admin_client: Client, make_queue, dead_letter):
    q = make_queue("payments").name
    seq = dead_letter(
        q, {"order": 5}, reason="PaymentFailed", description="card declined twice", error=TRACEBACK
    )
    live = mq.send(q, b"still alive")
    response = admin_client.get(URL)
    assert response.status_code == 200
    assert [m.seq for m in response.context["cl"].result_list] == [seq]
    html = response.content.decode()
    assert "PaymentFailed" in html and "card declined twice" in html
    assert "ValueError: card declined" in html  # the traceback's last line
    assert f">{live}<" not in html


def test_url_is_the_proxy_models(admin_client: Client):
    from django.urls import reverse

    assert reverse("admin:django_mqlite_deadletter_changelist") == URL


def test_detail_shows_traceback_times_and_body(
    admin_client: Client, make_queue, dead_letter, clock
):
    clock.set(dt.datetime(2030, 1, 2, 3, 4, 5, tzinfo=dt.UTC))
    q = make_queue(lock_duration=7200).name
    seq = mq.send(q, "hello text")
    [got] = mq.receive(q)
    clock.advance(3600)
    mq.reject(q, got.seq, got.lock_token or "", "Boom", "it broke", error=TRACEBACK)
    response = admin_client.get(f"{URL}{seq}/change/")
    html = response.content.decode()
    assert response.status_code == 200
    assert '<pre class="mqlite-traceback">' in html and "charge(order)" in html
    assert "Jan. 2, 2030, 3:04" in html and "Jan. 2, 2030, 4:04" in html
    assert 'data-kind="text"' in html and "hello text" in html
    assert "Boom" in html and "it broke" in html


def test_filter_by_queue_and_reason(admin_client: Client, make_queue, dead_letter):
    from django_mqlite.models import Queue

    q1, q2 = make_queue().name, make_queue().name
    a = dead_letter(q1, reason="A")
    b = dead_letter(q1, reason="B")
    c = dead_letter(q2, reason="A")
    qid = Queue.objects.get(name=q1).pk

    def listed(query: str) -> set[int]:
        return {m.seq for m in admin_client.get(URL + query).context["cl"].result_list}

    assert listed("") == {a, b, c}
    assert listed(f"?queue__id__exact={qid}") == {a, b}
    assert listed("?dead_letter_reason=A") == {a, c}
