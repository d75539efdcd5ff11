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
