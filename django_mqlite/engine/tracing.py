"""The engine's tracing hook: where a tracer (``django_mqlite.otel``, the ``[otel]``
extra) records every send, claim and settlement, whichever surface made it (Python API,
Tasks, a worker, HTTP, SQS), once.

``hook`` is None unless tracing is on: a send, claim or settlement then pays one
attribute read, and nothing here imports a tracing library. When set:

- ``hook.send(queue, messages, run, seqs)`` is called instead of ``run(messages)``: it
  opens the producer span, returns the messages with the trace context written into
  their properties, runs the send with them, and returns what ``run`` returned;
- ``hook.claims_and_settles()`` says whether claims and settlements are traced now
  (``MQLITE["TRACING_CLAIMS_AND_SETTLES"]``, and something would record them); only
  then does ``claim`` call ``hook.received`` for a claim that took messages, and a
  settlement read its messages' properties (their producers' trace context, in the
  settlement's transaction, before its statement moves or removes them) and call
  ``hook.settled``.

The consumer span of a handler call lives in the worker (``worker.tracing``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from django.db.backends.utils import CursorWrapper

from . import batches
from .dialects import Dialect
from .types import OutMessage, Settled

if TYPE_CHECKING:
    from .received import Received

T = TypeVar("T")

logger = logging.getLogger("django_mqlite.tracing")

#: A settlement's request: (seq, lock token, arguments), as ``receipts`` has it.
Request = tuple[int, str, str]


class Tracer(Protocol):
    def send(
        self,
        queue: str,
        messages: Sequence[OutMessage],
        run: Callable[[Sequence[OutMessage]], T],
        seqs: Callable[[T], list[int]],
    ) -> T: ...

    def claims_and_settles(self) -> bool: ...

    def received(self, queue: str, msgs: Sequence[Received], started_ns: int) -> None: ...

    def settled(
        self,
        queue: str,
        verb: str,
        requests: Sequence[Request],
        results: Sequence[Settled],
        carried: dict[int, dict[str, Any]],
        started_ns: int,
    ) -> None: ...


#: The installed tracer, or None (tracing off).
hook: Tracer | None = None


def watching() -> Tracer | None:
    """The hook when claims and settlements are traced now, else None."""
    tracer = hook
    return tracer if tracer is not None and tracer.claims_and_settles() else None


def now_ns() -> int:
    """A span's start: wall-clock time (a span is placed in real time, whatever the
    engine's clock says)."""
    return time.time_ns()


def carried_properties(
    cursor: CursorWrapper, dialect: Dialect, queue_id: int, seqs: Sequence[int]
) -> dict[int, dict[str, Any]]:
    """The properties (where a producer's trace context is carried) of the messages
    ``seqs`` of a queue, by seq: read for a traced settlement, before its statement."""
    wanted = sorted(set(seqs))
    if not wanted:
        return {}
    cursor.execute(
        "SELECT seq, properties FROM mqlite_message WHERE queue_id = %s "
        f"AND seq IN ({batches.placeholders(len(wanted))})",
        [queue_id, *wanted],
    )
    return {seq: dialect.load_json(props) or {} for seq, props in cursor.fetchall()}


def record_safely(record: Callable[[], None]) -> None:
    """Run ``record`` (a span for a claim or settlement that has committed), logging
    what it raises: a tracer that fails must not turn a committed claim into an error
    its caller would take for no delivery (a receive-and-delete's messages are gone)."""
    try:
        record()
    except Exception:
        logger.exception("recording a claim or settlement span failed")
