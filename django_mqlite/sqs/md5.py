"""The MD5 digests SQS replies carry, byte for byte as the AWS SDKs compute them."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any

# Transport type bytes of the attribute digest.
_STRING, _BINARY, _STRING_LIST, _BINARY_LIST = 1, 2, 3, 4


def of_body(body: str) -> str:
    return hashlib.md5(body.encode("utf-8"), usedforsecurity=False).hexdigest()


def _put(buf: bytearray, data: bytes) -> None:
    buf += len(data).to_bytes(4, "big")
    buf += data


def of_attributes(attributes: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Digest of message (or message system) attributes in the wire shape
    ``{name: {"DataType", "StringValue" | "BinaryValue" (base64) | ...ListValues}}``:
    names sorted, each name, data type and value length-prefixed (4 bytes, big-endian),
    the value after a transport byte. None when there are none."""
    if not attributes:
        return None
    buf = bytearray()
    for name in sorted(attributes):
        value = attributes[name]
        _put(buf, name.encode("utf-8"))
        _put(buf, str(value["DataType"]).encode("utf-8"))
        if "StringValue" in value:
            buf.append(_STRING)
            _put(buf, value["StringValue"].encode("utf-8"))
        elif "BinaryValue" in value:
            buf.append(_BINARY)
            _put(buf, base64.b64decode(value["BinaryValue"]))
        elif "StringListValues" in value:
            buf.append(_STRING_LIST)
            for item in value["StringListValues"]:
                _put(buf, item.encode("utf-8"))
        else:
            buf.append(_BINARY_LIST)
            for item in value.get("BinaryListValues", []):
                _put(buf, base64.b64decode(item))
    return hashlib.md5(bytes(buf), usedforsecurity=False).hexdigest()
