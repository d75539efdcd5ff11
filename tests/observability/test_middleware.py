"""``MQLITE["MIDDLEWARE"]``: factories wrapping every handler call, in order, for sync
and async consumers and for Django Tasks, in the worker and in ``testing.drain``;
validated by system check ``django_mqlite.E007``."""

from __future__ import annotations

import contextvars
from typing import Any

import pytest
from asgiref.sync import iscoroutinefunction
from django.test import override_settings
from django.utils.decorators import sync_and_async_middleware

import django_mqlite as mq
from django_mqlite import checks
from django_mqlite.consumers import Consumer, Registry
from django_mqlite.testing import drain
from django_mqlite.worker import middleware
from tests.support.inprocess import burst

pytestmark = pytest.mark.django_db(transaction=True)

SEEN: list[Any] = []
TENANT: contextvars.ContextVar[str | None] = contextvars.ContextVar("tenant", default=None)
HERE = "tests.observability.test_middleware"


def outer(handler: Any) -> Any:
    def wrapper(msg: mq.Received) -> Any:
        SEEN.append(("outer in", msg.queue, msg.seq))
        try:
            return handler(msg)
        finally:
            SEEN.append(("outer out", msg.queue, msg.seq))

    return wrapper


@sync_and_async_middleware
def tenant(handler: Any) -> Any:
    """A hybrid factory: the handler's own mode, a context variable set around it."""
    if iscoroutinefunction(handler):

        async def awrapper(msg: mq.Received) -> Any:
            token = TENANT.set(msg.properties.get("tenant"))
            try:
                SEEN.append(("tenant async", msg.seq))
                return await handler(msg)
            finally:
                TENANT.reset(token)

        return awrapper

    def wrapper(msg: mq.Received) -> Any:
        token = TENANT.set(msg.properties.get("tenant"))
        try:
            SEEN.append(("tenant sync", msg.seq))
            return handler(msg)
        finally:
            TENANT.reset(token)

    return wrapper


def failing_middleware(handler: Any) -> Any:
    def wrapper(msg: mq.Received) -> Any:
        raise RuntimeError("middleware says no")

    return wrapper


NOT_CALLABLE = 3
CHAIN = [f"{HERE}.outer", f"{HERE}.tenant"]


@pytest.fixture(autouse=True)
def _clear() -> None:
    SEEN.clear()


@override_settings(MQLITE={"MIDDLEWARE": CHAIN})
def test_sync_consumer_runs_inside_the_chain_in_order() -> None:
    mq.create_queue("mw1")
    seq = mq.send("mw1", "x", properties={"tenant": "acme"})
    registry = Registry()

    def handle(msg: mq.Received) -> None:
        SEEN.append(("handler", TENANT.get()))

    registry.register("mw1", handle)
    burst(registry, "mw1")
    assert SEEN == [
        ("outer in", "mw1", seq),
        ("tenant sync", seq),
        ("handler", "acme"),
        ("outer out", "mw1", seq),
    ]
    assert mq.stats("mw1").totals["completed"] == 1


@override_settings(MQLITE={"MIDDLEWARE": CHAIN})
def test_async_consumer_stays_async_inside_the_chain() -> None:
    mq.create_queue("mw2")
    seq = mq.send("mw2", "x", properties={"tenant": "beta"})
    registry = Registry()

    async def handle(msg: mq.Received) -> None:
        SEEN.append(("handler", TENANT.get()))

    registry.register("mw2", handle)
    [consumer] = registry.select(["mw2"]).values()
    assert iscoroutinefunction(middleware.handler_of(consumer))
    burst(registry, "mw2")
    assert SEEN == [
        ("outer in", "mw2", seq),
        ("tenant async", seq),
        ("handler", "beta"),
        ("outer out", "mw2", seq),
    ]


@override_settings(MQLITE={"MIDDLEWARE": [f"{HERE}.failing_middleware"]})
def test_a_middleware_that_raises_fails_the_attempt() -> None:
    mq.create_queue("mw3", max_delivery_count=1)
    mq.send("mw3", "x")
    registry = Registry()
    registry.register("mw3", lambda msg: SEEN.append("handler ran"))
    burst(registry, "mw3")
    assert SEEN == []
    [dead] = mq.peek("mw3", state="dead_lettered")
    assert "middleware says no" in (dead.last_error or "")


@override_settings(MQLITE={"MIDDLEWARE": CHAIN})
def test_tasks_run_inside_the_chain(run_worker: Any) -> None:
    from tests.workerproject.recorder.tasks import add

    result = add.enqueue(2, 3)
    run_worker()
    assert add.get_result(result.id).return_value == 5
    assert [s[0] for s in SEEN] == ["outer in", "tenant sync", "outer out"]
    assert SEEN[0][1] == "tasks"


@override_settings(MQLITE={"MIDDLEWARE": CHAIN})
def test_drain_runs_the_chain_too() -> None:
    mq.create_queue("mw4")
    mq.send("mw4", "x")
    from django_mqlite.consumers import registry

    registry.register("mw4", lambda msg: SEEN.append("handler"))
    try:
        assert drain("mw4")["completed"] == 1
    finally:
        registry.unregister("mw4")
    assert [s if isinstance(s, str) else s[0] for s in SEEN] == [
        "outer in",
        "tenant sync",
        "handler",
        "outer out",
    ]


@override_settings(MQLITE={"TRACING": False})
def test_no_middleware_calls_the_function_itself() -> None:
    def handle(msg: mq.Received) -> None:
        pass

    assert middleware.handler_of(Consumer("q", handle)) is handle


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (["no.such.module.factory"], "cannot import 'no.such.module.factory'"),
        ([f"{HERE}.NOT_CALLABLE"], "is not callable"),
        ("tests.observability.test_middleware.outer", "must be a list of dotted paths"),
    ],
)
def test_bad_middleware_is_a_system_check_error(value: Any, says: str) -> None:
    with override_settings(MQLITE={"MIDDLEWARE": value}):
        [error] = checks.check_middleware()
    assert error.id == "django_mqlite.E007"
    assert says in error.msg
    assert error.hint


def test_good_middleware_passes_the_check() -> None:
    with override_settings(MQLITE={"MIDDLEWARE": CHAIN}):
        assert checks.check_middleware() == []
