"""The NOTIFY listener checks that LISTEN really hears notifications, and
``MQLITE["LISTEN"]`` points it elsewhere (PostgreSQL itself, past PgBouncer) or off."""

from __future__ import annotations

import logging
import os
from typing import Any

import pytest

from django_mqlite.engine import listen as engine_listen
from django_mqlite.worker import background

BEHIND_PGBOUNCER = os.environ.get("MQLITE_TEST_DB") == "pgbouncer"
DIRECT = {"PORT": os.environ.get("PGPORT", "5432")}


pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("needs_notify")]


def listen(settings: Any, monkeypatch: Any, listen_setting: dict[str, Any]) -> bool:
    """Run a listener under ``MQLITE["LISTEN"] = listen_setting``; True once it hears
    its own test notification, False when it gives up."""
    settings.MQLITE = {**settings.MQLITE, "LISTEN": listen_setting}
    monkeypatch.setattr(engine_listen, "PROBE_S", 1.0)
    gave_up: list[bool] = []
    listener = background.Listener("default", on_unavailable=lambda: gave_up.append(True))
    listener.start()
    try:
        for _ in range(100):
            if listener.listening.wait(0.05) or gave_up:
                break
        return listener.listening.is_set() and not gave_up
    finally:
        listener.stop()


def test_listen_on_the_database_itself(settings: Any, monkeypatch: Any, caplog: Any) -> None:
    with caplog.at_level(logging.WARNING, "django_mqlite.worker"):
        heard = listen(settings, monkeypatch, {})
    if BEHIND_PGBOUNCER:
        # Transaction pooling: LISTEN succeeds but hears nothing; the log says what to do.
        assert not heard
        assert 'MQLITE["LISTEN"]' in caplog.text and "poll" in caplog.text
    else:
        assert heard


def test_listen_on_a_direct_connection(settings: Any, monkeypatch: Any) -> None:
    assert listen(settings, monkeypatch, {"default": DIRECT})


def test_listen_turned_off(settings: Any, monkeypatch: Any, caplog: Any) -> None:
    with caplog.at_level(logging.WARNING, "django_mqlite.worker"):
        assert not listen(settings, monkeypatch, {"default": False})
    assert "LISTEN is off for database 'default'" in caplog.text


def test_stop_ends_a_waiting_listener_at_once(settings: Any) -> None:
    """stop() wakes a listener that is waiting for notifications: with a 30 s poll it
    still ends within stop()'s 2 s join (a burst worker's exit waited for the poll)."""
    settings.MQLITE = {**settings.MQLITE, "LISTEN": {"default": DIRECT}}
    listener = background.Listener("default", poll_s=30.0)
    listener.start()
    try:
        assert listener.listening.wait(10)
    finally:
        listener.stop()
    assert not listener.is_alive()
