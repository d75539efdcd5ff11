"""The queue as a SQL state machine: every verb, each statement with its invariant.

May import: the standard library, ``django.db``, ``django.conf`` and ``conf`` (settings),
``django.core.signals`` and ``exceptions``; never ``models``, ``admin``, ``api``, ``sqs``,
``worker``, ``tasks`` or DRF (``tests/test_layers.py``)."""
