"""The Topics page: each topic with its subscriptions and their filters, read-only.

Subscriptions change through the engine's verbs (``mq.subscribe``, the ``mqlite``
command, ``MQLITE["TOPICS"]``), which validate a filter before it is stored; a hand edit
here could store one that no database can compile.
"""

from __future__ import annotations

import json

from django.contrib import admin
from django.utils.html import format_html_join
from django.utils.safestring import SafeString

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


admin.site.register(Topic, TopicAdmin)
