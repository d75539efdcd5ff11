"""The queue as a SQL state machine: every verb, each statement with its invariant.

The rule every transition follows, written down once:

    A transition is one guarded SQL statement. Its WHERE clause states everything that
    must hold for the transition to be legal (state, lock token, live lease, ...), so
    the database applies it atomically or not at all. Zero rows affected is an answer,
    not an error to retry: a settlement that matched nothing consults the receipt table
    (an exact replay of a settlement that already committed succeeds) and otherwise
    raises ``LockLostError``.

The plumbing the verbs share, one module a concept: ``databases`` (which database a call
runs on, and its cursor), ``arguments`` (argument checks and limits), ``rows`` (queue and
message rows by name), ``lines`` (ordered lines), ``totals`` (lifetime counters),
``heartbeat`` (a worker's proof of life), ``canonical_json`` and ``batches`` (IN lists).

May import: the standard library, ``asgiref`` (the async twins), ``django.db``,
``django.conf`` and ``conf`` (settings), ``django.core.signals``, ``django.dispatch`` (the
lifecycle signals, ``events``) and ``exceptions``; never ``models``, ``admin``, ``api``,
``sqs``, ``worker``, ``tasks`` or DRF (``tests/test_layers.py``)."""
