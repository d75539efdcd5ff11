"""What the settle verbs take (``settle``): the items of a batch and their checks, done
before anything is written (a bad item fails the whole call with
``InvalidArgumentError``; a stale one is an answer, not an error)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any, NamedTuple

from ..exceptions import InvalidArgumentError
from . import admission, arguments, canonical_json

MAX_RENEW_BATCH = 512
MAX_COMPLETE_BATCH = 1024
MAX_REASON = 128
MAX_DESCRIPTION = 4096
MAX_ERROR = 64 * 1024

Pair = tuple[int, str]


class AbandonItem(NamedTuple):
    """One message to give back: after ``delay`` (seconds or a timedelta; None is now),
    keeping ``error`` as its last error and appending ``attempt`` (JSON) to its attempt
    history. Only ``delay`` is part of the request's identity (its receipt)."""

    seq: int
    lock_token: str
    delay: float | dt.timedelta | None = None
    error: str | None = None
    attempt: Any = None


class SnoozeItem(NamedTuple):
    """One message to snooze for ``delay`` (seconds or a timedelta, required; part of
    the request's identity)."""

    seq: int
    lock_token: str
    delay: float | dt.timedelta


class RejectItem(NamedTuple):
    """One message to dead-letter with ``reason`` and ``description`` (both part of the
    request's identity); ``error`` and ``attempt`` as for ``AbandonItem``."""

    seq: int
    lock_token: str
    reason: str
    description: str = ""
    error: str | None = None
    attempt: Any = None


def check_pairs(items: object, cap: int, sizes: range = range(2, 3)) -> list[Pair]:
    """Each item's (seq, lock_token), checked; an item has ``sizes`` fields."""
    if not isinstance(items, list | tuple) or len(items) > cap:
        raise InvalidArgumentError(f"items must be a list of at most {cap} (seq, lock_token)")
    out = []
    for item in items:
        if not isinstance(item, list | tuple) or len(item) not in sizes:
            raise InvalidArgumentError("each item must be a (seq, lock_token, ...) tuple")
        out.append((arguments.check_seq(item[0]), arguments.check_token(item[1])))
    _no_repeats(out)
    return out


def _no_repeats(pairs: Sequence[Pair]) -> None:
    seen: set[int] = set()
    for seq, _ in pairs:
        if seq in seen:
            raise InvalidArgumentError(f"seq {seq} appears twice")
        seen.add(seq)


def _check_error(error: object) -> str | None:
    if error is not None and not isinstance(error, str):
        raise InvalidArgumentError("error must be a string")
    return None if error is None else admission.diagnostic(error[:MAX_ERROR])


def check_abandons(items: object) -> list[tuple[int, str, int, str | None, str | None]]:
    check_pairs(items, MAX_COMPLETE_BATCH, range(2, 6))
    assert isinstance(items, list | tuple)
    out = []
    for item in items:
        a = AbandonItem(*item)
        delay_ms = 0 if a.delay is None else arguments.duration_ms(a.delay, "delay")
        out.append(
            (
                a.seq,
                a.lock_token,
                delay_ms,
                _check_error(a.error),
                canonical_json.dumps_arg(a.attempt, "attempt"),
            )
        )
    return out


def check_snoozes(items: object) -> list[tuple[int, str, int]]:
    """Each snooze's (seq, lock_token, delay_ms); the delay must be given (>= 0, finite,
    at most ten years)."""
    check_pairs(items, MAX_COMPLETE_BATCH, range(3, 4))
    assert isinstance(items, list | tuple)
    return [
        (seq, token, arguments.duration_ms(delay, "delay"))
        for seq, token, delay in (SnoozeItem(*item) for item in items)
    ]


def check_reason(reason: object, description: object) -> tuple[str, str]:
    """A rejection's reason (1-128 characters) and description (at most 4096), made
    storable by ``admission.diagnostic`` (a lone surrogate or NUL becomes U+FFFD, so a
    consumer rejecting with one still ends dead-lettered, its reason readable)."""
    if not isinstance(reason, str) or not reason or len(reason) > MAX_REASON:
        raise InvalidArgumentError(f"reason must be a non-empty string of at most {MAX_REASON}")
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        raise InvalidArgumentError(f"description must be a string of at most {MAX_DESCRIPTION}")
    return admission.diagnostic(reason), admission.diagnostic(description)


def check_rejects(
    items: object,
) -> list[tuple[int, str, str, str, str | None, str | None]]:
    check_pairs(items, MAX_COMPLETE_BATCH, range(3, 7))
    assert isinstance(items, list | tuple)
    out = []
    for item in items:
        r = RejectItem(*item)
        reason, description = check_reason(r.reason, r.description)
        out.append(
            (
                r.seq,
                r.lock_token,
                reason,
                description,
                _check_error(r.error),
                canonical_json.dumps_arg(r.attempt, "attempt"),
            )
        )
    return out
