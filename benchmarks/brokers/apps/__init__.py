"""Each broker peer's application module, as its documentation writes one: a no-op task
that records its start (``benchmarks.brokers.record``). The broker a module connects to
comes from ``BENCH_BROKER`` (``redis`` or ``amqp``) where the system offers both."""
