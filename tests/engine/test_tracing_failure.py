"""A tracer that fails after a claim or settlement committed: the caller still gets what
committed (a receive-and-delete's messages are gone from the queue once it commits, so
an exception there would lose them), and the failure is logged."""

from __future__ import annotations

from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.engine import tracing

pytestmark = pytest.mark.django_db(transaction=True)


class Failing:
    def send(self, queue: str, messages: Any, run: Any, seqs: Any) -> Any:
        return run(messages)

    def claims_and_settles(self) -> bool:
        return True

    def received(self, *args: Any) -> None:
        raise RuntimeError("exporter on fire")

    def settled(self, *args: Any) -> None:
        raise RuntimeError("exporter on fire")


def test_a_failing_tracer_loses_no_claim_and_fails_no_settlement(
    q: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    mq.send(q, b"x")
    monkeypatch.setattr(tracing, "hook", Failing())
    (m,) = mq.receive(q)
    m.complete()
    assert mq.stats(q).totals["completed"] == 1
    assert sum("span failed" in r.getMessage() for r in caplog.records) == 2
