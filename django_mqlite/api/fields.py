"""Serializer fields that take JSON as it is: no quietly turning "5" into 5 or 1 into
True. A wrong type is a 400 ``invalid_argument``, never a coercion."""

from __future__ import annotations

import base64
import binascii
import math
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import SkipField

import django_mqlite as mq


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data: Any) -> int:
        if not isinstance(data, int) or isinstance(data, bool):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    """A number of seconds (integer or decimal), finite."""

    def to_internal_value(self, data: Any) -> float:
        if not isinstance(data, int | float) or isinstance(data, bool):
            self.fail("invalid")
        if not math.isfinite(data):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class StrictCharField(serializers.CharField):
    """A string without NUL characters (which no database column accepts)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        if "\x00" in data:
            raise serializers.ValidationError("must not contain NUL characters")
        return super().to_internal_value(data)


@extend_schema_field({"type": "object", "additionalProperties": True})
class PropertiesField(serializers.Field):
    """A JSON object of application properties; what it may hold is the engine's
    admission (``engine/admission.py``), decided at the send."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise serializers.ValidationError("must be a JSON object")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


_SEQ = {"type": "integer", "minimum": 1}


@extend_schema_field(
    {
        "type": "array",
        "items": {
            "oneOf": [
                _SEQ,
                {
                    "type": "object",
                    "properties": {"queue": {"type": "string"}, "seq": _SEQ},
                    "required": ["queue", "seq"],
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "properties": {"batch": _SEQ},
                    "required": ["batch"],
                    "additionalProperties": False,
                },
            ]
        },
    }
)
class DependsOnField(serializers.Field):
    """``depends_on``: a list whose items are seqs (on the queue's database),
    ``{"queue": name, "seq": n}`` objects and ``{"batch": id}`` objects, translated to
    the Python API's references; what they may name is the engine's rule
    (``engine/dependencies.py``), decided at the send."""

    def to_internal_value(self, data: Any) -> list[Any]:
        if not isinstance(data, list):
            raise serializers.ValidationError("must be a list")
        out: list[Any] = []
        for item in data:
            if _is_int(item):
                out.append(item)
            elif isinstance(item, dict) and set(item) == {"queue", "seq"}:
                if not isinstance(item["queue"], str) or not _is_int(item["seq"]):
                    raise serializers.ValidationError(
                        '{"queue": ..., "seq": ...} takes a queue name and an integer'
                    )
                out.append((item["queue"], item["seq"]))
            elif isinstance(item, dict) and set(item) == {"batch"} and _is_int(item["batch"]):
                out.append(mq.BatchRef(item["batch"]))
            else:
                raise serializers.ValidationError(
                    'each item is a seq, {"queue": name, "seq": n} or {"batch": id}'
                )
        return out

    def to_representation(self, value: Any) -> Any:
        return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@extend_schema_field(OpenApiTypes.ANY)
class AnyJSONField(serializers.Field):
    """Any JSON value, null included."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)

    def validate_empty_values(self, data: Any) -> tuple[bool, Any]:
        if data is None:
            return True, None  # JSON null is a body like any other
        return super().validate_empty_values(data)

    def get_attribute(self, instance: Any) -> Any:
        # Absent is not null: a response without ``body`` (it has ``body_base64``) must
        # not grow a ``"body": null``.
        if isinstance(instance, dict) and self.source not in instance:
            raise SkipField
        return super().get_attribute(instance)

    def to_internal_value(self, data: Any) -> Any:
        return data

    def to_representation(self, value: Any) -> Any:
        return value


@extend_schema_field({"type": "string", "format": "byte"})
class Base64Field(serializers.Field):
    """Bytes as standard base64 text."""

    def to_internal_value(self, data: Any) -> bytes:
        if not isinstance(data, str):
            raise serializers.ValidationError("must be a base64 string")
        try:
            return base64.b64decode(data.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError, ValueError):
            raise serializers.ValidationError("is not valid base64") from None

    def to_representation(self, value: bytes) -> str:
        return base64.b64encode(value).decode("ascii")
