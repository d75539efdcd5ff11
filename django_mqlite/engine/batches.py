"""Statements over many rows: ``placeholders(n)`` for an ``IN (...)`` or ``VALUES`` list
of ``n`` parameters, and ``chunks`` to split a long list so each statement stays under
the database's parameter limit."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def placeholders(n: int) -> str:
    return ", ".join(["%s"] * n)


def chunks(seq: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for i in range(0, len(seq), size):
        yield seq[i : i + size]
