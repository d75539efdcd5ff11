"""Message attributes: checked on the way in, kept in the message's ``properties``, and
turned back into SQS attributes on the way out (native properties included).

A ``String`` attribute is kept as a plain string property, so native consumers read
``msg.properties["name"]``; every other type keeps its SQS shape (binary values in
base64). The AWS trace header, a system attribute, is kept under ``AWS.TraceHeader``: SQS
reserves the ``AWS.`` prefix, so no message attribute can collide with it.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import django_mqlite as mq

from ..errors import SQSError, invalid

MAX_ATTRIBUTES = 10
TRACE_KEY = "AWS.TraceHeader"
_NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,256}")
_TYPE_RE = re.compile(r"(String|Number|Binary)(\..{1,240})?")
_VALUE_KEYS = mq.admission.ATTRIBUTE_VALUE_KEYS


def _check_name(name: object) -> None:
    if not isinstance(name, str):
        raise invalid("Message attribute names must be strings.")
    lowered = name.lower()
    if (
        not _NAME_RE.fullmatch(name)
        or ".." in name
        or name.startswith(".")
        or name.endswith(".")
        or lowered.startswith(("aws.", "amazon."))
    ):
        raise invalid(
            f"The message attribute name '{name}' is invalid. Attribute name can contain "
            "A-Z, a-z, 0-9, underscore (_), hyphen (-), and period (.) characters."
        )


def check(attributes: Any) -> dict[str, dict[str, Any]]:
    """Validated attributes in the wire shape (only the keys that carry meaning)."""
    if not attributes:
        return {}
    if not isinstance(attributes, dict):
        raise invalid("MessageAttributes must be a map.")
    if len(attributes) > MAX_ATTRIBUTES:
        raise invalid(
            f"Number of message attributes [{len(attributes)}] exceeds the allowed "
            f"maximum [{MAX_ATTRIBUTES}]."
        )
    out: dict[str, dict[str, Any]] = {}
    for name, value in attributes.items():
        _check_name(name)
        out[name] = _check_value(name, value)
    return out


def _check_value(name: str, value: Any) -> dict[str, Any]:
    """The wire shape of one attribute (a map with a ``DataType`` and the value its type
    carries); whether the value is valid is the engine's rule (``attribute_problem``),
    the same one that admits attribute-shaped properties from any other surface."""
    if not isinstance(value, dict):
        raise invalid(f"The message attribute '{name}' must be a map.")
    dtype = value.get("DataType")
    if not isinstance(dtype, str) or not _TYPE_RE.fullmatch(dtype):
        raise invalid(
            f"The message attribute '{name}' has an invalid message attribute type, the set "
            "of supported type prefixes is Binary, Number, and String."
        )
    key = "BinaryValue" if dtype.startswith("Binary") else "StringValue"
    raw = value.get(key)
    if not isinstance(raw, str) or not raw:
        raise invalid(f"The message attribute '{name}' must contain a non-empty value.")
    shape = {"DataType": dtype, key: raw}
    problem = mq.admission.attribute_problem(shape)
    if problem is not None and dtype.startswith("Number"):
        raise invalid(f"Can't cast the value of message attribute '{name}' to a number.")
    if problem is not None:
        raise invalid(f"The message attribute '{name}' is invalid: {problem}.")
    return shape


def size(attributes: dict[str, dict[str, Any]]) -> int:
    """Bytes the attributes count towards the message size (name, type and value)."""
    total = 0
    for name, value in attributes.items():
        total += len(name.encode()) + len(value["DataType"].encode())
        if "BinaryValue" in value:
            total += len(base64.b64decode(value["BinaryValue"]))
        else:
            total += len(value["StringValue"].encode())
    return total


def to_properties(
    attributes: dict[str, dict[str, Any]], trace_header: str | None
) -> dict[str, Any] | None:
    props: dict[str, Any] = {}
    for name, value in attributes.items():
        plain = value["DataType"] == "String" and "StringValue" in value
        props[name] = value["StringValue"] if plain else value
    if trace_header is not None:
        props[TRACE_KEY] = trace_header
    return props or None


def from_properties(props: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every message attribute a message's properties stand for. Total: properties
    stored before admission checked attribute shapes render too (as ``String`` JSON), and
    a name that is not valid Unicode is left out."""
    out: dict[str, dict[str, Any]] = {}
    for name, value in props.items():
        if name.startswith("AWS."):
            continue
        if isinstance(value, str) and mq.admission.unicode_ok(value):
            out[name] = {"DataType": "String", "StringValue": value}
        elif isinstance(value, bool):
            out[name] = {"DataType": "String", "StringValue": "true" if value else "false"}
        elif isinstance(value, int | float):
            out[name] = {"DataType": "Number", "StringValue": str(value)}
        elif (
            isinstance(value, dict)
            and mq.admission.is_attribute_shaped(value)
            and mq.admission.attribute_problem(value) is None
        ):
            out[name] = {k: v for k, v in value.items() if k == "DataType" or k in _VALUE_KEYS}
        else:
            # Anything else (an invalid attribute shape an older version stored included)
            # is its JSON, ASCII-escaped: every value renders, none fails the receive.
            out[name] = {"DataType": "String", "StringValue": json.dumps(value)}
    return {k: v for k, v in out.items() if mq.admission.unicode_ok(k)}


#: ``MessageAttributeNames`` entries that ask for every attribute.
EVERY = frozenset({"All", ".*", "*"})


def select(attributes: dict[str, dict[str, Any]], names: list[str]) -> dict[str, dict[str, Any]]:
    """The attributes ``MessageAttributeNames`` asks for: ``All``, ``.*`` or ``*`` for
    every one, ``prefix.*`` for every name that starts with ``prefix`` (``Hel.*`` takes
    ``Hello`` and ``Help.Me``, as SQS does), otherwise exact names."""
    if not names:
        return {}
    if EVERY.intersection(names):
        return attributes
    exact = {n for n in names if not n.endswith(".*")}
    prefixes = tuple(n[:-2] for n in names if n.endswith(".*"))
    return {
        k: v for k, v in attributes.items() if k in exact or (prefixes and k.startswith(prefixes))
    }


def trace_header(system: Any) -> str | None:
    """The ``AWSTraceHeader`` of ``MessageSystemAttributes`` (the only one SQS accepts)."""
    if not system:
        return None
    if not isinstance(system, dict) or set(system) != {"AWSTraceHeader"}:
        raise SQSError(
            "InvalidParameterValue", "AWSTraceHeader is the only message system attribute."
        )
    value = _check_value("AWSTraceHeader", system["AWSTraceHeader"])
    if value["DataType"] != "String":
        raise invalid("AWSTraceHeader must be a String.")
    return str(value["StringValue"])
