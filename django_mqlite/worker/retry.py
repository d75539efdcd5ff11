"""Retry delays for failed handler attempts: exponential backoff with jitter."""

from __future__ import annotations

import random


def backoff_delay(attempt: int, *, base_s: float, cap_s: float, rng: random.Random) -> float:
    """Seconds to park a message after its ``attempt``-th delivery failed.

    The nominal delay is ``min(cap, base * 2 ** (attempt - 1))`` (about 1 s, 2 s, 4 s ...
    with the defaults); half of it is fixed and half is uniform random jitter, so the
    result lies in ``[nominal / 2, nominal]`` and retries of a burst of failures spread out.
    """
    exponent = min(max(attempt, 1) - 1, 62)
    nominal = min(cap_s, base_s * 2.0**exponent)
    half = nominal / 2
    return half + rng.uniform(0.0, half)
