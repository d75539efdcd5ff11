"""Helpers for testing your own consumers, tasks and producers (see ``docs/testing.md``).

- ``drain(*queues)`` runs the registered consumers and Django Tasks of those queues in
  the calling thread, on its database connection (so inside a test's transaction), with
  the worker's own steps: claim with a lease, run the handler, complete it or retry it
  with backoff, ``mq.Reject`` and exhausted messages dead-lettered, task signals sent.
- ``sent(queue, **filters)`` lists the messages waiting in a queue, for assertions.
- ``tick()`` runs the periodic schedules' ticker once, as a worker does every second.

With pytest-django installed, the ``mqlite`` fixture bundles them with a frozen clock.

May import: ``engine``, ``worker`` (its registry and the same steps the worker takes),
``tasks`` (the periodic ticker), ``conf`` and ``exceptions``. Only users' tests import it.
"""

from __future__ import annotations

import random
import time
from typing import Any

from asgiref.sync import async_to_sync, iscoroutinefunction

from ..conf import current
from ..engine import arguments, databases
from ..engine.claim import receive
from ..engine.inspect import peek
from ..engine.queues import create_queue, get_queue
from ..engine.types import Outcome, Peeked, State
from ..exceptions import QueueNotFoundError, Snooze
from ..worker import handling, middleware, tracing
from ..worker.delivery import Delivery
from ..worker.discovery import autodiscover
from ..worker.registry import Consumer, registry
from ..worker.retry import backoff_delay

__all__ = ["drain", "sent", "tick"]

_rng = random.Random()  # noqa: S311 - jitter, not security
_PEEKABLE_FIELDS = {
    "seq",
    "message_id",
    "group_id",
    "subject",
    "properties",
    "correlation_id",
    "reply_to",
    "content_type",
    "priority",
    "delivery_count",
    "state",
}


def _call_inline(d: Delivery) -> Any:
    """Run the handler in this thread; a coroutine handler through ``async_to_sync``, so
    its thread-sensitive ORM calls come back to this thread and its connection. The
    handler is wrapped by ``MQLITE["MIDDLEWARE"]`` as in the worker."""
    func = middleware.handler_of(d.consumer)
    if iscoroutinefunction(func):
        return async_to_sync(func)(d.msg)
    return func(d.msg)


def _backoff(attempt: int) -> float:
    conf = current()
    return backoff_delay(
        attempt, base_s=conf.retry_backoff_base_s, cap_s=conf.retry_backoff_cap_s, rng=_rng
    )


def _served(queues: tuple[str, ...], alias: str) -> dict[str, Consumer]:
    """The consumers to run: queues a Tasks backend declares are created like the worker
    creates them; with no queue named, queues that do not exist are skipped."""
    autodiscover()
    out = {}
    for name, consumer in registry.select(list(queues)).items():
        try:
            get_queue(name, using=alias)
        except QueueNotFoundError:
            if consumer.queue_options is not None:
                create_queue(name, using=alias, **consumer.queue_options)
            elif queues:
                raise
            else:
                continue
        out[name] = consumer
    return out


#: How ``drain`` counts each settlement outcome (``Received.outcome``, as the engine's
#: verb answered it): a deferred or snoozed message, a lost lease or a replay is not
#: counted.
_COUNTED = {
    Outcome.COMPLETED: "completed",
    Outcome.RETRIED: "retried",
    Outcome.SCHEDULED: "retried",
    Outcome.DEAD_LETTERED: "dead_lettered",
    Outcome.FORWARDED: "dead_lettered",
}


def drain(
    *queues: str, max_messages: int | None = None, using: str | None = None
) -> dict[str, Any]:
    """Run the consumers and Django Tasks of ``queues`` (every registered queue when
    none is named) in this thread until nothing is claimable now, or ``max_messages``
    have been handled. Retries scheduled in the future are left for the caller to reach
    by advancing ``mq.clock``; handler timeouts are not enforced here.

    Returns ``{"completed": n, "retried": n, "dead_lettered": n, "errors": [...]}``,
    counted from what the settle verbs answered (the worker's own verbs, so a message
    dead-lettered on its last attempt is forwarded to ``forward_dead_letters_to`` here
    as in production, and counted as dead-lettered); ``errors`` are the exceptions the
    handlers raised (tasks' included), in order. A message the handler settled through
    the module-level functions (``mq.complete(...)``) rather than its own methods is
    not counted.
    """
    if max_messages is not None:
        arguments.check_int(max_messages, "max_messages", 0, 2**31)
    alias = databases.alias_of(using)
    consumers = _served(queues, alias)
    names = list(consumers)
    result: dict[str, Any] = {"completed": 0, "retried": 0, "dead_lettered": 0, "errors": []}
    handled = 0
    turn = 0
    while names and (max_messages is None or handled < max_messages):
        for i in range(len(names)):
            name = names[(turn + i) % len(names)]
            got = receive(name, using=alias)
            if got:
                turn = (turn + i + 1) % len(names)
                break
        else:
            break
        _handle(Delivery(got[0], consumers[name], 0.0, time.monotonic()), alias, result)
        handled += 1
    return result


def _handle(d: Delivery, alias: str, result: dict[str, Any]) -> None:
    msg = d.msg
    failure, tb = handling.run_handler(d, call=_call_inline)
    if isinstance(failure, KeyboardInterrupt):
        raise failure  # in the calling thread this is a real Ctrl-C: stop the drain
    if (failure is not None and not isinstance(failure, Snooze)) or msg.failure is not None:
        result["errors"].append(failure or msg.failure)
    if msg.settled is None:
        if failure is None:
            handling.complete(msg, alias)
        else:
            handling.settle_failure(msg, failure, tb, using=alias, backoff=_backoff)
    tracing.finish(msg, msg.outcome)
    counted = None if msg.outcome is None else _COUNTED.get(msg.outcome.outcome)
    if counted is not None:
        result[counted] += 1


def sent(queue: str, *, using: str | None = None, **filters: Any) -> list[Peeked]:
    """The messages waiting in ``queue`` (active or scheduled), oldest first.

    ``filters`` compare by equality: a message field (``subject``, ``group_id``,
    ``message_id``, ``correlation_id``, ``reply_to``, ``content_type``, ``priority``,
    ``properties``, ``delivery_count``, ``seq``, ``state``); ``body`` (the decoded body:
    JSON value, text, or bytes); any other name is a key of a JSON object body
    (``sent("payments", order=42)``); a message without that key does not match.
    """
    alias = databases.alias_of(using)
    waiting: list[Peeked] = []
    for state in (State.ACTIVE, State.SCHEDULED):
        after = 0
        while True:
            page = peek(queue, state=state, limit=arguments.MAX_PEEK, after_seq=after, using=alias)
            waiting.extend(page)
            if len(page) < arguments.MAX_PEEK:
                break
            after = page[-1].seq
    waiting.sort(key=lambda p: p.seq)
    return [p for p in waiting if _matches(p, filters)]


_MISSING = object()


def _decoded(p: Peeked) -> Any:
    ctype = (p.content_type or "").split(";")[0].strip()
    if ctype == "application/json":
        return p.json()
    if ctype.startswith("text/"):
        return p.text()
    return p.body


def _matches(p: Peeked, filters: dict[str, Any]) -> bool:
    body: Any = _MISSING
    for key, want in filters.items():
        if key in _PEEKABLE_FIELDS:
            if getattr(p, key) != want:
                return False
            continue
        if body is _MISSING:
            body = _decoded(p)
        if key == "body":
            if body != want:
                return False
        elif not isinstance(body, dict) or body.get(key, _MISSING) != want:
            return False
    return True


def tick(*, using: str | None = None) -> int:
    """Run the periodic schedules' ticker once (``MQLITE["PERIODIC"]``), as every worker
    does each second; returns how many occurrences it enqueued. A schedule seen for the
    first time only records its latest past occurrence (it runs from the next one)."""
    from ..tasks.periodic import Ticker

    return Ticker(using=using).tick()
