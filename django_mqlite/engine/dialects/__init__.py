"""One dialect object per database vendor: feature flags and SQL fragments.

May import: the standard library, ``django.db`` and ``exceptions``.
"""

from __future__ import annotations

from django.db import connections

from ...exceptions import InvalidArgumentError
from .base import Dialect
from .postgresql import PostgreSQLDialect
from .sqlite import SQLiteDialect

_DIALECTS: dict[str, Dialect] = {
    "sqlite": SQLiteDialect(),
    "postgresql": PostgreSQLDialect(),
}

SUPPORTED_VENDORS = tuple(_DIALECTS)


def dialect_for(alias: str) -> Dialect:
    vendor = connections[alias].vendor
    try:
        return _DIALECTS[vendor]
    except KeyError:
        raise InvalidArgumentError(
            f"database {alias!r} is {vendor}; django-mqlite supports {', '.join(SUPPORTED_VENDORS)}"
        ) from None


__all__ = ["SUPPORTED_VENDORS", "Dialect", "dialect_for"]
