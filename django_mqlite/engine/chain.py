"""Chains: ``mq.Step(q1, body).then(mq.Step(q2, body)).then(...).send()``: each step is
enqueued by the completion of the previous one, in that completion's transaction,
with the previous step's result (the result its completion carried: a task's return
value, a consumer's ``msg.completion = mq.Completion(result=...)``).

The first step is sent at once (the ordinary send: admission, dedup, lines); when more
follow, it gets a node of its own (``nodes``) that carries the remaining steps, stored
as a batch's callbacks are (admitted messages, ``batch.stored``). The step's end is
counted on its node by ``tally`` like any batch child's, and the node finishes once: when
the step completed, the next step is enqueued then (``tally.STEP_BIT`` marks it fired,
so at most once, whatever redelivery, lease expiry or worker crash came before) with a
node of its own for the rest. A plain message's ``properties["chain_result"]`` holds the
previous result; a task step (the Tasks form, ``tasks/chains.py``) gets it as its first
argument, its envelope signed again by the Tasks integration (``chain_steps.task_steps``).
Either carries ``chain_previous``, the seq of the step that completed.

A step that fails stops the chain: dead-lettered, it stays a child of its node, which
keeps the remaining steps (the admin's message page shows them), and a redrive of it
resumes the chain when it completes; a cancelled or purged step ends it. A step whose
next cannot be enqueued any more (its queue deleted, the result too large for the
next message's properties) records why in the node's ``callback_error``.

Every step's queue must exist and live on the first step's database, and every later
step must be sendable as it will be (``QueueNotFoundError``, ``CrossDatabaseError``,
``InvalidArgumentError`` when the chain is sent, with nothing written). Later steps take
``delay=`` (their time is the previous step's end), never ``scheduled_at``, a
``unique_key`` or ``depends_on``; the first step takes every keyword of ``mq.send``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from django.db import transaction

from ..exceptions import CrossDatabaseError, InvalidArgumentError
from . import batch, chain_steps, databases, nodes, send
from .admission import admit
from .clock import now_ms
from .prepare import for_queue
from .rows import load_queue
from .types import Callback

#: The most steps a chain may have.
MAX_STEPS = 100


class Step(Callback):
    """A message to send as a step of a chain: a queue, a body and the keywords of
    ``mq.send``. ``a.then(b)`` is the chain of ``a`` then ``b``."""

    #: A task call (its body a signed envelope), and the database its backend puts
    #: its queue on: set by the Tasks form (``task_step``).
    task: bool
    using: str | None

    def __init__(self, queue: str, body: Any, **keywords: Any) -> None:
        super().__init__(queue, body, **keywords)
        object.__setattr__(self, "task", False)
        object.__setattr__(self, "using", None)

    def then(self, step: Step) -> Chain:
        return Chain([self]).then(step)


def task_step(queue: str, body: dict[str, Any], using: str | None, **keywords: Any) -> Step:
    """A step that is a task call (its body a signed envelope): the Tasks form's
    ``step``. Its result travels as the next task's first argument."""
    s = Step(queue, body, **keywords)
    object.__setattr__(s, "task", True)
    object.__setattr__(s, "using", using)
    return s


class Chain:
    """Steps to run one after the other (see the module docstring)."""

    def __init__(self, steps: Sequence[Step]) -> None:
        if not isinstance(steps, list | tuple) or not steps:
            raise InvalidArgumentError("a chain needs at least one step")
        for s in steps:
            if not isinstance(s, Step):
                raise InvalidArgumentError("a chain's steps must be mq.Step values")
        if len(steps) > MAX_STEPS:
            raise InvalidArgumentError(f"a chain has at most {MAX_STEPS} steps")
        self.steps: tuple[Step, ...] = tuple(steps)

    def then(self, step: Step) -> Chain:
        return Chain([*self.steps, step])

    def send(self, *, using: str | None = None) -> int:
        """Send the first step (joining the caller's transaction, as ``mq.send``) with
        the rest to follow; returns the first step's seq."""
        first, rest = self.steps[0], self.steps[1:]
        alias = databases.alias_of(using or first.using, first.queue)
        for s in rest:
            there = databases.alias_of(using or s.using, s.queue)
            if there != alias:
                raise CrossDatabaseError(
                    f"step on {s.queue!r} lives on database {there!r}; the chain's first "
                    f"step lives on {alias!r}"
                )
        now = now_ms()
        specs = [{**batch.stored(s, now), "task": s.task} for s in rest]
        with transaction.atomic(using=alias):
            cursor, dialect = databases.ctx(alias)
            for spec in specs:
                checked = chain_steps.step_message({**spec, "task": False}, None, 2**63 - 1)
                for_queue(admit(checked, now), load_queue(cursor, spec["queue"]))
            msg = first.message
            options = {f.name: getattr(msg, f.name) for f in fields(msg) if f.name != "body"}
            seq = send.send(first.queue, msg.body, using=alias, **options)
            if specs:
                _start(cursor, dialect, seq, json.dumps(specs))
        return seq


def _start(cursor: Any, dialect: Any, seq: int, steps: str) -> None:
    """Give the first step its node (with the remaining ``steps``); a send that collapsed
    into a message that may not start a chain (producer dedup) is refused."""
    cursor.execute(
        "SELECT batch_id, delivery_count, state FROM mqlite_message WHERE seq = %s "
        f"{dialect.row_lock_sql(exclusive=True)}",
        [seq],
    )
    batch_id, delivered, state = cursor.fetchone()
    if batch_id is not None or delivered or state not in ("active", "scheduled", "waiting"):
        raise InvalidArgumentError(
            f"the chain's first step collapsed into message {seq} (producer dedup), which "
            "is delivered or in a batch or chain already; nothing was written"
        )
    nodes.make(cursor, dialect, seq, steps)
