"""The Messages and Dead letters pages show every stored row, whatever an older
version stored: a deep or surrogate-holding JSON body, properties no reader could show,
reasons with lone surrogates. Never a 500."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

import django_mqlite as mq
from tests.support.features import requires
from tests.support.legacy_rows import store_raw

URL = "/admin/django_mqlite/message/"
DEAD_URL = "/admin/django_mqlite/deadletter/"
DEEP = b"[" * 100_000 + b"]" * 100_000
LEGACY_BODIES = [
    (DEEP, "application/json"),
    (b'{"x": "\\ud800"}', "application/json"),
    (b'{"x": "\\ud800"}', None),
    (b"NaN", "application/json"),
    (b"\xff\xfe{", "application/json"),
]


@pytest.mark.parametrize(("body", "content_type"), LEGACY_BODIES)
def test_legacy_bodies_render_on_list_and_detail(
    admin_client: Client, make_queue: Any, body: bytes, content_type: str | None
) -> None:
    q = make_queue().name
    seq = store_raw(q, body, content_type)
    listed = admin_client.get(URL)
    assert listed.status_code == 200
    detail = admin_client.get(f"{URL}{seq}/change/")
    assert detail.status_code == 200
    assert 'data-kind="json"' not in detail.content.decode()


@requires("json_text")  # jsonb never held a lone surrogate
def test_legacy_properties_with_lone_surrogates_render(
    admin_client: Client, make_queue: Any
) -> None:
    q = make_queue().name
    seq = store_raw(q, b"x", properties_json='{"x": "\\ud800", "\\udfff": 1}')
    assert admin_client.get(URL).status_code == 200
    assert admin_client.get(f"{URL}{seq}/change/").status_code == 200


def test_a_dead_letter_with_a_surrogate_reason_renders(admin_client: Client, make_queue: Any):
    q = make_queue().name
    seq = mq.send(q, {"a": 1})
    (m,) = mq.receive(q)
    m.reject("why\ud800", "desc\x00")
    assert admin_client.get(DEAD_URL).status_code == 200
    assert admin_client.get(f"{DEAD_URL}{seq}/change/").status_code == 200
