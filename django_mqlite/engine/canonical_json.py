"""Canonical JSON, the one encoding of every JSON value the engine stores (properties,
results, attempts, receipts): sorted keys, no spaces, no NaN or infinities."""

from __future__ import annotations

import json
from typing import Any

from ..exceptions import InvalidArgumentError

#: The one encoder, made once: ``json.dumps`` with these options builds an encoder on
#: every call, a third of the cost of encoding a small value (an attempt, a receipt).
#: It holds no state between calls, so threads share it.
_ENCODER = json.JSONEncoder(separators=(",", ":"), sort_keys=True, allow_nan=False)


def dumps(value: Any) -> str:
    """Canonical JSON; NaN and infinities raise ValueError (no column or client takes
    them back)."""
    return _ENCODER.encode(value)


def dumps_arg(value: Any, what: str) -> str | None:
    """``dumps`` of a caller's value (None stays None): a value JSON cannot hold, or
    cannot hold canonically (dict keys of mixed types), is an InvalidArgumentError."""
    if value is None:
        return None
    try:
        return dumps(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidArgumentError(f"{what} is not JSON: {exc}") from None
