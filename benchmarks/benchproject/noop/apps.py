from __future__ import annotations

from django.apps import AppConfig


class NoopConfig(AppConfig):
    name = "benchmarks.benchproject.noop"

    def ready(self) -> None:
        # A worker whose transactions the brokers scenario counts (BENCH_COUNT_TX).
        from benchmarks.brokers import txcount

        txcount.install()
