"""The engine's tracing hook: where a tracer (``django_mqlite.otel``, the ``[otel]``
extra) wraps every send, whichever surface made it (Python API, Tasks, HTTP, SQS).

``hook`` is None unless tracing is on: a send then pays one attribute read, and nothing
here imports a tracing library. When set, ``hook.send(queue, messages, run)`` is called
instead of ``run(messages)``: it opens the producer span, returns the messages with the
trace context written into their properties, runs the send with them, and returns what
``run`` returned. The consumer side lives in the worker (``worker.tracing``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from .types import OutMessage

T = TypeVar("T")


class SendTracer(Protocol):
    def send(
        self,
        queue: str,
        messages: Sequence[OutMessage],
        run: Callable[[Sequence[OutMessage]], T],
        seqs: Callable[[T], list[int]],
    ) -> T: ...


#: The installed tracer, or None (tracing off).
hook: SendTracer | None = None
