"""A chain's steps as the engine sends them (``chain`` has the rule): the message of a
step, with the previous step's result, and the enqueue of the next step by the
settlement that finishes its predecessor's node (``tally``).

A task step's result goes into its task's arguments, which only the Tasks integration
can sign: the engine asks it (``task_steps``), as it asks for task subscriptions."""

from __future__ import annotations

import base64
import json
from typing import Any, Protocol

from django.db.backends.utils import CursorWrapper

from ..exceptions import MQLiteError
from . import nodes, send
from .dialects import Dialect
from .types import OutMessage


class TaskSteps(Protocol):
    """What the Tasks integration does for a chain step that is a task call (the
    engine knows no task, so it asks): the step's envelope with the previous step's
    result as its first argument, signed again."""

    def with_result(self, body: bytes, result: Any, *, properties: Any, priority: int) -> bytes:
        """``body`` (a signed task envelope) calling its task with ``result`` first."""


#: Installed by the Tasks integration when the app is ready (``tasks/plugin.py``).
task_steps: TaskSteps | None = None


def enqueue_next(
    cursor: CursorWrapper, dialect: Dialect, steps: list[Any], previous: int | None, result: Any
) -> int:
    """Enqueue the first of a chain's remaining ``steps`` (``result``: the completed
    step's) as a child of a node of its own that carries the rest; returns its seq."""
    first, rest = steps[0], steps[1:]
    fresh: list[int] = []
    msg = step_message(first, result, previous)
    seq = send.enqueue_in(cursor.db.alias, first["queue"], msg, fresh)
    if rest and seq not in fresh:
        # Producer dedup gave back an earlier message: it is not this chain's to carry.
        raise MQLiteError(
            f"step on {first['queue']!r} collapsed into message {seq} (its message_id was "
            "sent before); the chain stops there"
        )
    if rest:
        nodes.make(cursor, dialect, seq, json.dumps(rest))
    return seq


def step_message(spec: dict[str, Any], result: Any, previous: int | None) -> OutMessage:
    """A chain step's message (``spec`` as stored): a task call gets ``result`` as its
    first argument (``task_steps``), any other message in its properties
    (``chain_result``); both carry the seq of the step that completed
    (``chain_previous``)."""
    body = base64.b64decode(spec["body"])
    props = dict(spec["properties"] or {})
    if spec.get("task"):
        if task_steps is None:
            raise MQLiteError("a task step needs the Tasks integration (django_mqlite's app)")
        body = task_steps.with_result(
            body, result, properties=spec["properties"], priority=spec["priority"]
        )
    else:
        props["chain_result"] = result
    props["chain_previous"] = previous
    return OutMessage(
        body,
        content_type=spec["content_type"],
        message_id=spec["message_id"],
        group_id=spec["group_id"],
        subject=spec["subject"],
        properties=props,
        correlation_id=spec["correlation_id"],
        reply_to=spec["reply_to"],
        priority=spec["priority"],
        delay=None if spec["delay_ms"] is None else spec["delay_ms"] / 1000,
        ttl=None if spec["ttl_ms"] is None else spec["ttl_ms"] / 1000,
    )
