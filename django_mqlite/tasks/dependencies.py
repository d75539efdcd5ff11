"""Tasks that wait for others: ``task.using(depends_on=[...]).enqueue(...)``, the Tasks
form of ``mq.send(..., depends_on=[...])``::

    invoice = make_invoice.enqueue(order.pk)
    ship.using(depends_on=[invoice]).enqueue(order.pk)  # READY, runs once invoice is done

An item is a task result (``TaskResult``), a result id (``str``, as ``get_result``
takes it), or anything ``mq.send`` takes (a seq, a ``(queue, seq)`` pair, an
``mq.batch``, an ``mq.BatchRef``). This module only translates a result or its id to
the message it names (``mq.MessageRef``: the seq on the database the id says); what may
be depended on, and when the task runs, is the engine's (``engine/dependencies.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..engine import databases
from ..engine.types import MessageRef
from ..exceptions import InvalidArgumentError
from .compat import TaskResult
from .results import parse_id

#: The database a Tasks backend alias keeps its task queues on (``OPTIONS["database"]``,
#: None for the default), or False when the alias is not a django-mqlite backend.
DatabaseOf = Callable[[str], str | bool | None]


def references(
    depends_on: Sequence[Any], default_backend: str, database_of: DatabaseOf
) -> list[Any]:
    """``depends_on`` with each task result or result id made the message it names; a
    result id is read as ``default_backend``'s when it is a bare string."""
    out: list[Any] = []
    for item in depends_on:
        if isinstance(item, TaskResult):
            out.append(_message(item.id, database_of(item.backend)))
        elif isinstance(item, str):
            out.append(_message(item, database_of(default_backend)))
        else:
            out.append(item)
    return out


def _message(result_id: str, database: str | bool | None) -> MessageRef:
    seq = parse_id(result_id)
    if seq is None or database is False:
        raise InvalidArgumentError(
            f"depends_on: {str(result_id)[:100]!r} is not a result id of a django-mqlite "
            "Tasks backend"
        )
    _, at, alias = result_id.partition("@")
    default = databases.alias_of(database if isinstance(database, str) else None)
    return MessageRef(seq, using=alias if at else default)
