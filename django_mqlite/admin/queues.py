"""The Queues page: settings, live gauges per state, oldest waiting message, DLQ size.

Read-only by design: queues are declared in ``MQLITE["QUEUES"]`` (applied by ``migrate``
and at every worker start, which would silently undo an edit made here) or created with
``mq.create_queue`` / ``manage.py mqlite create-queue``.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from .. import history, stats
from ..engine.history import history_of
from ..engine.queues import QUEUE_OPTIONS
from ..engine.types import State
from ..exceptions import QueueNotFoundError
from ..models import Queue
from . import actions, charts, format
from .base import ReadOnlyAdmin
from .databases import OnQueueDatabase
from .gauges import Gauges, gauges

SETTINGS = (*QUEUE_OPTIONS, "created")
#: Windows offered on a queue's page for its history charts, in minutes.
HISTORY_WINDOWS = {60: "1 hour", 360: "6 hours", 1440: "24 hours", 10080: "7 days"}


def _gauges(obj: Queue) -> Gauges:
    # Every gauge column of a row reads the same numbers: fetch them once per row.
    cached: Gauges | None = getattr(obj, "_mqlite_gauges", None)
    if cached is None:
        cached = gauges(obj.pk, obj._state.db or "default")
        obj._mqlite_gauges = cached  # type: ignore[attr-defined]
    return cached


def _gauge(obj: Queue, state: State) -> SafeString:
    g = _gauges(obj)
    return format_html(
        '<span class="mqlite-gauge" data-queue="{}" data-state="{}">{}</span>',
        obj.name,
        state.value,
        g.shown(state.value),
    )


class QueueAdmin(OnQueueDatabase, ReadOnlyAdmin):
    list_display = (
        "name",
        "ordering",
        "paused",
        "active",
        "scheduled",
        "locked",
        "deferred",
        "completed",
        "dead_letters",
        "oldest_active",
        "lock_duration",
        "max_delivery_count",
        "throughput",
        "rate_limit",
        "max_in_flight",
    )
    list_filter = ("paused",)
    search_fields = ("name",)
    ordering = ("name",)
    actions = (
        actions.redrive_queue_dlq,
        actions.purge_queue_dlq,
        actions.pause_queues,
        actions.resume_queues,
    )
    fieldsets = (
        (None, {"fields": ("name", "paused")}),
        ("Settings", {"fields": SETTINGS}),
        ("Now", {"fields": ("live_stats",)}),
        ("Since creation", {"fields": ("lifetime_totals",)}),
    )
    readonly_fields = ("name", "paused", *SETTINGS, "live_stats", "lifetime_totals")

    @admin.display(description="active")
    def active(self, obj: Queue) -> SafeString:
        return _gauge(obj, State.ACTIVE)

    @admin.display(description="scheduled")
    def scheduled(self, obj: Queue) -> SafeString:
        return _gauge(obj, State.SCHEDULED)

    @admin.display(description="locked")
    def locked(self, obj: Queue) -> SafeString:
        return _gauge(obj, State.LOCKED)

    @admin.display(description="deferred")
    def deferred(self, obj: Queue) -> SafeString:
        return _gauge(obj, State.DEFERRED)

    @admin.display(description="completed")
    def completed(self, obj: Queue) -> SafeString:
        return _gauge(obj, State.COMPLETED)

    @admin.display(description="dead letters")
    def dead_letters(self, obj: Queue) -> SafeString:
        url = reverse("admin:django_mqlite_deadletter_changelist")
        return format_html(
            '<a href="{}?database={}&amp;queue__id__exact={}">{}</a>',
            url,
            obj._state.db,
            obj.pk,
            _gauge(obj, State.DEAD_LETTERED),
        )

    @admin.display(description="oldest active")
    def oldest_active(self, obj: Queue) -> str:
        return format.age(_gauges(obj).oldest_active_age)

    @admin.display(description="lock duration")
    def lock_duration(self, obj: Queue) -> str:
        return format.duration(obj.lock_duration_ms)

    @admin.display(description="default TTL")
    def default_ttl(self, obj: Queue) -> str:
        return format.duration(obj.default_ttl_ms, unset="none (messages never expire)")

    @admin.display(description="dedup window")
    def dedup_window(self, obj: Queue) -> str:
        return format.duration(obj.dedup_window_ms, unset="off") if obj.dedup_window_ms else "off"

    @admin.display(description="DLQ max age")
    def dlq_max_age(self, obj: Queue) -> str:
        return format.duration(obj.dlq_max_age_ms, unset="global default")

    @admin.display(description="keep results for")
    def keep_results(self, obj: Queue) -> str:
        return format.duration(obj.keep_results_ms, unset="not kept")

    @admin.display(description="rate limit")
    def rate_limit(self, obj: Queue) -> str:
        if obj.rate_limit_milli is None:
            return "unlimited"
        return f"{obj.rate_limit_milli / 1000:g}/s"

    @admin.display(description="max in flight")
    def max_in_flight(self, obj: Queue) -> str:
        return "unlimited" if obj.max_in_flight is None else f"{obj.max_in_flight:,}"

    @admin.display(description="created")
    def created(self, obj: Queue) -> str:
        return format.stamp(obj.created_at)

    @admin.display(description="messages by state (exact)")
    def live_stats(self, obj: Queue) -> SafeString:
        s = stats(obj.name, using=obj._state.db)
        rows = format_html_join(
            "",
            '<tr><th>{}</th><td class="mqlite-count" data-state="{}">{}</td></tr>',
            ((state, state, f"{n:,}") for state, n in s.counts.items()),
        )
        return format_html(
            "<table>{}<tr><th>oldest active</th><td>{}</td></tr></table>",
            rows,
            format.age(s.oldest_active_age),
        )

    @admin.display(description="lifetime totals")
    def lifetime_totals(self, obj: Queue) -> SafeString:
        s = stats(obj.name, using=obj._state.db)
        rows = format_html_join(
            "", "<tr><th>{}</th><td>{}</td></tr>", ((k, f"{v:,}") for k, v in s.totals.items())
        )
        return format_html("<table>{}</table>", rows)

    @admin.display(description="last hour")
    def throughput(self, obj: Queue) -> SafeString:
        # Stored samples plus the live totals; no message is counted for this column.
        try:
            buckets = history_of([obj.name], minutes=60, depth=False)[obj.name]
        except QueueNotFoundError:  # deleted since the page's list was read
            return SafeString("")
        return charts.sparkline(obj.name, buckets)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        try:
            minutes = int(request.GET.get("minutes", "60"))
        except ValueError:
            minutes = 60
        if minutes not in HISTORY_WINDOWS:
            minutes = 60

        def section() -> SafeString:  # called by the template, after the permission checks
            obj = self.get_object(request, unquote(object_id))
            try:
                buckets = history(obj.name, minutes=minutes) if obj is not None else []
            except QueueNotFoundError:  # deleted since the page was asked for
                buckets = []
            if obj is None or not buckets:
                return SafeString("")
            links = format_html_join(
                " · ",
                '<a href="?minutes={}"{}>{}</a>',
                (
                    (m, SafeString(' aria-current="page"') if m == minutes else "", label)
                    for m, label in HISTORY_WINDOWS.items()
                ),
            )
            return format_html(
                '<p class="mq-history-windows">Window: {}</p>{}',
                links,
                charts.queue_charts(obj.name, buckets),
            )

        context = {**(extra_context or {}), "mq_history": section}
        return super().change_view(request, object_id, form_url, context)


admin.site.register(Queue, QueueAdmin)
