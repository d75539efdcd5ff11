"""Every worker log line about a message carries its queue, seq and delivery count as
``extra`` fields (``mqlite_queue``, ``mqlite_seq``, ``mqlite_delivery_count``), so a JSON
formatter gets them without parsing the text."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.test import override_settings

import django_mqlite as mq
from django_mqlite.consumers import Registry
from tests.support.inprocess import burst

pytestmark = pytest.mark.django_db(transaction=True)


def handle(msg: mq.Received) -> None:
    if msg.text() == "reject":
        raise mq.Reject("Invalid")
    if msg.text() == "fail":
        raise RuntimeError("boom")
    if msg.text() == "lose":
        # The lease is lost under the handler (a purge): its completion finds it gone.
        from django_mqlite.engine.redrive import purge_everything

        purge_everything(msg.queue, using=msg.using)


# The failed message's retry far beyond the burst: it is delivered once, whatever the
# claims' timing (CI's PostgreSQL half, under load, once saw a 0.58 s retry come due
# before the other two were claimed, and a second delivery of it).
@override_settings(MQLITE={"RETRY_BACKOFF_BASE": 60, "RETRY_BACKOFF_CAP": 60})
def test_worker_lines_about_a_message_carry_its_fields(caplog: Any) -> None:
    mq.create_queue("lg", max_delivery_count=2)
    seqs = {t: mq.send("lg", t) for t in ("fail", "reject", "lose")}
    registry = Registry()
    registry.register("lg", handle)
    caplog.set_level(logging.INFO, logger="django_mqlite")
    burst(registry, "lg")
    about = [r for r in caplog.records if " #" in r.getMessage()]
    assert {r.levelname for r in about} >= {"INFO", "WARNING"}
    for r in about:
        assert r.mqlite_queue == "lg", r.getMessage()
        assert r.mqlite_seq in seqs.values(), r.getMessage()
        assert f"#{r.mqlite_seq}" in r.getMessage()
        assert r.mqlite_delivery_count >= 1
    by_seq = {r.mqlite_seq: r for r in about}
    assert set(by_seq) == set(seqs.values())  # failure, rejection and lost lease all logged
    assert by_seq[seqs["fail"]].mqlite_delivery_count == 1
