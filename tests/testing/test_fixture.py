"""The ``mqlite`` fixture (registered by the ``pytest11`` entry point) and its plugin."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest
from django.db import transaction

import django_mqlite as mq
from django_mqlite.testing.pytest_plugin import MQLiteFixture


def test_the_fixture_drains_sends_and_freezes_the_clock(mqlite: Any, register: Any) -> None:
    assert isinstance(mqlite, MQLiteFixture)
    mq.create_queue("orders", max_delivery_count=2)
    register("orders", lambda msg: 1 / 0 if msg.json()["fail"] else None)
    mq.send("orders", {"fail": False, "order": 1})
    mq.send("orders", {"fail": True, "order": 2})
    assert [p.json()["order"] for p in mqlite.sent("orders", fail=True)] == [2]
    t0 = mqlite.clock.now()
    first = mqlite.drain("orders")
    assert (first["completed"], first["retried"]) == (1, 1)
    assert mqlite.clock.now() == t0  # frozen
    assert mqlite.drain("orders")["retried"] == 0  # its retry waits for the clock
    mqlite.advance(300)
    assert mqlite.drain("orders")["dead_lettered"] == 1
    assert mqlite.sent("orders") == []


def test_outbox_send_inside_atomic_then_drain(mqlite: Any, register: Any) -> None:
    """pytest-django's default ``django_db`` wraps the test in a transaction: the send
    inside ``atomic()`` and the drain share it, with no ``transaction=True`` needed."""
    mq.create_queue("outbox")
    handled: list[Any] = []
    register("outbox", lambda msg: handled.append(msg.json()))
    with transaction.atomic():
        mq.send("outbox", {"order": 7})
    try:
        with transaction.atomic():
            mq.send("outbox", {"order": 8})
            raise RuntimeError("the order failed")
    except RuntimeError:
        pass
    assert mqlite.drain("outbox")["completed"] == 1
    assert handled == [{"order": 7}]


@pytest.mark.django_db(transaction=True)
def test_the_fixture_in_a_transaction_true_test(mqlite: Any, register: Any) -> None:
    mq.create_queue("orders")
    register("orders", lambda msg: None)
    mq.send("orders", b"x")
    assert mqlite.drain("orders")["completed"] == 1


def test_mqlite_periodic_tick(mqlite: Any, settings: Any) -> None:
    settings.MQLITE = {"PERIODIC": {"ping": {"cron": "*/5 * * * *", "queue": "pings"}}}
    mq.create_queue("pings")
    assert mqlite.tick() == 0  # first sight: the baseline
    mqlite.advance(300)
    assert mqlite.tick() == 1
    assert len(mqlite.sent("pings")) == 1


def test_the_plugin_defines_no_fixture_without_pytest_django() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["pytest_django"] = None  # as if it were not installed
        import django_mqlite.testing.pytest_plugin as plugin
        assert not hasattr(plugin, "mqlite")
        assert hasattr(plugin, "MQLiteFixture")
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_plugin_is_registered_as_a_pytest11_entry_point() -> None:
    from importlib.metadata import entry_points

    [ep] = [e for e in entry_points(group="pytest11") if e.value.startswith("django_mqlite")]
    assert ep.value == "django_mqlite.testing.pytest_plugin"
