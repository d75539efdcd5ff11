"""An Amazon SQS-compatible endpoint over the public Python API.

Mount it with ``path("sqs", include("django_mqlite.sqs.urls"))`` and point an AWS SDK's
endpoint at it. The package translates the SQS wire protocols (AWS JSON 1.0 and the
older query/XML one) to ``django_mqlite`` calls and back: one handler per operation
(``handlers``), one dispatcher (``views``), errors mapped in one place (``errors``).

May import: the public package, ``permissions``, ``admission``, ``models``, ``conf``
and ``tasks.front`` (the Tasks queues' front door); never ``engine``, ``api`` or
``rest_framework`` (``tests/test_layers.py``).
"""
