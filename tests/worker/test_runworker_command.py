"""``manage.py runworker`` refuses bad input with a clear CommandError."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--concurrency", "0"], "must be a positive integer"),
        (["--concurrency", "many"], "must be a positive integer"),
        (["--max-messages", "-3"], "must be a positive integer"),
        (["--max-memory", "lots"], "must be a positive number"),
        (["--shutdown-timeout", "0"], "must be a positive number"),
        (["--queue", "no-such-consumer"], "no consumer is registered for 'no-such-consumer'"),
    ],
)
def test_bad_input(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("runworker", *args)


def test_a_consumer_for_a_missing_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    from django_mqlite.worker import registry as registry_mod

    registry = registry_mod.Registry()
    registry.register("missing", lambda msg: None)
    monkeypatch.setattr(registry_mod, "registry", registry)
    with pytest.raises(CommandError, match="queue 'missing' does not exist"):
        call_command("runworker", "--burst")
