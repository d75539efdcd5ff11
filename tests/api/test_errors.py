"""Malformed requests are 4xx with a stable code, never a 500, and write nothing."""

from __future__ import annotations

from typing import Any

import pytest

import django_mqlite as mq

from .conftest import error, url


@pytest.mark.parametrize(
    "raw",
    [
        b"{",
        b'{"body": NaN}',
        b'{"body": Infinity}',
        b"\xff\xfe",
        b'{"body": "\\ud800"}',
        b"[" * 5000 + b"]" * 5000,
        b'{"body": ' + b"[" * 100 + b"]" * 100 + b"}",
    ],
)
def test_malformed_json(api: Any, q: str, raw: bytes) -> None:
    r = api.post(url(f"queues/{q}/messages/"), raw, content_type="application/json")
    error(r, 400, "invalid_argument")
    assert mq.peek(q) == []


def test_wrong_media_type(api: Any, q: str) -> None:
    r = api.post(url(f"queues/{q}/messages/"), "body=1", content_type="text/plain")
    error(r, 415, "unsupported_media_type")


def test_method_not_allowed(api: Any, q: str) -> None:
    error(api.put(url(f"queues/{q}/"), {}, format="json"), 405, "method_not_allowed")


def test_unknown_route_is_json(api: Any, db: Any) -> None:
    error(api.get(url("nowhere/")), 404, "not_found")


def test_project_exception_handler_is_untouched() -> None:
    from rest_framework.settings import api_settings

    assert api_settings.EXCEPTION_HANDLER.__module__ == "rest_framework.views"
