"""SQS message attributes kept in a message's properties: which property values the
SQS endpoint renders as typed attributes, and when such a value is a valid one.

The SQS endpoint keeps a ``String`` attribute as a plain string property and every other
attribute in its SQS shape (``{"DataType": ..., "StringValue" | "BinaryValue" | ...}``);
a property of that shape written from another surface (HTTP, Python) is rendered the same
way, so admission refuses one that is not a valid attribute (``attribute_problem``)
instead of letting every SQS ``ReceiveMessage`` that claims it fail.
"""

from __future__ import annotations

import base64
import binascii
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from .rendering import unicode_ok

_ATTRIBUTE_TYPE = re.compile(r"(String|Number|Binary)(\..{1,240})?", re.DOTALL)
ATTRIBUTE_VALUE_KEYS = ("StringValue", "BinaryValue", "StringListValues", "BinaryListValues")


def is_attribute_shaped(value: dict[str, Any]) -> bool:
    """Whether the SQS endpoint renders this property value as a typed message
    attribute (a ``DataType`` and at least one value key); other values are rendered as
    ``String`` attributes holding their JSON."""
    return "DataType" in value and any(k in value for k in ATTRIBUTE_VALUE_KEYS)


def _base64_ok(raw: Any) -> bool:
    if not isinstance(raw, str) or not raw:
        return False
    try:
        base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def attribute_problem(value: dict[str, Any]) -> str | None:
    """Why an attribute-shaped property is not a valid SQS message attribute, or None.
    Valid: ``DataType`` is ``String``, ``Number`` or ``Binary`` (with an optional
    ``.label``), exactly one value key, and a value of that type: a non-empty string
    (a decimal number for ``Number``), base64 for ``Binary``, or a list of those."""
    dtype = value.get("DataType")
    if not isinstance(dtype, str) or not _ATTRIBUTE_TYPE.fullmatch(dtype) or not unicode_ok(dtype):
        return "its DataType is not String, Number or Binary"
    keys = [k for k in ATTRIBUTE_VALUE_KEYS if k in value]
    if len(keys) != 1:
        return f"it has {len(keys)} value keys, not one"
    key = keys[0]
    binary = dtype.startswith("Binary")
    if binary != key.startswith("Binary"):
        return f"a {dtype} attribute cannot carry {key}"
    items = value[key] if key.endswith("ListValues") else [value[key]]
    if not isinstance(items, list):
        return f"{key} is not a list"
    for item in items:
        if binary and not _base64_ok(item):
            return f"{key} is not valid base64"
        if not binary and (not isinstance(item, str) or not item or not unicode_ok(item)):
            return f"{key} is not a non-empty string"
        if dtype.startswith("Number") and not _number_ok(item):
            return f"{key} is not a number"
    return None


def _number_ok(raw: str) -> bool:
    """An SQS number: finite, at most 256 characters, from 10^-128 to 10^+126."""
    if len(raw) > 256:
        return False
    try:
        number = Decimal(raw)
    except InvalidOperation:
        return False
    return number.is_finite() and (not number or -128 <= number.adjusted() <= 126)
