"""``path("sqs", include("django_mqlite.sqs.urls"))``: the endpoint answers at the mount
point with and without a trailing slash (a POST cannot follow a redirect) and at every
QueueUrl it hands out (``<mount>/<account>/<queue>``)."""

from __future__ import annotations

from django.urls import path, re_path

from .context import URL_NAME
from .views import endpoint

urlpatterns = [
    path("", endpoint, name=URL_NAME),
    # Not written as "^/...": the mount has no trailing slash, and Django's URL check
    # warns about a pattern that starts with one.
    re_path(r"^(?:/(?P<account>[^/]+)/(?P<queue>[^/]+))?/?$", endpoint),
]
