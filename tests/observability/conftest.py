"""The surfaces' fixtures, reused (an HTTP API client, a boto3 SQS client on a live
server, an in-process Tasks worker), and a recorder of the lifecycle signals."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.dispatch import Signal

from django_mqlite import signals

from ..api.conftest import api, user
from ..sqs.conftest import make_client, sqs, sqs_settings
from ..tasks.conftest import run_worker

__all__ = ["api", "make_client", "run_worker", "sqs", "sqs_settings", "user"]

SIGNALS = {
    name: getattr(signals, name)
    for name in (
        "message_sent",
        "message_dead_lettered",
        "message_redriven",
        "message_expired",
        "worker_started",
        "worker_stopped",
    )
}


class Recorder:
    """Every signal sent, as (name, kwargs without ``signal``), in order."""

    def __init__(self) -> None:
        self.got: list[tuple[str, dict[str, Any]]] = []
        self.receivers: list[tuple[Signal, Any]] = []

    def of(self, name: str) -> list[dict[str, Any]]:
        return [kw for n, kw in self.got if n == name]

    def connect(self) -> None:
        for name, signal in SIGNALS.items():

            def receiver(sender: Any, name: str = name, **kwargs: Any) -> None:
                assert sender == "django_mqlite"
                kwargs.pop("signal")
                self.got.append((name, kwargs))

            signal.connect(receiver, weak=False)
            self.receivers.append((signal, receiver))

    def disconnect(self) -> None:
        for signal, receiver in self.receivers:
            signal.disconnect(receiver)


@pytest.fixture
def signals_seen() -> Iterator[Recorder]:
    rec = Recorder()
    rec.connect()
    try:
        yield rec
    finally:
        rec.disconnect()


@pytest.fixture
def spans() -> Iterator[Any]:
    """An SDK tracer provider recording into an ``InMemorySpanExporter``, given to
    django-mqlite's tracing for this test only (the global provider is left alone)."""
    pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from django_mqlite import otel

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    assert otel.configure(provider)
    exporter.tracer = provider.get_tracer("tests")  # type: ignore[attr-defined]
    try:
        yield exporter
    finally:
        otel.configure(None)
        provider.shutdown()
