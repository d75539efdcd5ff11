"""Subscription filters: which published messages a subscription takes, as SQL.

A filter is a dict; every key must hold (AND):

- ``"subject"`` or ``"properties.<name>"`` (a top-level property) mapped to a condition:
  a value (equal: a string, a number, ``true``/``false`` or ``null``, JSON types kept
  apart, so ``"1"`` is not ``1`` and ``1`` equals ``1.0``), a non-empty list of values
  (equal to any of them), or a non-empty dict of operators, all of which must hold:
  ``{"prefix": str}``, ``{"exists": bool}``, ``{"gt"|"gte"|"lt"|"lte": number}``.
  The subject is text: its values and prefixes are strings, and it has no ranges.
- ``"any": [filter, ...]``: at least one of the filters holds (OR).
- ``"not": filter``: the filter does not hold.

A missing property (or subject) fails every condition on it except ``{"exists":
false}``; ``not`` inverts that, so ``{"not": {"properties.x": 1}}`` takes a message
without ``x``. A property of another type than the condition's fails it the same way
(``{"gt": 5}`` on a string is false, never an error). ``None`` as a subscription's filter
takes every message.

``validate`` is the one check, run when a subscription is made: a filter that passes
compiles on every database, so a publish never fails on a filter. ``compile_sql`` turns
a valid filter into a boolean SQL expression over a subject column and a properties
column, with data as parameters and each database's JSON functions from its dialect.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..exceptions import InvalidArgumentError
from .dialects import Dialect

OPERATORS = ("prefix", "exists", "gt", "gte", "lt", "lte")
_COMPARE = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
MAX_DEPTH = 8
MAX_CONDITIONS = 64
MAX_VALUES = 100
#: Values and operators in one filter: bounds its SQL parameters (SQLite allows 32766
#: in a statement; a publish puts the filters of many subscriptions in one).
MAX_TERMS = 256
MAX_TEXT = 256
_PROPERTY = re.compile(r'properties\.([^"\\\x00-\x1f]{1,128})')


def _fail(path: str, problem: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"filter{path}: {problem}")


def validate(value: Any) -> dict[str, Any] | None:
    """``value`` if it is a valid filter (or None), else InvalidArgumentError."""
    if value is None:
        return None
    counter = [0, 0]  # conditions, terms
    _check_filter(value, "", 1, counter)
    return value


def _check_filter(value: Any, path: str, depth: int, counter: list[int]) -> None:
    if depth > MAX_DEPTH:
        raise _fail(path, f"nested deeper than {MAX_DEPTH} levels")
    if not isinstance(value, dict) or not value:
        raise _fail(path, "must be a non-empty dict (None takes every message)")
    for key, cond in value.items():
        where = f"{path}[{key!r}]"
        if key == "any":
            if not isinstance(cond, list) or not cond:
                raise _fail(where, "must be a non-empty list of filters")
            for i, sub in enumerate(cond):
                _check_filter(sub, f"{where}[{i}]", depth + 1, counter)
        elif key == "not":
            _check_filter(cond, where, depth + 1, counter)
        elif key == "subject" or (isinstance(key, str) and _PROPERTY.fullmatch(key)):
            counter[0] += 1
            if counter[0] > MAX_CONDITIONS:
                raise _fail("", f"more than {MAX_CONDITIONS} conditions")
            _check_condition(cond, where, text_only=key == "subject")
            counter[1] += len(cond) if isinstance(cond, list | dict) else 1
            if counter[1] > MAX_TERMS:
                raise _fail("", f"more than {MAX_TERMS} values and operators in all")
        else:
            raise _fail(
                where,
                'keys are "subject", "properties.<name>" (no quote, backslash or control '
                'character, at most 128), "any" or "not"',
            )


def _check_condition(cond: Any, where: str, *, text_only: bool) -> None:
    if isinstance(cond, list):
        if not cond or len(cond) > MAX_VALUES:
            raise _fail(where, f"a list of values must hold 1 to {MAX_VALUES} of them")
        for item in cond:
            _check_value(item, where, text_only=text_only)
    elif isinstance(cond, dict):
        if not cond:
            raise _fail(where, "an operator dict must not be empty")
        for op, arg in cond.items():
            if op not in OPERATORS or (text_only and op in _COMPARE):
                allowed = ("prefix", "exists") if text_only else OPERATORS
                raise _fail(where, f"unknown operator {op!r} (one of {', '.join(allowed)})")
            if op == "prefix" and not (isinstance(arg, str) and len(arg) <= MAX_TEXT):
                raise _fail(where, f"prefix must be a string of at most {MAX_TEXT} characters")
            if op == "exists" and not isinstance(arg, bool):
                raise _fail(where, "exists must be true or false")
            if op in _COMPARE and not _is_number(arg):
                raise _fail(where, f"{op} must be a finite number")
    else:
        _check_value(cond, where, text_only=text_only)


def _check_value(value: Any, where: str, *, text_only: bool) -> None:
    if isinstance(value, str):
        if len(value) > MAX_TEXT or "\x00" in value:
            raise _fail(where, f"a string value must be at most {MAX_TEXT} characters, no NUL")
        return
    if text_only:
        raise _fail(where, "the subject is text: compare it with strings")
    if value is None or isinstance(value, bool) or _is_number(value):
        return
    raise _fail(where, f"a value must be a string, number, bool or None, not {value!r}")


def _is_number(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and abs(value) < 2**63
    )


def compile_sql(
    value: dict[str, Any], dialect: Dialect, subject: str, properties: str
) -> tuple[str, list[Any]]:
    """A valid filter as a boolean SQL expression (never NULL) over the columns or
    expressions ``subject`` (text) and ``properties`` (the dialect's JSON)."""
    parts: list[str] = []
    params: list[Any] = []
    for key, cond in value.items():
        if key == "any":
            compiled = [compile_sql(sub, dialect, subject, properties) for sub in cond]
            sql = "(" + " OR ".join(s for s, _ in compiled) + ")"
            args = [p for _, ps in compiled for p in ps]
        elif key == "not":
            inner, args = compile_sql(cond, dialect, subject, properties)
            sql = f"(NOT {inner})"
        else:
            sql, args = _condition(key, cond, dialect, subject, properties)
        parts.append(sql)
        params += args
    return "(" + " AND ".join(parts) + ")", params


def _condition(
    key: str, cond: Any, dialect: Dialect, subject: str, properties: str
) -> tuple[str, list[Any]]:
    name = None if key == "subject" else key[len("properties.") :]
    leaves: list[tuple[str, list[Any]]] = []
    joiner = " AND "
    if isinstance(cond, list):
        leaves = [_equals(name, v, dialect, subject, properties) for v in cond]
        joiner = " OR "
    elif isinstance(cond, dict):
        for op, arg in cond.items():
            if op == "exists":
                sql, args = (
                    (f"{subject} IS NOT NULL", [])
                    if name is None
                    else dialect.json_exists_sql(properties, name)
                )
                leaves.append((_boolean(sql) if arg else f"(NOT {_boolean(sql)})", args))
            elif op == "prefix":
                sql, args = (
                    dialect.text_prefix_sql(subject, arg)
                    if name is None
                    else dialect.json_prefix_sql(properties, name, arg)
                )
                leaves.append((_boolean(sql), args))
            else:
                sql, args = dialect.json_compare_sql(properties, str(name), _COMPARE[op], arg)
                leaves.append((_boolean(sql), args))
    else:
        leaves = [_equals(name, cond, dialect, subject, properties)]
    sql = "(" + joiner.join(s for s, _ in leaves) + ")"
    return sql, [p for _, ps in leaves for p in ps]


def _equals(
    name: str | None, value: Any, dialect: Dialect, subject: str, properties: str
) -> tuple[str, list[Any]]:
    if name is None:
        return _boolean(f"{subject} = %s"), [value]
    sql, args = dialect.json_equals_sql(properties, name, value)
    return _boolean(sql), args


def _boolean(sql: str) -> str:
    # A condition on a missing value is NULL in SQL; false here, so that NOT inverts it.
    return f"COALESCE(({sql}), FALSE)"
