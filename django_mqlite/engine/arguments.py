"""Argument checks for the engine's verbs: queue names, durations, lease lengths, integers,
keys, seqs and lock tokens, with the limits they enforce. Each check returns the value in
the engine's units (durations as whole milliseconds) or raises ``InvalidArgumentError``."""

from __future__ import annotations

import datetime as dt
import math
import re

from ..exceptions import InvalidArgumentError

QUEUE_NAME_RE = re.compile(r"[A-Za-z0-9._-]{1,80}")
#: The longest lease a claim or renewal may ask for (as SQS allows): a longer one would
#: hide a message from every consumer for that long after its holder died.
MAX_LOCK_MS = 12 * 3600 * 1000
#: The furthest ahead a message may be scheduled, and the longest duration accepted.
MAX_DURATION_S = 10 * 365 * 86400
MAX_RECEIVE = 256
MAX_PEEK = 1000
MAX_WAIT_S = 20.0
MAX_KEY_LEN = 128
PRIORITY_RANGE = (-32768, 32767)


def check_queue_name(name: object) -> str:
    # fullmatch: "$" would let a trailing newline through, and nothing is trimmed.
    if not isinstance(name, str) or not QUEUE_NAME_RE.fullmatch(name):
        raise InvalidArgumentError(
            f"invalid queue name {name!r}: 1-80 characters of letters, digits, '.', '_', '-'"
        )
    return name


def duration_ms(value: object, what: str, *, allow_zero: bool = True) -> int:
    """Seconds (int/float) or a timedelta, as whole milliseconds."""
    if isinstance(value, dt.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise InvalidArgumentError(f"{what} must be seconds or a timedelta, not {value!r}")
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not allow_zero):
        raise InvalidArgumentError(f"{what} must be {'> 0' if not allow_zero else '>= 0'}")
    if seconds > MAX_DURATION_S:
        raise InvalidArgumentError(f"{what} is too long (at most ten years)")
    return round(seconds * 1000)


def lock_ms(value: object, what: str = "lock_duration") -> int:
    """A lease length: more than zero and at most ``MAX_LOCK_MS`` (12 hours)."""
    ms = duration_ms(value, what, allow_zero=False)
    if ms > MAX_LOCK_MS:
        raise InvalidArgumentError(f"{what} is too long (at most {MAX_LOCK_MS // 1000} seconds)")
    return ms


def optional_lock_ms(value: object) -> int | None:
    return None if value is None else lock_ms(value)


def optional_duration_ms(value: object, what: str) -> int | None:
    return None if value is None else duration_ms(value, what, allow_zero=False)


def check_int(value: object, what: str, lo: int, hi: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise InvalidArgumentError(f"{what} must be an integer in [{lo}, {hi}], not {value!r}")
    return value


def check_worker_id(value: object) -> None:
    """A ``worker_id`` is None or a worker row's id (a positive 64-bit integer)."""
    if value is not None:
        check_int(value, "worker_id", 1, 2**63 - 1)


def check_str(value: object, what: str, max_len: int = MAX_KEY_LEN) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > max_len:
        raise InvalidArgumentError(f"{what} must be a non-empty string of at most {max_len}")
    return value


def check_seq(value: object) -> int:
    return check_int(value, "seq", 1, 2**63 - 1)


def check_token(value: object) -> str:
    if not isinstance(value, str) or not value or len(value) > 64:
        raise InvalidArgumentError("lock_token must be a non-empty string")
    return value
