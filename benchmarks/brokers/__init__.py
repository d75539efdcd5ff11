"""The broker peers of the ``brokers`` scenario: Celery, Dramatiq, Huey, RQ and
procrastinate, each with the same no-op task, started the way its own documentation
starts it, and django-mqlite's Tasks backend beside them.

Every system's task does the same thing, through the same client: it records its start
in Redis (``record.started``, one ``INCR``, and for the pickup-latency run the time from
enqueue to start), so the completion check and the latency clock are the same for all.
``apps`` holds each system's application module (what its worker command is pointed at),
``produce`` enqueues through each system's own API in a process of its own (so no
system's imports or connections are paid by another), and the scenario is
``benchmarks/scenarios/brokers.py``.
"""
