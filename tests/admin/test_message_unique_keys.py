"""The Messages page and unique keys: the key (and its window) in the list and on the
detail page, a filter by window, and an exact search by key."""

from __future__ import annotations

from django.test import Client

import django_mqlite as mq

URL = "/admin/django_mqlite/message/"


def seqs_listed(client: Client, query: str = "") -> set[int]:
    response = client.get(URL + query)
    assert response.status_code == 200
    return {m.seq for m in response.context["cl"].result_list}


def test_keys_are_shown_filtered_and_searched(admin_client: Client, make_queue) -> None:
    q = make_queue().name
    live = mq.send(q, b"a", unique_key="report-7")
    pending = mq.send(q, b"b", unique_key="index-3", unique_while="pending")
    plain = mq.send(q, b"c")
    html = admin_client.get(URL).content.decode()
    assert "report-7" in html and "index-3 (while pending)" in html
    assert seqs_listed(admin_client, "?unique=live") == {live}
    assert seqs_listed(admin_client, "?unique=pending") == {pending}
    assert seqs_listed(admin_client, "?unique=none") == {plain}
    assert seqs_listed(admin_client, "?q=report-7") == {live}
    assert seqs_listed(admin_client, "?q=index-3") == {pending}
    assert seqs_listed(admin_client, "?q=report") == set()  # exact, as message_id
    detail = admin_client.get(f"{URL}{live}/change/").content.decode()
    assert "unique key" in detail.lower() and "report-7" in detail
