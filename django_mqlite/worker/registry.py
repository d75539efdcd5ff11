"""The consumer registry: which function handles which queue. Its documented import
path is ``django_mqlite.consumers``, which re-exports it; ``mq.consumer`` is its decorator.

Decorate a function in a ``consumers`` (or ``tasks``) module of an installed app::

    import django_mqlite as mq

    @mq.consumer("orders", timeout=30)
    def handle(msg: mq.Received) -> None:
        ...

A handler may be an ``async def`` coroutine function: the worker runs it on its event
loop (``worker.aio``) with the same rules.

The worker imports every installed app's ``consumers`` and ``tasks`` modules
(``autodiscover()``, like the admin's), then runs the handler of each queue it serves:

- returning completes the message;
- raising retries it with exponential backoff plus jitter, until the queue's
  ``max_delivery_count``, then it is dead-lettered with the traceback as its last error;
- raising ``mq.Reject(reason, description)`` dead-letters it at once;
- running past ``timeout`` seconds counts as a failed attempt (see ``worker``).

Programmatic registration, for integrations such as the Django Tasks backend::

    consumers.register("default", run_task, timeout=None)

An integration plugs into the worker here too, and only here (the worker imports no
integration): ``register_discovery(fn)`` has ``autodiscover()`` call ``fn(registry)``
after the apps' modules are imported (the Tasks backend registers its queues' handler);
``register_service(fn)`` has every worker process start ``fn(using)``'s background
thread, when it returns one (the periodic schedules' ticker); ``register_declarations(fn)``
says which queues a worker creates at start (``MQLITE["QUEUES"]`` by default).

A handler may settle its message itself (``msg.complete()``, ``msg.abandon(...)``,
``msg.reject(...)``, ``msg.defer()``): the message records the verb in
``msg.settled`` and the worker then leaves it alone. Code that settles through the
module-level functions instead (for instance ``complete_with_result``) sets
``msg.settled = "complete"`` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from ..engine.arguments import check_queue_name

Handler = Callable[[Any], Any]


class ConsumerConflictError(ImproperlyConfigured):
    """A queue already has a different handler (system check ``django_mqlite.E020``)."""


@dataclass(frozen=True)
class Consumer:
    """A queue's handler and its options. ``timeout`` is seconds, or None for no limit.

    Integrations (the Django Tasks backend) may also set:

    - ``timeout_for(msg)``: the timeout of one message, overriding ``timeout``;
    - ``give_up(msg, error)``: called instead of the worker's abandon-with-backoff when
      the worker gives up on a running handler (timeout, shutdown); it must settle the
      message (``LockLostError`` is logged);
    - ``queue_options``: the worker creates the queue with these options at start when
      it does not exist yet.

    ``resumable``: at a worker's shutdown the handler is asked to stop
    (``msg.stop_requested``; an ``async def`` one is cancelled) and its message is given
    back to resume from its last checkpoint, its delivery not counted (``running``).
    """

    queue: str
    func: Handler
    timeout: float | None = None
    timeout_for: Callable[[Any], float | None] | None = None
    give_up: Callable[[Any, str], None] | None = None
    queue_options: Mapping[str, Any] | None = None
    resumable: bool = False

    def timeout_of(self, msg: Any) -> float | None:
        if self.timeout_for is not None:
            return self.timeout_for(msg)
        return self.timeout

    @property
    def name(self) -> str:
        return f"{getattr(self.func, '__module__', '?')}.{getattr(self.func, '__qualname__', '?')}"


class Registry:
    """Handlers by queue name. One handler per queue."""

    def __init__(self) -> None:
        self._consumers: dict[str, Consumer] = {}

    def register(
        self, queue: str, func: Handler, *, timeout: float | None = None, **hooks: Any
    ) -> Consumer:
        """Register ``func`` for ``queue``. Registering the same function again (a module
        imported twice) replaces it; a different function for a taken queue is an error.
        ``hooks`` are the integration fields of ``Consumer``."""
        check_queue_name(queue)
        if timeout is not None and (
            not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0
        ):
            raise ImproperlyConfigured(
                f"consumer timeout must be a positive number of seconds, not {timeout!r}"
            )
        entry = Consumer(queue, func, None if timeout is None else float(timeout), **hooks)
        current = self._consumers.get(queue)
        if current is not None and current.name != entry.name:
            raise ConsumerConflictError(
                f"queue {queue!r} already has a consumer ({current.name}); "
                f"cannot also register {entry.name}"
            )
        self._consumers[queue] = entry
        return entry

    def unregister(self, queue: str) -> None:
        self._consumers.pop(queue, None)

    def get(self, queue: str) -> Consumer | None:
        return self._consumers.get(queue)

    def queues(self) -> list[str]:
        return sorted(self._consumers)

    def select(self, queues: Iterable[str] | None) -> dict[str, Consumer]:
        """The consumers of ``queues`` (all registered when None); unknown names raise."""
        if not queues:
            return dict(sorted(self._consumers.items()))
        missing = [q for q in queues if q not in self._consumers]
        if missing:
            raise ImproperlyConfigured(
                f"no consumer is registered for {', '.join(map(repr, missing))} "
                f"(registered: {', '.join(self.queues()) or 'none'})"
            )
        return {q: self._consumers[q] for q in queues}


registry = Registry()


def register(queue: str, func: Handler, *, timeout: float | None = None, **hooks: Any) -> Consumer:
    """Register ``func`` as the handler of ``queue`` in the global registry."""
    return registry.register(queue, func, timeout=timeout, **hooks)


def consumer(
    queue: str, *, timeout: float | None = None, resumable: bool = False
) -> Callable[[Handler], Handler]:
    """Decorator: ``@mq.consumer("orders", timeout=30)``. Returns the function unchanged,
    so decorators stack to serve several queues with one function. ``resumable=True``:
    see ``Consumer``."""

    def decorate(func: Handler) -> Handler:
        register(queue, func, timeout=timeout, resumable=bool(resumable))
        return func

    return decorate


# Integrations: what the worker runs besides the handlers (see the module docstring).
Discovery = Callable[[Registry], object]
#: ``service(using)`` -> a thread-like object (``start()``, ``stop()``) or None (nothing
#: to run); ``using`` is the worker's database alias, None for every queue database.
Service = Callable[[str | None], Any]

_discoveries: list[Discovery] = []
_services: list[Service] = []
_declarations: list[Callable[[], Any]] = []


def register_discovery(fn: Discovery) -> None:
    """Have ``autodiscover()`` call ``fn(registry)`` once the apps' modules are imported."""
    if fn not in _discoveries:
        _discoveries.append(fn)


def register_service(fn: Service) -> None:
    """Have every worker process start the background thread ``fn(using)`` returns."""
    if fn not in _services:
        _services.append(fn)


def register_declarations(fn: Callable[[], Any]) -> None:
    """``fn()`` gives the queues a worker creates or updates at start (the last one
    registered wins)."""
    if fn not in _declarations:
        _declarations.append(fn)


def discoveries() -> list[Discovery]:
    return list(_discoveries)


def services() -> list[Service]:
    return list(_services)


def declared_queues() -> Any:
    """The queues a worker creates or updates at start: the registered declarations, or
    ``MQLITE["QUEUES"]`` as it stands."""
    if _declarations:
        return _declarations[-1]()
    from ..conf import mqlite_settings

    return mqlite_settings.QUEUES
