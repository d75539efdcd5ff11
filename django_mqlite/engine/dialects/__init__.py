"""One dialect object per database vendor: feature flags and SQL fragments.

May import: the standard library, ``django.db`` and ``exceptions``.
"""

from __future__ import annotations

from django.db import connections

from ...exceptions import InvalidArgumentError
from .base import Dialect
from .mariadb import MariaDBDialect
from .postgresql import PostgreSQLDialect
from .sqlite import SQLiteDialect

_DIALECTS: dict[str, Dialect] = {
    "sqlite": SQLiteDialect(),
    "postgresql": PostgreSQLDialect(),
    # Django's vendor is "mysql" for MySQL and MariaDB alike; only MariaDB 10.6+ is
    # served (check E012 asks the server and refuses MySQL).
    "mariadb": MariaDBDialect(),
}

SUPPORTED_VENDORS = ("sqlite", "postgresql", "mariadb")


def vendor_of(alias: str) -> str:
    """The database's vendor as the dialects name it: Django's, but "mariadb" for
    Django's MySQL backend, which only MariaDB may be behind (check E012 refuses MySQL;
    telling them apart here would connect to the server)."""
    vendor = str(connections[alias].vendor)
    return "mariadb" if vendor == "mysql" else vendor


def dialect_for(alias: str) -> Dialect:
    vendor = vendor_of(alias)
    try:
        return _DIALECTS[vendor]
    except KeyError:
        raise InvalidArgumentError(
            f"database {alias!r} is {vendor}; django-mqlite supports {', '.join(SUPPORTED_VENDORS)}"
        ) from None


__all__ = ["SUPPORTED_VENDORS", "Dialect", "dialect_for", "vendor_of"]
