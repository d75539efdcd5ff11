"""The engine's admission and rendering rules, for the surfaces that translate to them
(the HTTP API, the SQS endpoint, the admin, the CLI). The rules themselves, and why they
hold, are in ``engine/admission.py``, ``engine/rendering.py`` and ``engine/attributes.py``;
this module only names what a surface may use, so that none keeps a copy of its own."""

from __future__ import annotations

from .engine.admission import (
    MAX_PROPERTIES_BYTES,
    MAX_PROPERTIES_DEPTH,
    MAX_UNIQUE_KEY,
    ON_CONFLICT,
    UNIQUE_WHILE,
    check_message,
    diagnostic,
    result_json,
)
from .engine.attributes import ATTRIBUTE_VALUE_KEYS, attribute_problem, is_attribute_shaped
from .engine.rendering import (
    MAX_JSON_DEPTH,
    BodyView,
    body_view,
    strict_loads,
    too_deep,
    unicode_ok,
)

__all__ = [
    "ATTRIBUTE_VALUE_KEYS",
    "MAX_JSON_DEPTH",
    "MAX_PROPERTIES_BYTES",
    "MAX_PROPERTIES_DEPTH",
    "MAX_UNIQUE_KEY",
    "ON_CONFLICT",
    "UNIQUE_WHILE",
    "BodyView",
    "attribute_problem",
    "body_view",
    "check_message",
    "diagnostic",
    "is_attribute_shaped",
    "result_json",
    "strict_loads",
    "too_deep",
    "unicode_ok",
]
