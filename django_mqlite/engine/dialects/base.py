"""What the engine needs to know about a database, in one object per vendor.

Engine code branches on ``features`` and asks ``ops``-style methods for SQL fragments,
like Django's own ``connection.features`` / ``connection.ops``; it never compares vendor
strings. Fragments are constant SQL text, never data: data always travels as parameters.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


class Dialect:
    vendor = ""
    #: The claim's subquery can lock what it picks and skip rows others hold.
    supports_skip_locked = False
    #: Producers can wake idle workers through the database (LISTEN/NOTIFY).
    has_listen_notify = False
    #: Another connection's commit can be seen by polling a counter in the database file
    #: (SQLite's ``PRAGMA data_version``): idle workers watch it (``listen.CommitWatcher``).
    has_commit_counter = False
    #: Several processes may claim concurrently (row locks); otherwise writes are serialized.
    concurrent_writers = False
    #: The database adds to a queue's ``enqueued`` total on every insert into
    #: ``mqlite_message`` (SQLite's trigger, migration 0008): senders must not.
    counts_enqueued = False
    #: Later sends to a queue in a transaction leave their count to a deferred trigger
    #: (PostgreSQL, migration 0008; ``send_one.Counted``).
    defers_counts = False
    #: A statement may write in a CTE (``WITH m AS (INSERT ... RETURNING ...) ...``).
    writable_cte = False
    #: A session can keep a parsed and planned statement (``PREPARE``/``EXECUTE``;
    #: ``engine/prepared.py``).
    supports_prepare = False
    #: A JSON column keeps the text it is given (SQLite's TEXT) rather than parsing it
    #: into a binary type that refuses what JSON cannot hold (PostgreSQL's jsonb).
    json_is_text = False
    #: The database may give up a transaction to break a cycle of lock waits and say so
    #: by an error ``restarts_transaction`` recognises: a transaction the engine opened
    #: then runs again (``engine/retry.py``).
    retries_deadlocks = False
    #: An upsert into a table whose key is ``AUTOINCREMENT`` rewrites the sequence's page
    #: even when it ends as an update (SQLite's ``sqlite_sequence``): counters are
    #: updated first and upserted only when their row is missing (``totals.bump_totals``).
    upsert_writes_sequence = False
    #: A one-row ``INSERT`` answers its new ``seq`` with the statement's acknowledgement
    #: (MariaDB's insert id, ``cursor.lastrowid``): the one-statement send asks for no
    #: ``RETURNING`` result set.
    acknowledges_insert_id = False
    #: The SQL type a body is cast to.
    blob_type = "blob"

    def engine_cursor(self, cursor: Any) -> Any:
        """The cursor the engine runs its statements on, given Django's: the same, where
        the database runs them as written."""
        return cursor

    def new_token_sql(self) -> str:
        """An expression producing a fresh random 128-bit token as 32 hex characters."""
        raise NotImplementedError

    def least_sql(self, *args: str) -> str:
        raise NotImplementedError

    def greatest_sql(self, a: str, b: str) -> str:
        raise NotImplementedError

    def index_hint(self, index: str) -> str:
        """Placed after ``FROM mqlite_message``: pins a statement to its partial index
        where the database has a way to say so."""
        return ""

    def key_hint(self) -> str:
        """Placed after ``UPDATE mqlite_message``: keeps a statement that names its row
        by primary key on the key, where a join would draw the planner to an index."""
        return ""

    def row_lock_sql(self, *, exclusive: bool) -> str:
        """Appended to a SELECT of one row that writers of what hangs off it must wait
        for: a publish takes it shared, changing a topic's subscriptions exclusive
        (nothing where writes are serialized anyway)."""
        return ""

    def lock_suffix(self) -> str:
        """Appended to a claim's inner SELECT."""
        return ""

    def stored_size_sql(self) -> str:
        """Bytes a message row's body and properties take, read without loading the
        body (SQLite's ``length()`` of a blob and PostgreSQL's ``octet_length()`` of a
        bytea read only the value's header)."""
        return "length(body) + COALESCE(length(properties), 0)"

    def json_param(self) -> str:
        """Placeholder for a JSON document passed as text."""
        return "%s"

    def load_json(self, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, str | bytes):
            return json.loads(value)
        return value

    def json_append_sql(self, column: str) -> str:
        """``column`` (a JSON array, or NULL) with one more element, given as JSON text
        in one %s parameter."""
        raise NotImplementedError

    def json_append_expr(self, column: str, value: str) -> str:
        """``column`` with one more element, the JSON value of the expression ``value``."""
        raise NotImplementedError

    def totals_shard_sql(self) -> str:
        """Which row of a queue's totals this connection increments (spreads contention)."""
        return "0"

    def lock_group_sql(self) -> str | None:
        """A statement taking a transaction-scoped lock on one group key (one %s), or None
        when writes are serialized anyway."""
        return None

    def lock_keys(self, cursor: Any, keys: Iterable[str]) -> None:
        """Take the transaction-scoped locks of ``keys`` (``lock_group_sql``'s), in an
        order every writer shares, so two writers never wait for each other in a
        cycle; nothing where writes are serialized anyway."""
        sql = self.lock_group_sql()
        if sql is None:
            return
        for key in sorted(set(keys)):
            cursor.execute(sql, [key])

    def restarts_transaction(self, exc: BaseException) -> bool:
        """Whether ``exc`` means the database rolled back the whole transaction to break
        a cycle of lock waits, so that a transaction the engine opened may run again
        (``engine/retry.py``)."""
        return False

    def clock_ms_sql(self) -> str:
        """A query returning the database server's wall clock, in ms since the epoch."""
        raise NotImplementedError

    def notify_sql(self) -> str | None:
        """A statement that wakes listeners of a queue on commit (one %s: queue name)."""
        return None

    # -- topic filters (engine/filters.py): conditions on a JSON object of properties.
    # Each returns (SQL, parameters) for a condition on property ``key`` of the JSON
    # column ``doc``; the SQL is NULL or false when the property is missing or of another
    # type (the caller makes NULL false).

    def json_exists_sql(self, doc: str, key: str) -> tuple[str, list[Any]]:
        raise NotImplementedError

    def json_equals_sql(self, doc: str, key: str, value: Any) -> tuple[str, list[Any]]:
        """The property equals ``value`` (a str, a finite number, a bool or None), with
        JSON types kept apart (``"1"`` is not ``1``; ``1`` equals ``1.0``)."""
        raise NotImplementedError

    def json_compare_sql(self, doc: str, key: str, op: str, number: float) -> tuple[str, list[Any]]:
        """The property is a number and ``<property> op number`` (op: <, <=, >, >=)."""
        raise NotImplementedError

    def json_prefix_sql(self, doc: str, key: str, prefix: str) -> tuple[str, list[Any]]:
        """The property is a string starting with ``prefix``."""
        raise NotImplementedError

    def text_prefix_sql(self, column: str, prefix: str) -> tuple[str, list[Any]]:
        """The text ``column`` starts with ``prefix`` (characters, no pattern syntax)."""
        return f"substr({column}, 1, %s) = %s", [len(prefix), prefix]
