"""``mqlite send`` under the engine's admission (a CommandError, nothing written) and
``mqlite peek`` rendering whatever is stored, by the rule every reader shares."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from django.core.management.base import CommandError

import django_mqlite as mq
from tests.support.cli_helpers import mqlite, mqlite_json
from tests.support.legacy_rows import store_raw

pytestmark = pytest.mark.django_db

DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.mark.parametrize(
    "args",
    [
        ["--json-body", "[" * 100_000 + "]" * 100_000],
        ["--json-body", '{"x": "\\ud800"}'],
        ["--json-body", "[NaN]"],
        ["--content-type", "application/json", '{"x": "\\ud800"}'],
        ["not\udcffutf8"],  # an argv byte that is not UTF-8, as Python decodes it
        ["--subject", "a\x00b", "x"],
    ],
    ids=["deep", "surrogate", "nan", "labelled", "argv-surrogate", "nul"],
)
def test_send_refuses_what_no_reader_could_render(q: str, args: list[str]) -> None:
    with pytest.raises(CommandError):
        mqlite("send", q, *args)
    assert mq.peek(q) == []


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (DEEP, "application/json"),
        (b'{"x": "\\ud800"}', "application/json"),
        (b"\x1b[2J\x00 text", "text/plain"),
        (b"\xff\xfe", None),
    ],
    ids=["deep", "surrogate", "control", "binary"],
)
def test_peek_renders_every_stored_body(q: str, body: bytes, content_type: Any) -> None:
    store_raw(q, body, content_type)
    table = mqlite("peek", q)
    table.encode("utf-8")
    assert "\x1b" not in table and "\x00" not in table
    (m,) = mqlite_json("peek", q)
    if "body_base64" in m:
        assert base64.b64decode(m["body_base64"]) == body
    else:
        assert m["body"] == body.decode()


def test_peek_json_shows_json_bodies_as_values(q: str) -> None:
    mq.send(q, {"a": [1, "é"]})
    (m,) = mqlite_json("peek", q)
    assert m["body"] == {"a": [1, "é"]} and "body_base64" not in m
