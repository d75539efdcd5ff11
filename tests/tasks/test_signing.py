"""The envelope signature itself (``tasks.signing``), without a worker: the exact bytes it
covers (a format change would refuse every envelope in flight across a deploy), which
field of an envelope lands where, and what ``verify`` refuses without raising."""

from __future__ import annotations

import math
from typing import Any

import pytest
from django.test import override_settings
from django.utils.crypto import salted_hmac

from django_mqlite.tasks import signing

FIELDS: dict[str, Any] = {
    "queue": "q",
    "backend": "b",
    "task": "t.f",
    "args": [1, "é"],
    "kwargs": {"z": 1, "a": [True, None]},
    "run_after": 5,
    "timeout": 2.5,
    "priority": -3,
}


def test_the_payload_is_the_versioned_canonical_json_of_the_fields_in_order() -> None:
    assert signing.payload(**FIELDS) == (
        b'mqlite-task-envelope-v1\n["q","b","t.f",[1,"\\u00e9"],{"a":[true,null],"z":1},5,2.5,-3]'
    )


@pytest.mark.parametrize("field", list(FIELDS))
def test_each_field_changes_the_payload(field: str) -> None:
    changed = {**FIELDS, field: 7 if FIELDS[field] != 7 else 8}
    assert signing.payload(**changed) != signing.payload(**FIELDS)


def test_a_value_json_cannot_hold_cannot_be_signed() -> None:
    with pytest.raises(ValueError):
        signing.payload(**{**FIELDS, "args": [math.nan]})


def test_the_envelope_payload_takes_each_field_from_its_key() -> None:
    body = {k: v for k, v in FIELDS.items() if k not in ("timeout", "priority")}
    body["signature"] = "ignored"
    assert signing.envelope_payload(body, timeout=2.5, priority=-3) == signing.payload(**FIELDS)
    # A missing field is null, not an error: the shape is checked once it verified.
    assert signing.envelope_payload({}, timeout=None, priority=0) == (
        b"mqlite-task-envelope-v1\n[null,null,null,null,null,null,null,0]"
    )


def test_seal_adds_the_signature_of_the_envelope_payload() -> None:
    body = {k: v for k, v in FIELDS.items() if k not in ("timeout", "priority")}
    sealed = signing.seal(dict(body), timeout=2.5, priority=-3)
    assert sealed == {**body, "signature": signing.sign(signing.payload(**FIELDS))}
    assert signing.verify(signing.payload(**FIELDS), sealed["signature"])


def test_the_signature_is_salted_hmac_sha256_hex() -> None:
    data = b"any payload"
    expected = salted_hmac(signing.SALT, data, algorithm="sha256").hexdigest()
    assert signing.sign(data) == expected
    assert signing.SALT == "django_mqlite.tasks.envelope"
    # A bytes secret derives the same key as its text.
    assert signing._derive(b"secret") == signing._derive("secret")


def test_verify_accepts_the_current_key_and_each_fallback_only() -> None:
    data = b"payload"
    with override_settings(SECRET_KEY="old-" + "o" * 50):
        old = signing.sign(data)
    with override_settings(SECRET_KEY="older-" + "p" * 50):
        older = signing.sign(data)
    with override_settings(
        SECRET_KEY="new-" + "n" * 50, SECRET_KEY_FALLBACKS=["x-" + "x" * 50, "old-" + "o" * 50]
    ):
        assert signing.verify(data, signing.sign(data))
        assert signing.verify(data, old)  # the second fallback, not only the first
        assert not signing.verify(data, older)
        assert not signing.verify(data + b"!", old)
        assert signing.keys()[0] == signing._derive("new-" + "n" * 50)
        assert len(signing.keys()) == 3


@pytest.mark.parametrize(
    "bad",
    [None, 5, b"0" * 64, "", "0" * 63, "0" * 65, "é" * 64, "\uff10" * 64],
    ids=["none", "int", "bytes", "empty", "short", "long", "non-ascii", "wide-digits"],
)
def test_verify_refuses_what_is_not_a_signature_without_raising(bad: Any) -> None:
    assert signing.verify(b"payload", bad) is False


def test_a_signature_in_upper_case_hex_is_not_the_signature() -> None:
    good = signing.sign(b"payload")
    assert signing.verify(b"payload", good)
    assert good != good.upper()
    assert not signing.verify(b"payload", good.upper())
