"""The Django Tasks integration: the backend (``backend``), the worker's task runner
(``runner``), reading results back (``results``), periodic schedules (``periodic``) and
the one import point for ``django.tasks`` or its backport (``compat``).

Importing this package imports nothing else: ``runworker``'s autodiscovery imports every
installed app's ``tasks`` module, this one included, on projects without a Tasks framework.

May import: ``engine``, ``worker`` (its registry, to register its handler; the
background-service loop, backoff and connection health), ``models``, ``permissions``,
``conf`` and ``exceptions``. The worker never imports ``tasks`` (``tests/test_layers.py``).
"""
