"""What every reader can show: strict JSON, and ``body_view``, the one rule every
reading surface (Python peek tools, HTTP receive and peek, the admin, the CLI) uses to
decide whether a body is shown as JSON, as text, or as bytes (base64, a hex dump).

Admission (``admission``) stores a body labelled JSON only when ``strict_loads`` accepts
it, so for admitted rows ``body_view`` of a JSON body is always ``"json"``; for rows older
versions stored without that rule it falls back to bytes, and never raises.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from typing import Any

#: Nesting depth a JSON body may have (JSON's own arrays and objects, counted from 1).
MAX_JSON_DEPTH = 64
JSON_TYPE = "application/json"

# Deletes every ASCII character but brackets and quotes (outside its strings, JSON text
# is ASCII; what is left inside strings is dropped with them).
_STRUCTURE = str.maketrans("", "", "".join(chr(c) for c in range(128) if chr(c) not in '[]{}"'))
_HUGE_NUMBER = re.compile(r"[eE][+]?0*[1-9][0-9]{2}|[0-9]{300}")

# -- content types --------------------------------------------------------------------


def media_type(content_type: str | None) -> tuple[str, dict[str, str]]:
    """``"Application/JSON; charset=UTF-8"`` → ``("application/json", {"charset": "utf-8"})``."""
    if not content_type:
        return "", {}
    main, *params = content_type.split(";")
    pairs = (p.split("=", 1) for p in params if "=" in p)
    return main.strip().lower(), {k.strip().lower(): v.strip().strip('"').lower() for k, v in pairs}


@functools.lru_cache(maxsize=256)  # a process sees few content types; sends are hot
def is_json_type(content_type: str | None) -> bool:
    media = media_type(content_type)[0]
    return media == JSON_TYPE or media.endswith("+json")


@functools.lru_cache(maxsize=256)
def is_text_type(content_type: str | None) -> bool:
    media, params = media_type(content_type)
    return media.startswith("text/") and params.get("charset", "utf-8") in (
        "utf-8",
        "utf8",
        "us-ascii",
    )


# -- strict JSON ------------------------------------------------------------------------


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range")
    return value


# Built once: ``json.loads`` with hooks builds a decoder per call.
_DECODER = json.JSONDecoder(parse_constant=_no_constant)
_FINITE_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)


def unicode_ok(text: str) -> bool:
    """Whether ``text`` encodes to UTF-8 (no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _nul_problem(value: Any) -> str | None:
    """Whether a string (or key) anywhere in ``value`` holds a NUL. Iterative."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return "holds a NUL character"
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def too_deep(text: str, max_depth: int) -> bool:
    """Whether the JSON ``text`` nests arrays and objects deeper than ``max_depth``.
    At C speed (string methods only): strings removed, only brackets kept, then each
    pass removes every innermost pair, so the number of passes is the depth (at most
    ``max_depth``). ``tests/engine/test_admission.py`` checks it against a tree walk."""
    if text.count("[") + text.count("{") <= max_depth:
        return False
    # All at C speed: drop escaped backslashes, then escaped quotes (left to right, as
    # JSON pairs them), keep only brackets and quotes, and join what lies outside quotes.
    # Quotes alternate open and close, so dropping adjacent pairs keeps every bracket
    # that was inside a string inside one (most strings hold none and vanish here).
    bare = text.replace("\\\\", "").replace('\\"', "").translate(_STRUCTURE)
    bare = bare.replace('""', "")
    brackets = "".join(bare.split('"')[::2]) if '"' in bare else bare
    for _ in range(max_depth):
        # One level: every innermost pair at once (a pair around a marker is not one).
        brackets = brackets.replace("[]", "\x00").replace("{}", "\x00").replace("\x00", "")
        if not brackets:
            return False
    return True


def text_problem(text: str, value: Any, max_depth: int, *, nul: bool) -> str | None:
    """Why ``value``, encoded or parsed as the JSON ``text``, is not storable: nested
    deeper than ``max_depth``, holding a string that is not valid Unicode (a lone
    surrogate), or (``nul``) holding a NUL; else None. The common case costs a few
    substring scans: the slower checks run only when the text shows they could fail."""
    if too_deep(text, max_depth):
        return f"is nested deeper than {max_depth} levels"
    if ("\\ud" in text or "\\uD" in text) and not unicode_ok(json.dumps(value, ensure_ascii=False)):
        return "holds a lone surrogate (not valid Unicode)"
    if nul and ("\\u0000" in text or "\x00" in text):
        return _nul_problem(value)
    return None


def strict_loads(text: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse standard JSON that every reader can show: ValueError for anything else
    (``NaN``, an overflowing number, a lone surrogate, nesting deeper than ``max_depth``)."""
    if not text.isascii() and not unicode_ok(text):
        raise ValueError("holds a lone surrogate (not valid Unicode)")
    # Only a number with a large exponent or mantissa can overflow a float: the others
    # parse without a Python call per number.
    decoder = _FINITE_DECODER if _HUGE_NUMBER.search(text) else _DECODER
    try:
        value = decoder.decode(text)
    except RecursionError:
        raise ValueError("is nested too deeply") from None
    problem = text_problem(text, value, max_depth, nul=False)
    if problem is not None:
        raise ValueError(problem)
    return value


def json_body_problem(data: bytes) -> str | None:
    try:
        strict_loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return str(exc)
    return None


# -- reading: total rendering -----------------------------------------------------------


@dataclass(frozen=True)
class BodyView:
    """How a reader shows a body. ``kind`` is ``"json"`` (``value`` is the parsed
    value), ``"text"`` (``value`` is the decoded string) or ``"binary"`` (show the
    bytes, e.g. as base64; ``value`` is None)."""

    kind: str
    value: Any = None


def body_view(data: bytes, content_type: str | None) -> BodyView:
    """The one rule every reading surface uses to show a body: as JSON when it is
    labelled JSON and is JSON that admission would accept (so any reader can render it),
    as text when it is labelled ``text/*`` in UTF-8 and decodes, else as bytes. Total:
    never raises, whatever older versions stored."""
    if is_json_type(content_type):
        try:
            return BodyView("json", strict_loads(data.decode("utf-8")))
        except (UnicodeDecodeError, ValueError):
            return BodyView("binary")
    if is_text_type(content_type):
        try:
            return BodyView("text", data.decode("utf-8"))
        except UnicodeDecodeError:
            pass
    return BodyView("binary")
