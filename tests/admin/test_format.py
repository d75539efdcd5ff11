"""The admin's formatting helpers (no database)."""

from __future__ import annotations

import pytest

from django_mqlite.admin import format


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (None, "—"),
        (-1, "unbounded"),
        (250, "250ms"),
        (1500, "1.5s"),
        (30_000, "30s"),
        (90_000, "1m 30s"),
        (3_600_000, "1h"),
        (86_400_000 + 7_200_000 + 5_000, "1d 2h"),
    ],
)
def test_duration(ms, text):
    assert format.duration(ms) == text


def test_body_summary_kinds():
    assert format.body_summary(b'{"a": 1}', 8, "application/json") == '{"a": 1}'
    assert format.body_summary(b"\x00\x01\x02", 3, None).startswith("<binary 3 bytes> 00 01 02")
    assert format.body_summary(b"abc", 5000, "text/plain").endswith("…")


def test_body_detail_pretty_json_text_and_hex():
    assert 'data-kind="json"' in format.body_detail(b'{"a":[1,2]}', None)
    assert 'data-kind="text"' in format.body_detail("héllo".encode(), None)
    binary = format.body_detail(bytes(range(256)) * 8, "application/octet-stream")
    assert 'data-kind="binary"' in binary and "2.0 KiB, truncated" in binary
