"""The MariaDB engine cursor: runs the engine's statements, written in the SQL that
SQLite and PostgreSQL share, as MariaDB can (``mariadb``'s docstring says what and why).

Each statement first gets the rewrites that depend on its text alone (cached): ``VALUES``
lists as tables, ``CAST`` types, ``ON CONFLICT``. What depends on data runs at execute
time, in the caller's transaction, on the same connection:

1. *Hoisting*: a subquery that locks (``FOR UPDATE``), an ``IN`` subquery with a
   ``LIMIT`` and a ``LIMIT (subquery)`` run first, innermost first, and their rows take
   their place (a list of values, a table of literals, a number).
2. *Returning*: an ``UPDATE`` with ``RETURNING`` (or joined to a ``VALUES`` table) locks
   the rows its WHERE clause matches, updates those rows by key with the same WHERE
   clause re-checked, and reads them back by key; a fresh lock token
   (``TOKEN_MARKER``) becomes a token per row drawn here, and the rows are read back by
   those tokens.

The connection runs with ``SIMULTANEOUS_ASSIGNMENT`` added to its sql_mode (an
``UPDATE``'s assignments all read the row as it was, as the standard says and the other
two do), set once per connection; a double-quoted name becomes a backquoted one.

A lock wait timeout (1205) rolls back only the statement (InnoDB's default), so the
statement is tried again, up to ``LOCK_WAIT_RETRIES`` times; a deadlock (1213) rolls
back the whole transaction, so it is retried here only for a statement that is its own
transaction (autocommit), and raised otherwise: ``engine/retry.py`` runs again a whole
transaction the engine opened itself.
"""

from __future__ import annotations

import functools
import re
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, OperationalError, connections

#: What ``MariaDBDialect.new_token_sql`` gives: this cursor puts a fresh token of each
#: row's own in its place; no statement reaches MariaDB with it.
TOKEN_MARKER = "mqlite_new_token()"  # noqa: S105 - SQL text, not a secret

#: Added to the session's sql_mode once per connection: an UPDATE's assignments all read
#: the row as it was (the standard's rule, and SQLite's and PostgreSQL's), not each the
#: one before it.
SESSION_MODE = "SET SESSION sql_mode = CONCAT(@@sql_mode, ',SIMULTANEOUS_ASSIGNMENT')"
#: MariaDB's error codes: a lock wait timed out (the statement is rolled back), a
#: deadlock (the whole transaction is), a duplicate key.
LOCK_WAIT = 1205
DEADLOCK = 1213
DUPLICATE = 1062
LOCK_WAIT_RETRIES = 3
DEADLOCK_RETRIES = 5
#: The key each table's rows are read back by.
_KEYS = {"mqlite_message": "seq"}

_PH = re.compile(r"(?<!%)%s")


def placeholders(sql: str) -> int:
    return len(_PH.findall(sql))


# -- scanning ----------------------------------------------------------------------------


@functools.lru_cache(maxsize=128)
def _depths(sql: str) -> list[int]:
    """The parenthesis depth at each character (-1 inside a quoted string or name).
    Cached: a statement's text is scanned for several words, and the worker's claims and
    settlements repeat a few texts (a fifth of a claim's time in a profiled worker was
    this loop); callers only read the list."""
    out = [0] * len(sql)
    depth = 0
    quote = ""
    for i, ch in enumerate(sql):
        if quote:
            out[i] = -1
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"`":
            quote = ch
            out[i] = -1
            continue
        if ch == "(":
            out[i] = depth
            depth += 1
            continue
        if ch == ")":
            depth -= 1
        out[i] = depth
    return out


def close_of(sql: str, start: int) -> int:
    """The index of the ``)`` closing the ``(`` at ``start``."""
    depth = 0
    quote = ""
    for i in range(start, len(sql)):
        ch = sql[i]
        if quote:
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(f"unbalanced parentheses in {sql!r}")


@functools.lru_cache(maxsize=1024)
def find_top(sql: str, word: str, start: int = 0, depth: int = 0) -> int:
    """The first ``word`` (a keyword, case-insensitive, whole words) at ``depth``."""
    depths = _depths(sql)
    pattern = _word(word)
    for m in pattern.finditer(sql, start):
        if depths[m.start()] == depth:
            return m.start()
    return -1


@functools.lru_cache(maxsize=64)
def _word(word: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w.])" + word.replace(" ", r"\s+") + r"(?!\w)", re.I)


def split_top(sql: str, sep: str = ",") -> list[str]:
    """``sql`` split at ``sep`` outside parentheses and quotes."""
    depths = _depths(sql)
    parts: list[str] = []
    last = 0
    for i, ch in enumerate(sql):
        if ch == sep and depths[i] == 0:
            parts.append(sql[last:i])
            last = i + 1
    parts.append(sql[last:])
    return parts


def groups(sql: str) -> Iterator[tuple[int, int]]:
    """(open, close) of every parenthesized group, outermost first."""
    depths = _depths(sql)
    for i, ch in enumerate(sql):
        if ch == "(" and depths[i] >= 0:
            yield i, close_of(sql, i)


@dataclass
class Piece:
    """SQL text with its parameters."""

    sql: str
    params: list[Any] = field(default_factory=list)

    def splice(self, start: int, end: int, sql: str, params: Sequence[Any]) -> Piece:
        """This piece with ``sql[start:end]`` replaced (and its parameters)."""
        before = placeholders(self.sql[:start])
        inside = placeholders(self.sql[start:end])
        return Piece(
            self.sql[:start] + sql + self.sql[end:],
            [*self.params[:before], *params, *self.params[before + inside :]],
        )

    def part(self, start: int, end: int) -> Piece:
        """``sql[start:end]`` (stripped) with its parameters."""
        before = placeholders(self.sql[:start])
        inside = placeholders(self.sql[start:end])
        return Piece(self.sql[start:end].strip(), list(self.params[before : before + inside]))


# -- text rewrites (cached) --------------------------------------------------------------

_CASTS = [
    (re.compile(r"\bAS\s+varchar\)", re.I), "AS CHAR)"),
    (re.compile(r"\bAS\s+(bigint|smallint|integer)\)", re.I), "AS SIGNED)"),
    (re.compile(r"\bAS\s+(bytea|blob)\)", re.I), "AS BINARY)"),
]
_IN_VALUES = re.compile(r"\bIN\s*\(\s*VALUES\s+", re.I)
_VALUES_TABLE = re.compile(r"(?:FROM|JOIN|,)\s*\(\s*VALUES\s", re.I)
_WITH_VALUES = re.compile(r"^\s*WITH\s+(\w+)\s*\(([^)]*)\)\s+AS\s+\(\s*VALUES\s", re.I)
_EXCLUDED = re.compile(r"\bexcluded\.(\w+)", re.I)


def values_select(rows_sql: str, names: Sequence[str] | None) -> str:
    """``VALUES (a, b), (c, d)`` (the text after VALUES) as ``SELECT a AS n1, b AS n2
    UNION ALL SELECT c, d``."""
    selects = []
    for k, row in enumerate(split_top(rows_sql)):
        row = row.strip()
        assert row.startswith("(") and row.endswith(")"), row
        cells = [c.strip() for c in split_top(row[1:-1])]
        if k == 0:
            labels = names or [f"column{i + 1}" for i in range(len(cells))]
            cells = [f"{c} AS {n}" for c, n in zip(cells, labels, strict=True)]
        selects.append("SELECT " + ", ".join(cells))
    return " UNION ALL ".join(selects)


@dataclass
class Shape:
    """What the text rewrites made of a statement, and what is left for execute time."""

    sql: str
    #: ``WITH v (names) AS (VALUES ...)`` in front of an UPDATE: v as a derived table
    #: (its SQL), and where it sat.
    cte: tuple[str, str] | None = None
    #: ``ON CONFLICT (...) DO UPDATE SET ... WHERE ...``: (conflict columns, the SET
    #: list, its condition, RETURNING list) for the insert-then-update.
    upsert: tuple[list[str], str, str, str] | None = None


_shapes: dict[str, Shape] = {}
#: ``_find_hoist`` by statement text (``MariaDBCursor._next_hoist``).
_hoists: dict[str, tuple[int, int, str] | None] = {}


def _find_hoist(sql: str) -> tuple[int, int, str] | None:
    """The first innermost subquery of ``sql`` that must run first, or None."""
    found: list[tuple[int, int, str]] = []
    depths = _depths(sql)
    for open_at, close in groups(sql):
        word = sql[open_at + 1 : close].lstrip()[:6].upper()
        if not word.startswith(("SELECT", "WITH")):
            continue
        before = sql[:open_at].rstrip().upper()
        d = depths[open_at] + 1
        locks = find_top(sql[:close], "FOR UPDATE", open_at + 1, d) >= 0
        limited = find_top(sql[:close], "LIMIT", open_at + 1, d) >= 0
        if before.endswith("LIMIT"):
            found.append((open_at, close, "limit"))
        elif before.endswith(" IN") and (locks or limited):
            found.append((open_at, close, "in"))
        elif locks:
            found.append((open_at, close, "table"))
    for c in found:
        if not any(o > c[0] and e < c[1] for o, e, _ in found):
            return c
    return None


def shape(sql: str) -> Shape:
    got = _shapes.get(sql)
    if got is None:
        if len(_shapes) > 2048:
            _shapes.clear()
        got = _shapes[sql] = _shape(sql)
    return got


def _backquote(sql: str) -> str:
    """Double-quoted names as backquoted ones (MariaDB reads "x" as a string)."""
    if '"' not in sql:
        return sql
    out = []
    quote = ""
    for ch in sql:
        if quote:
            if ch == quote:
                quote = ""
                if ch == '"':
                    ch = "`"
            out.append(ch)
            continue
        if ch == "'":
            quote = "'"
        elif ch == '"':
            quote = '"'
            ch = "`"
        out.append(ch)
    return "".join(out)


def _shape(sql: str) -> Shape:
    sql = _backquote(sql)
    for pattern, repl in _CASTS:
        sql = pattern.sub(repl, sql)
    sql = _IN_VALUES.sub("IN (", sql)
    cte = None
    m = _WITH_VALUES.match(sql)
    if m:
        open_at = sql.index("(", m.end(2) + 1)
        close = close_of(sql, open_at)
        names = [n.strip() for n in m.group(2).split(",")]
        body = sql[open_at + 1 : close].strip()
        assert body[:6].upper() == "VALUES", body
        cte = (m.group(1), values_select(body[6:], names))
        sql = sql[close + 1 :].strip()
    # (VALUES ...) tables anywhere else, columns named column1, column2, ...
    while True:
        m = _VALUES_TABLE.search(sql)
        if not m:
            break
        open_at = sql.index("(", m.start())
        close = close_of(sql, open_at)
        body = sql[open_at + 1 : close].strip()
        sql = sql[: open_at + 1] + values_select(body[6:], None) + sql[close:]
    upsert = None
    at = find_top(sql, "ON CONFLICT")
    if at >= 0:
        sql, upsert = _on_conflict(sql, at)
    return Shape(sql, cte, upsert)


def _on_conflict(sql: str, at: int) -> tuple[str, tuple[list[str], str, str, str] | None]:
    head = sql[:at].rstrip()
    rest = sql[at:]
    open_at = rest.index("(")
    close = close_of(rest, open_at)
    target = [c.strip() for c in rest[open_at + 1 : close].split(",")]
    tail = rest[close + 1 :]
    returning = ""
    r = find_top(tail, "RETURNING")
    if r >= 0:
        returning = tail[r + len("RETURNING") :].strip()
        tail = tail[:r]
    do = find_top(tail, "DO")
    action = tail[do + 2 :].strip()
    ret = f" RETURNING {returning}" if returning else ""
    if action.upper().startswith("NOTHING"):
        # Duplicates are skipped (and not returned); MariaDB cannot name the key, so
        # every table this is used on has one unique key besides its primary key.
        return re.sub(r"^\s*INSERT\s+INTO", "INSERT IGNORE INTO", head, flags=re.I) + ret, None
    assert action.upper().startswith("UPDATE SET"), action
    sets = action[len("UPDATE SET") :].strip()
    w = find_top(sets, "WHERE")
    if w < 0:
        upsert = _EXCLUDED.sub(r"VALUES(\1)", sets)
        return f"{head} ON DUPLICATE KEY UPDATE {upsert}{ret}", None
    return head + ret, (target, sets[:w].strip(), sets[w + len("WHERE") :].strip(), returning)


# -- the cursor --------------------------------------------------------------------------


def error_code(exc: BaseException) -> int | None:
    cause = exc.__cause__ or exc
    args = getattr(cause, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


class MariaDBEngineCursor:
    """Wraps Django's cursor; ``execute`` runs an engine statement as MariaDB can, and
    ``fetchone``/``fetchall``/``rowcount`` answer for what it stands for."""

    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor
        self.db = cursor.db
        self._rows: list[tuple[Any, ...]] | None = None
        self._rowcount = -1
        self._picked: list[Any] | None = None

    # Django's CursorWrapper protocol, as far as the engine uses it.
    def __enter__(self) -> MariaDBEngineCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.cursor.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cursor, name)

    @property
    def rowcount(self) -> int:
        return self._rowcount if self._rows is not None else self.cursor.rowcount

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._rows is None:
            return self.cursor.fetchone()
        return self._rows.pop(0) if self._rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        if self._rows is None:
            return list(self.cursor.fetchall())
        rows, self._rows = self._rows, []
        return rows

    def fetchmany(self, size: int = 1) -> list[tuple[Any, ...]]:
        if self._rows is None:
            return list(self.cursor.fetchmany(size))
        rows, self._rows = self._rows[:size], self._rows[size:]
        return rows

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while (row := self.fetchone()) is not None:
            yield row

    # -- running ----------------------------------------------------------------------

    def _run(self, sql: str, params: Sequence[Any] | None = None) -> None:
        """One MariaDB statement, on the wrapped cursor, with the retries above."""
        raw = self.db.connection
        if not getattr(raw, "_mqlite_mode", False):
            self.cursor.execute(SESSION_MODE)
            raw._mqlite_mode = True
        text = sql
        args = None if params is None else list(params)
        tries = 0
        while True:
            try:
                self.cursor.execute(text, args)
                return
            except OperationalError as exc:
                code = error_code(exc)
                tries += 1
                if code == LOCK_WAIT and tries <= LOCK_WAIT_RETRIES:
                    continue
                if (
                    code == DEADLOCK
                    and tries <= DEADLOCK_RETRIES
                    and not connections[self.db.alias].in_atomic_block
                ):
                    continue
                raise

    def _select(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        self._run(sql, params)
        return [tuple(r) for r in self.cursor.fetchall()]

    def execute(self, sql: Any, params: Any = None) -> None:
        self._rows = None
        if params is None:
            self._run(shape(str(sql)).sql)
            return
        s = shape(str(sql))
        piece = Piece(s.sql, list(params))
        cte_params: list[Any] = []
        if s.cte is not None:
            # The CTE's parameters came first.
            n = placeholders(s.cte[1])
            cte_params, piece = piece.params[:n], Piece(piece.sql, piece.params[n:])
        self._picked = None
        piece = self._hoist(piece, top=True)
        if self._picked == [] and takes_nothing(piece.sql):
            # Its locking pick found no row: the write can match none. Not sent (a claim
            # on an empty queue, a promotion with nothing due: a round trip each).
            self._rows, self._rowcount = [], 0
            return
        head = piece.sql.lstrip()[:7].upper()
        if s.upsert is not None:
            self._upsert(piece, s.upsert)
        elif head.startswith("UPDATE") and (
            s.cte is not None or find_top(piece.sql, "RETURNING") >= 0
        ):
            self._update(piece, s.cte, cte_params)
        else:
            self._run(piece.sql, piece.params)

    def executemany(self, sql: Any, param_list: Any) -> None:
        for params in param_list:
            self.execute(sql, params)

    # -- 1. hoisting ------------------------------------------------------------------

    def _hoist(self, piece: Piece, top: bool = False) -> Piece:
        """``piece`` with its subqueries that must run first run, innermost first. At
        the top, a locking pick that gave an ``IN`` list leaves its rows in
        ``_picked``: this transaction holds their locks."""
        while True:
            found = self._next_hoist(piece.sql)
            if found is None:
                return piece
            start, end, kind = found
            inner = piece.part(start + 1, end)
            sub = self._hoist(inner)
            rows = self._select(sub.sql, sub.params)
            if top and kind == "in" and find_top(sub.sql, "FOR UPDATE") >= 0:
                self._picked = None if self._picked is not None else [r[0] for r in rows]
            if kind == "limit":
                value = rows[0][0] if rows and rows[0][0] is not None else 0
                piece = piece.splice(start, end + 1, str(max(int(value), 0)), [])
            elif kind == "in":
                values = [r[0] for r in rows]
                listed = "(" + ", ".join(["%s"] * len(values)) + ")" if values else "(NULL)"
                guard = _pick_guard(sub)
                lhs = re.search(r"(\w+(?:\.\w+)?)\s+IN\s*$", piece.sql[:start], re.I)
                if guard is not None and lhs is not None and lhs.group(1) == "seq":
                    # The pick's own condition, checked again by the statement that
                    # takes its rows (which it locked: it holds, unless that changes).
                    piece = piece.splice(
                        lhs.start(),
                        end + 1,
                        f"(seq IN {listed} AND ({guard.sql}))",
                        [*values, *guard.params],
                    )
                else:
                    piece = piece.splice(start, end + 1, listed, values)
            else:
                names = [d[0] for d in self.cursor.description or ()] or ["x"]
                lit_sql, lit_params = _literal_params(rows, names)
                piece = piece.splice(start, end + 1, "(" + lit_sql + ")", lit_params)

    def _next_hoist(self, sql: str) -> tuple[int, int, str] | None:
        """The first innermost subquery that must run first: (open, close, kind). A
        statement's text is parsed once (``_hoists``): a send's INSERT, which has none,
        was parsed again at every send (about 230 µs a send)."""
        if sql in _hoists:
            return _hoists[sql]
        if len(_hoists) > 2048:
            _hoists.clear()
        got = _hoists[sql] = _find_hoist(sql)
        return got

    # -- 2. UPDATE ... RETURNING ----------------------------------------------------------

    def _update(self, piece: Piece, cte: tuple[str, str] | None, cte_params: list[Any]) -> None:
        sql = piece.sql.strip()
        m = re.match(r"UPDATE\s+(\w+)\s*", sql, re.I)
        assert m, sql
        table = m.group(1)
        key = _KEYS.get(table, "id")
        set_at = find_top(sql, "SET")
        from_at = find_top(sql, "FROM", set_at)
        where_at = find_top(sql, "WHERE", set_at)
        ret_at = find_top(sql, "RETURNING", set_at)
        end_where = ret_at if ret_at >= 0 else len(sql)
        sets = piece.part(set_at + 3, from_at if from_at >= 0 else where_at)
        where = piece.part(where_at + 5, end_where)
        returning = sql[ret_at + len("RETURNING") :].strip() if ret_at >= 0 else ""
        if cte is not None:
            name, table_sql = cte
            join = f" JOIN ({table_sql}) AS {name} ON ({where.sql})"
            join_params = [*cte_params, *where.params]
            rows = self._select(f"SELECT {table}.{key} FROM {table}{join} FOR UPDATE", join_params)
        else:
            join, join_params = "", []
        if cte is None and self._picked is not None:
            # The pick locked these rows (and only these can match): none to lock again.
            rows = [(k,) for k in self._picked]
        elif cte is None:
            rows = self._select(
                f"SELECT {key} FROM {table} WHERE {where.sql} FOR UPDATE", where.params
            )
        keys = sorted({r[0] for r in rows})
        if not keys and self._picked is None:
            self._rows, self._rowcount = [], 0
            return
        marks = ", ".join(["%s"] * len(keys)) or "NULL"
        set_sql, set_params = sets.sql, sets.params
        tokens: list[str] = []
        if TOKEN_MARKER in set_sql and not keys:
            set_sql = set_sql.replace(TOKEN_MARKER, "NULL", 1)  # matches no row
        elif TOKEN_MARKER in set_sql:
            tokens = [secrets.token_hex(16) for _ in keys]
            case = "CASE " + key + " " + " ".join(["WHEN %s THEN %s"] * len(keys)) + " END"
            before = placeholders(set_sql[: set_sql.index(TOKEN_MARKER)])
            pairs = [v for pair in zip(keys, tokens, strict=True) for v in pair]
            set_params = [*set_params[:before], *pairs, *set_params[before:]]
            set_sql = set_sql.replace(TOKEN_MARKER, case, 1)
        if cte is not None:
            # Joined, a name on the left of an assignment could be the table's or v's.
            set_sql = ", ".join(
                re.sub(r"^\s*(\w+)\s*=", rf"{table}.\1 =", a, count=1) for a in split_top(set_sql)
            )
            self._run(
                f"UPDATE {table}{join} SET {set_sql} WHERE {table}.{key} IN ({marks})",
                [*join_params, *set_params, *keys],
            )
        elif self._picked is not None:
            self._run(
                f"UPDATE {table} SET {set_sql} WHERE {where.sql}", [*set_params, *where.params]
            )
        else:
            self._run(
                f"UPDATE {table} SET {set_sql} WHERE {key} IN ({marks}) AND ({where.sql})",
                [*set_params, *keys, *where.params],
            )
        count = self.cursor.rowcount
        if not returning or not keys:
            self._rows, self._rowcount = [], count
            return
        back = f"SELECT {returning} FROM {table} WHERE {key} IN ({marks})"
        back_params: list[Any] = list(keys)
        if tokens:
            back += f" AND lock_token IN ({marks})"
            back_params += tokens
        self._rows = self._select(back, back_params)
        self._rowcount = len(self._rows)

    # -- ON CONFLICT ... DO UPDATE ... WHERE --------------------------------------------

    def _upsert(self, piece: Piece, upsert: tuple[list[str], str, str, str]) -> None:
        """``INSERT ... ON CONFLICT (target) DO UPDATE SET sets WHERE cond [RETURNING]``
        of one row: the insert, or on a duplicate key the guarded update of the row
        holding it (nothing when ``cond`` does not hold). Should the row go between the
        two, the insert is tried again."""
        target, sets, cond, returning = upsert
        sql = piece.sql
        m = re.match(r"\s*INSERT\s+INTO\s+(\w+)\s*\(([^)]*)\)\s*VALUES\s*", sql, re.I)
        assert m, sql
        table = m.group(1)
        columns = [c.strip().strip('"') for c in m.group(2).split(",")]
        open_at = sql.index("(", m.end() - 1)
        close = close_of(sql, open_at)
        n_insert = placeholders(sql)
        insert_params, extra = piece.params[:n_insert], piece.params[n_insert:]
        cells: dict[str, Piece] = {}
        offset = placeholders(sql[:open_at])
        for col, cell in zip(columns, split_top(sql[open_at + 1 : close]), strict=True):
            n = placeholders(cell)
            cells[col] = Piece(cell.strip(), insert_params[offset : offset + n])
            offset += n
        own = iter(extra[: placeholders(sets)])
        cond_params = extra[placeholders(sets) :]
        assigned_params: list[Any] = []
        for token in re.finditer(r"\bexcluded\.(\w+)|(?<!%)%s", sets, re.I):
            if token.group(1):
                assigned_params += cells[token.group(1)].params
            else:
                assigned_params.append(next(own))
        assigned = _EXCLUDED.sub(lambda mm: f"({cells[mm.group(1)].sql})", sets)
        match = " AND ".join(f"{c} = ({cells[c].sql})" for c in target)
        match_params = [p for c in target for p in cells[c].params]
        ret = f" RETURNING {returning}" if returning else ""
        update = Piece(
            f"UPDATE {table} SET {assigned} WHERE {match} AND ({cond}){ret}",
            [*assigned_params, *match_params, *cond_params],
        )
        for _ in range(3):
            try:
                self._run(sql, insert_params)
            except IntegrityError as exc:
                if error_code(exc) != DUPLICATE:
                    raise
            else:
                self._rows = [tuple(r) for r in self.cursor.fetchall()] if returning else []
                self._rowcount = self.cursor.rowcount
                return
            self._update(update, None, [])
            if self._rowcount:
                return
            if self._select(f"SELECT 1 FROM {table} WHERE {match}", match_params):
                return  # held, and the condition did not hold: nothing written
        self._rows, self._rowcount = [], 0


_PICK = re.compile(
    r"^\s*SELECT\s+seq\s+FROM\s+mqlite_message\s+(?:FORCE\s+INDEX\s*\(\w+\)\s*)?WHERE\s",
    re.I,
)


#: What ``_hoist`` makes of ``seq IN (locking pick)`` when the pick found no row.
_EMPTY_PICK = "(seq IN (NULL) AND ("


def takes_nothing(sql: str) -> bool:
    """Whether ``sql`` is an UPDATE or DELETE whose whole WHERE is an empty pick's
    ``(seq IN (NULL) AND (...))``: a write that can change no row."""
    if sql.lstrip()[:6].upper() not in ("UPDATE", "DELETE"):
        return False
    where = find_top(sql, "WHERE")
    if where < 0:
        return False
    open_at = len(sql) - len(sql[where + 5 :].lstrip())  # the WHERE clause's first character
    if not sql.startswith(_EMPTY_PICK, open_at):
        return False
    tail = sql[close_of(sql, open_at) + 1 :].strip()
    return tail == "" or find_top(tail, "RETURNING") == 0


def _pick_guard(sub: Piece) -> Piece | None:
    """The WHERE condition of a locking pick of message seqs (``SELECT seq FROM
    mqlite_message WHERE ... FOR UPDATE``), or None for any other subquery."""
    m = _PICK.match(sub.sql)
    if m is None or find_top(sub.sql, "FOR UPDATE") < 0:
        return None
    ends = [
        i
        for i in (find_top(sub.sql, w, m.end()) for w in ("ORDER BY", "LIMIT", "FOR UPDATE"))
        if i >= 0
    ]
    return sub.part(m.end(), min(ends))


def _literal_params(rows: list[tuple[Any, ...]], names: Sequence[str]) -> tuple[str, list[Any]]:
    """Rows as a derived table of parameters (no rows: one of NULLs, filtered out)."""
    if not rows:
        nulls = ", ".join(f"NULL AS {n}" for n in names)
        return f"SELECT {nulls} FROM DUAL WHERE 1 = 0", []
    selects = []
    params: list[Any] = []
    for k, row in enumerate(rows):
        cells = [f"%s AS {n}" if k == 0 else "%s" for n in names]
        selects.append("SELECT " + ", ".join(cells))
        params += list(row)
    return " UNION ALL ".join(selects), params
