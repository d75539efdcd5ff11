"""The Topics page: each topic with its subscriptions and their filters, read-only.

Subscriptions change through the engine's verbs (``mq.subscribe``, the ``mqlite``
command, ``MQLITE["TOPICS"]``), which validate a filter before it is stored; a hand edit
here could store one that no database can compile.

A topic's page has a "test the filters against a message" form: a subject and
properties (JSON) in, the subscriptions that would get a copy out. The answer is
``mq.matching_queues``: the filters compiled and run by the database as a publish runs
them, never a second implementation. The form reads only (a GET of the page) and shows
only what the page already shows (the filters), so whoever may view the topic may use it.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html_join
from django.utils.safestring import SafeString

import django_mqlite as mq

from ..models import Topic
from . import format
from .base import ReadOnlyAdmin
from .databases import OnQueueDatabase


class TopicAdmin(OnQueueDatabase, ReadOnlyAdmin):
    list_display = ("name", "subscribed", "created")
    search_fields = ("name",)
    fields = ("name", "subscribed", "created")
    readonly_fields = fields

    @admin.display(description="subscriptions")
    def subscribed(self, obj: Topic) -> SafeString:
        rows = obj.subscriptions.select_related("queue").order_by("id")
        return format_html_join(
            "",
            "<div><code>{}</code>: {}</div>",
            (
                (s.queue.name, "every message" if s.filter is None else json.dumps(s.filter))
                for s in rows
            ),
        ) or SafeString("none")

    @admin.display(description="created", ordering="created_at")
    def created(self, obj: Topic) -> str:
        return format.stamp(obj.created_at)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        def tried() -> dict[str, Any]:  # called by the template, after the permission checks
            obj = self.get_object(request, unquote(object_id))
            return filter_test(obj, request.GET) if obj is not None else {}

        context = {**(extra_context or {}), "mq_filter_test": tried}
        return super().change_view(request, object_id, form_url, context)


def filter_test(topic: Topic, query: Any) -> dict[str, Any]:
    """The form's values and, when it was submitted, the result or the error."""
    subject = query.get("mq_subject", "")
    raw = query.get("mq_properties", "")
    out: dict[str, Any] = {"subject": subject, "properties": raw, "submitted": "mq_test" in query}
    if not out["submitted"]:
        return out
    try:
        properties = json.loads(raw) if raw.strip() else None
    except ValueError as exc:
        out["error"] = f"properties are not JSON: {exc}"
        return out
    try:
        matched = mq.matching_queues(
            topic.name, subject=subject or None, properties=properties, using=topic._state.db
        )
    except mq.MQLiteError as exc:
        out["error"] = str(exc)
        return out
    subs = topic.subscriptions.select_related("queue").order_by("queue__name")
    out["rows"] = [(s.queue.name, s.queue.name in matched) for s in subs]
    return out


admin.site.register(Topic, TopicAdmin)
