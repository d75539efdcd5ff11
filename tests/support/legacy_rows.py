"""Rows as an older version could have stored them, written past admission with raw
SQL, and property shapes it admitted, for the tests of total rendering (every reader
shows them, none fails)."""

from __future__ import annotations

from typing import Any

from django.db import connection

import django_mqlite as mq

#: Properties an HTTP producer could store before admission checked attribute shapes:
#: the HTTP API refuses them now, every reader still renders them.
BAD_ATTRIBUTE_SHAPES = [
    {"DataType": "String", "StringValue": 123},
    {"DataType": "Binary", "BinaryValue": "%%% not base64"},
    {"DataType": "String", "StringListValues": [1, 2]},
]


def store_raw(
    queue: str,
    body: bytes,
    content_type: str | None = None,
    *,
    properties_json: str | None = None,
    **options: Any,
) -> int:
    """Send a placeholder, then overwrite its body, content type and (as JSON text)
    properties in place; returns the seq."""
    seq = mq.send(queue, b"placeholder", **options)
    props_sql = "%s::jsonb" if connection.vendor == "postgresql" else "%s"
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE mqlite_message SET body = %s, content_type = %s, properties = {props_sql} "
            "WHERE seq = %s",
            [body, content_type, properties_json, seq],
        )
    return seq
