"""The HTTP API of django-mqlite, built on Django REST framework.

Mount it with ``path("mq/", include("django_mqlite.api.urls"))``. This package is the only
one that imports ``rest_framework``; it calls the public Python API (``django_mqlite``)
and nothing below it.

May import: the public package, ``permissions``, ``admission``, ``models``, ``conf``,
``tasks.front`` (the Tasks queues' front door) and ``rest_framework``; never ``engine``
(``tests/test_layers.py``).
"""
