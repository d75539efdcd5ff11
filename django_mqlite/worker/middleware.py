"""``MQLITE["MIDDLEWARE"]``: callables wrapping every handler call, consumers and Django
Tasks alike (the task runner is the consumer of a Tasks queue).

Each entry is the dotted path of a factory ``factory(handler) -> handler``, called once
per consumer; the handler it gets and the one it returns take the message
(``mq.Received``) and return what the handler returns, or raise what it raises. The
first entry is the outermost, as in Django's ``MIDDLEWARE``::

    def tenant_middleware(handler):
        def wrapper(msg):
            with tenant_context(msg.properties.get("tenant")):
                return handler(msg)
        return wrapper

Sync and async: a factory is sync-only unless it says otherwise with Django's own
markers (``django.utils.decorators.sync_and_async_middleware`` / ``async_only_middleware``,
i.e. ``sync_capable`` / ``async_capable`` attributes). A hybrid factory gets the handler
in the consumer's own mode (``asgiref.sync.iscoroutinefunction(handler)`` says which)
and must return one in that mode; where a factory cannot take the mode at hand the chain
adapts the handler with ``sync_to_async``/``async_to_sync`` as Django does for request
middleware, and the chain as a whole keeps the consumer's mode (a coroutine consumer
stays a coroutine on the worker's event loop, so its timeout still cancels it).

With no middleware configured (and tracing off) the worker calls the consumer's function
itself: nothing is added to the hot path. With tracing on, the consumer span
(``worker.tracing``) wraps the whole chain. Bad dotted paths are system check
``django_mqlite.E007``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from asgiref.sync import async_to_sync, iscoroutinefunction, sync_to_async
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from ..conf import mqlite_settings
from . import tracing
from .registry import Consumer, Handler

Factory = Callable[[Handler], Handler]

_lock = threading.Lock()
#: (consumer id, middleware paths, tracer id) -> (consumer, wrapped handler); the consumer is kept
#: so that an id is never reused for another consumer while cached.
_chains: dict[tuple[int, tuple[str, ...], int], tuple[Consumer, Handler]] = {}


def paths() -> tuple[str, ...]:
    """``MQLITE["MIDDLEWARE"]`` as a tuple of dotted paths; ImproperlyConfigured when it
    is not a list of strings."""
    value = mqlite_settings.MIDDLEWARE
    if not isinstance(value, list | tuple) or not all(isinstance(p, str) for p in value):
        raise ImproperlyConfigured('MQLITE["MIDDLEWARE"] must be a list of dotted paths')
    return tuple(value)


def load(dotted: Sequence[str]) -> list[Factory]:
    """Import each factory; ImproperlyConfigured naming the first that does not import,
    is not callable, or can run neither sync nor async."""
    out = []
    for path in dotted:
        try:
            factory = import_string(path)
        except ImportError as exc:
            raise ImproperlyConfigured(
                f'MQLITE["MIDDLEWARE"]: cannot import {path!r} ({exc})'
            ) from exc
        if not callable(factory):
            raise ImproperlyConfigured(f'MQLITE["MIDDLEWARE"]: {path!r} is not callable')
        if not _can_sync(factory) and not _can_async(factory):
            raise ImproperlyConfigured(
                f'MQLITE["MIDDLEWARE"]: {path!r} is neither sync_capable nor async_capable'
            )
        out.append(factory)
    return out


def _can_sync(factory: Any) -> bool:
    return bool(getattr(factory, "sync_capable", True))


def _can_async(factory: Any) -> bool:
    return bool(getattr(factory, "async_capable", False))


def _adapt(handler: Handler, is_async: bool, want_async: bool) -> Handler:
    if is_async == want_async:
        return handler
    if want_async:
        return sync_to_async(handler, thread_sensitive=True)
    return async_to_sync(handler)


def chain(func: Handler, factories: Sequence[Factory]) -> Handler:
    """``func`` wrapped by ``factories`` (the first outermost), in ``func``'s mode."""
    own = iscoroutinefunction(func)
    handler, is_async = func, own
    for factory in reversed(factories):
        both = _can_sync(factory) and _can_async(factory)
        mode = is_async if both else _can_async(factory)
        handler = factory(_adapt(handler, is_async, mode))
        if handler is None:
            raise ImproperlyConfigured(f"middleware {factory!r} returned None, not a handler")
        is_async = mode
    return _adapt(handler, is_async, own)


def handler_of(consumer: Consumer) -> Handler:
    """What the worker calls for a message of ``consumer``: its function, wrapped by
    ``MQLITE["MIDDLEWARE"]`` when that is set (built once per consumer and setting)."""
    dotted = mqlite_settings.MIDDLEWARE
    tracer = tracing.hook
    if not dotted and tracer is None:
        return consumer.func
    key = (id(consumer), tuple(dotted), id(tracer))
    found = _chains.get(key)
    if found is not None and found[0] is consumer:
        return found[1]
    handler = chain(consumer.func, load(paths()) if dotted else [])
    if tracer is not None:  # the consumer span, outermost: around the middleware too
        handler = tracer.wrap(handler)
    with _lock:
        _chains[key] = (consumer, handler)
    return handler
