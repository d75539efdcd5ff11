"""The Topics page: topics with their subscriptions and filters, read-only."""

from __future__ import annotations

from typing import Any

from django.test import Client

import django_mqlite as mq
from django_mqlite.models import Topic

URL = "/admin/django_mqlite/topic/"


def test_the_topics_page_shows_subscriptions_and_filters(admin_client: Client, db: Any) -> None:
    mq.create_queue("billing")
    mq.create_queue("audit")
    mq.create_topic("orders")
    mq.subscribe("orders", "billing", {"subject": "<paid>"})
    mq.subscribe("orders", "audit")
    html = admin_client.get(URL).content.decode()
    assert "orders" in html
    assert "<code>billing</code>: {&quot;subject&quot;: &quot;&lt;paid&gt;&quot;}" in html
    assert "<code>audit</code>: every message" in html
    pk = Topic.objects.get(name="orders").pk
    assert admin_client.get(f"{URL}{pk}/change/").status_code == 200
    assert admin_client.get(f"{URL}add/").status_code == 403
    assert admin_client.post(f"{URL}{pk}/delete/", {"post": "yes"}).status_code == 403
    assert Topic.objects.filter(name="orders").exists()


def test_the_filter_test_form(admin_client: Client, db: Any) -> None:
    mq.create_queue("billing")
    mq.create_queue("audit")
    mq.create_topic("orders")
    mq.subscribe("orders", "billing", {"subject": "paid", "properties.total": {"gte": 100}})
    mq.subscribe("orders", "audit")
    pk = Topic.objects.get(name="orders").pk
    page = f"{URL}{pk}/change/"
    html = admin_client.get(page).content.decode()
    assert "Test the filters against a message" in html and "gets a copy" not in html
    got = admin_client.get(
        page, {"mq_subject": "paid", "mq_properties": '{"total": 120}', "mq_test": "Test"}
    ).content.decode()
    assert "<td><code>billing</code></td><td>yes</td>" in got
    assert "<td><code>audit</code></td><td>yes</td>" in got
    got = admin_client.get(
        page, {"mq_subject": "paid", "mq_properties": '{"total": "120"}', "mq_test": "Test"}
    ).content.decode()
    assert "<td><code>billing</code></td><td>no</td>" in got
    for bad, says in (("{", "not JSON"), ("[1]", "properties must be a dict")):
        r = admin_client.get(page, {"mq_properties": bad, "mq_test": "Test"})
        assert r.status_code == 200 and says in r.content.decode()
    r = admin_client.get(page, {"mq_subject": "a\x00", "mq_test": "Test"})
    assert r.status_code == 200 and "errornote" in r.content.decode()
    assert mq.peek("billing") == [] and mq.peek("audit") == []  # a test writes nothing


def test_the_filter_test_needs_the_view_permission(client: Client, db: Any) -> None:
    from django.contrib.auth.models import Permission, User

    mq.create_topic("orders")
    pk = Topic.objects.get(name="orders").pk
    staff = User.objects.create_user("staff", password="x", is_staff=True)
    client.force_login(staff)
    page = f"{URL}{pk}/change/"
    assert client.get(page, {"mq_test": "Test"}).status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="view_topic"))
    assert client.get(page, {"mq_test": "Test"}).status_code == 200
