"""Server-side prepared statements for the engine's hottest statements on PostgreSQL: the
one-statement send (``send_one``) and claim (``claim._claim_one``), and a publish
(``fanout``, one text per subscription set, bounded below).

Django's psycopg backend binds parameters on the client and turns psycopg's own automatic
preparation off (``prepare_threshold=None``, so that a transaction-pooling PgBouncer
works), so the server parses and plans every statement it receives afresh. For the
one-statement send (a CTE over three tables) that planning is the larger part of the
server's time: measured on this project's benchmark machine, inside one transaction,
475 µs per send as plain text against 300 µs as ``EXECUTE`` of the same statement
prepared, and about 140 µs for a bare ``SELECT 1`` round trip (docs/benchmark.md).

So on a direct connection the engine sends ``PREPARE`` once per database session (the
first time the statement runs on it) and then ``EXECUTE name(...)`` through Django's own
cursor: the statement still shows in ``CaptureQueriesContext`` and passes through any
``execute_wrapper``, and it runs in the caller's transaction as before. A prepared
statement is not transactional (a rollback keeps it), belongs to the session (a new
connection prepares again), and is re-planned by PostgreSQL when a table it reads
changes or ``search_path`` does.

Off where a session's prepared statement may not be there next time:

- the alias sets ``DISABLE_SERVER_SIDE_CURSORS`` (Django's documented setting for a
  transaction-pooling PgBouncer, where each transaction may run on another session);
- ``MQLITE["PREPARED_STATEMENTS"]`` is ``False`` (``True`` forces it on; the default,
  ``None``, is the rule above).

On SQLite there is nothing to do: the engine's cursor already reuses compiled statements
(``sqlite3``'s statement cache).
"""

from __future__ import annotations

import hashlib
import re
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from django.db import connections
from django.db.backends.utils import CursorWrapper

from ..conf import current
from .dialects import dialect_for

_FORMAT = re.compile(r"(?<!%)%s")

# Per database session (the driver's connection object), per label, the names prepared
# on it, least recently used first. A label whose text varies (publish: one text per
# topic's subscription set, so a new one after every subscription change) keeps at most
# ``PER_LABEL`` of them: the least recently used is deallocated (DEALLOCATE) when one more
# is prepared, so that a long-lived session does not collect a statement per change.
_prepared: weakref.WeakKeyDictionary[Any, dict[str, OrderedDict[str, None]]] = (
    weakref.WeakKeyDictionary()
)
PER_LABEL = 16
# Per statement text: its name, its PREPARE body, its parameter count and its EXECUTE
# text (bounded the same way, for the process).
_names: OrderedDict[str, tuple[str, str, int, str]] = OrderedDict()
_NAMES_MAX = 1024


def enabled(alias: str) -> bool:
    """Whether statements on ``alias`` are prepared (PostgreSQL, direct connections)."""
    return _enabled(connections[alias], alias)


def _enabled(db: Any, alias: str) -> bool:
    if not dialect_for(alias).supports_prepare:
        return False
    setting = current().prepared_statements
    if setting is not None:
        return setting
    return not db.settings_dict.get("DISABLE_SERVER_SIDE_CURSORS", False)


def _compile(label: str, sql: str) -> tuple[str, str, int, str]:
    """The statement's name (label + a hash of its text, so two versions or variants
    never share one), its text with ``$n`` placeholders, its parameter count and the
    ``EXECUTE`` that runs it (``%s`` placeholders)."""
    got = _names.get(sql)
    if got is None:
        count = 0

        def number(_: re.Match[str]) -> str:
            nonlocal count
            count += 1
            return f"${count}"

        body = _FORMAT.sub(number, sql).replace("%%", "%")
        digest = hashlib.sha1(sql.encode(), usedforsecurity=False).hexdigest()[:12]
        name = f"mqlite_{label}_{digest}"
        call = f"EXECUTE {name}({', '.join(['%s'] * count)})"
        got = _names[sql] = (name, body, count, call)
        if len(_names) > _NAMES_MAX:
            _names.popitem(last=False)
    return got


def execute(cursor: CursorWrapper, alias: str, label: str, sql: str, params: Sequence[Any]) -> None:
    """Run ``sql`` (``%s`` placeholders) with ``params`` on ``cursor``: as ``EXECUTE``
    of a statement prepared on this session when ``enabled(alias)``, else as it is."""
    db = connections[alias]
    if not _enabled(db, alias):
        cursor.execute(sql, params)
        return
    name, body, count, call = _compile(label, sql)
    if len(params) != count:
        raise ValueError(f"{name}: {count} placeholders, {len(params)} parameters")
    db.ensure_connection()
    session = db.connection
    labels = _prepared.get(session)
    if labels is None:
        labels = _prepared[session] = {}
    names = labels.get(label)
    if names is None:
        names = labels[label] = OrderedDict()
    if name in names:
        names.move_to_end(name)
    else:
        cursor.execute(f"PREPARE {name} AS {body}")
        names[name] = None
        if len(names) > PER_LABEL:
            old, _ = names.popitem(last=False)
            cursor.execute(f"DEALLOCATE {old}")
    cursor.execute(call, params)
