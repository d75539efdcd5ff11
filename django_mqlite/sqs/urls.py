"""``path("sqs", include("django_mqlite.sqs.urls"))``: the endpoint answers at the mount
point with and without a trailing slash (a POST cannot follow a redirect) and at every
QueueUrl it hands out (``<mount>/<account>/<queue>``). Mounted at the site root
(``path("", include(...))``) the same holds: Django hands the patterns below the path
without its leading slash there, and with it below a mount such as ``sqs``; the view
refuses a path that only shares the mount's first letters (``/sqsfoo/bar``)."""

from __future__ import annotations

from django.urls import path, re_path

from .context import URL_NAME
from .views import endpoint

urlpatterns = [
    path("", endpoint, name=URL_NAME),
    # Not written as "^/...": the mount has no trailing slash, and Django's URL check
    # warns about a pattern that starts with one.
    re_path(r"^(?:/(?P<account>[^/]+)/(?P<queue>[^/]+))?/?$", endpoint),
    # Below a root mount, a queue URL's path arrives without its leading slash.
    re_path(r"^(?P<account>[^/]+)/(?P<queue>[^/]+)/?$", endpoint),
]
