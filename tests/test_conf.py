"""The typed ``MQLITE`` (``conf.current()``): units converted once, rebuilt when the
setting changes, a value that is not a number refused by a system check; the raw view
(``mqlite_settings``) still reads what the user wrote."""

from __future__ import annotations

import dataclasses

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_mqlite import checks, conf
from django_mqlite.conf import current, mqlite_settings


def test_defaults_carry_their_units() -> None:
    s = conf.build({})
    assert (s.receipt_ttl_ms, s.worker_stale_after_ms, s.worker_stale_after_s) == (
        1_800_000,
        15_000,
        15.0,
    )
    assert (s.reap_interval_s, s.history_retention_ms, s.worker_retention_ms) == (
        1.0,
        604_800_000,
        86_400_000,
    )
    assert (s.dlq_max_age_ms, s.dlq_max_count, s.max_clock_skew_s) == (None, None, None)
    assert s.database == "default" and s.queues == {} and s.open_task_queues == frozenset()


def test_numbers_given_as_strings_or_ints_convert() -> None:
    s = conf.build(
        {
            "RECEIPT_TTL": "2.5",
            "REAP_INTERVAL": 3,
            "DLQ_MAX_AGE": 60,
            "MAX_CLOCK_SKEW": "0.25",
            "REAP_CHUNK": "50",
            "OPEN_TASK_QUEUES": ["a", "a", "b"],
        }
    )
    assert s.receipt_ttl_ms == 2500 and isinstance(s.receipt_ttl_ms, int)
    assert s.reap_interval_s == 3.0 and isinstance(s.reap_interval_s, float)
    assert (s.dlq_max_age_ms, s.max_clock_skew_s, s.reap_chunk) == (60_000, 0.25, 50)
    assert s.open_task_queues == frozenset({"a", "b"})


def test_it_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        current().reap_chunk = 1  # type: ignore[misc]


def test_built_once_and_rebuilt_when_mqlite_changes() -> None:
    before = current()
    assert current() is before
    with override_settings(MQLITE={"RECEIPT_TTL": 7, "DATABASE": "other"}):
        inside = current()
        assert (inside.receipt_ttl_ms, inside.database) == (7000, "other")
        assert mqlite_settings.RECEIPT_TTL == 7  # the raw view: as written
    assert current() is not inside
    assert current().receipt_ttl_ms == before.receipt_ttl_ms


def test_another_setting_changing_keeps_the_object() -> None:
    before = current()
    with override_settings(USE_TZ=True):
        assert current() is before


@pytest.mark.parametrize("value", ["soon", None, [15], float("inf"), float("nan")])
def test_a_value_that_is_not_a_number_is_improperly_configured(value: object) -> None:
    with override_settings(MQLITE={"WORKER_STALE_AFTER": value}):
        with pytest.raises(ImproperlyConfigured, match=r'MQLITE\["WORKER_STALE_AFTER"\]'):
            current()
        (msg,) = checks.check_setting_values()
    assert msg.id == "django_mqlite.E008" and "WORKER_STALE_AFTER" in msg.msg and msg.hint


def test_valid_settings_pass_the_check() -> None:
    with override_settings(MQLITE={"RECEIPT_TTL": 60, "DLQ_MAX_COUNT": None}):
        assert checks.check_setting_values() == []
    with override_settings(MQLITE=["QUEUES"]):
        assert checks.check_setting_values() == []  # E005's to report


def test_a_change_during_a_build_is_not_undone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread that read the old ``MQLITE`` while it changed does not keep its build."""
    real_build = conf.build

    def build_then_change(raw: object) -> conf.Settings:
        built = real_build(raw)  # type: ignore[arg-type]
        conf._reload(setting="MQLITE")  # another thread's override_settings, meanwhile
        return built

    monkeypatch.setattr(conf, "_current", None)
    monkeypatch.setattr(conf, "build", build_then_change)
    current()
    assert conf._current is None
