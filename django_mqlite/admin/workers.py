"""The Workers page: live and recently gone workers.

Status is the worker-liveness rule (``engine/liveness.py``): *live* while heartbeating,
*stale* once silent for ``MQLITE["WORKER_STALE_AFTER"]`` or longer (its locks are then
reclaimed), *stopped* after a clean exit. Workers not seen for ``RECENT_S`` are left off
the page.
"""

from __future__ import annotations

from typing import Any, cast

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.safestring import SafeString

from ..engine.clock import now_ms
from ..models import Worker, WorkerQuerySet
from . import format
from .base import ReadOnlyAdmin
from .databases import OnQueueDatabase

#: How long a worker that stopped or went silent stays listed.
RECENT_S = 24 * 3600


def status(worker: Worker) -> str:
    if worker.stopped_at is not None:
        return "stopped"
    return "live" if worker.is_alive() else "stale"


class StatusFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("live", "live"), ("stale", "stale"), ("stopped", "stopped")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        workers = cast(WorkerQuerySet, queryset)
        if self.value() == "live":
            return workers.alive()
        if self.value() == "stale":
            return workers.stale()
        if self.value() == "stopped":
            return queryset.filter(stopped_at__isnull=False)
        return queryset


class WorkerAdmin(OnQueueDatabase, ReadOnlyAdmin):
    list_display = (
        "host",
        "pid",
        "queue_names",
        "worker_status",
        "started",
        "last_heartbeat",
        "heartbeat_age",
        "in_flight",
        "claimed",
        "failed",
        "clock_skew",
        "stopped",
    )
    list_filter = (StatusFilter, "host")
    search_fields = ("host",)
    ordering = ("-last_seen",)
    fields = list_display
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).filter(last_seen__gte=now_ms() - RECENT_S * 1000)

    @admin.display(description="queues")
    def queue_names(self, obj: Worker) -> str:
        return ", ".join(str(q) for q in obj.queues or []) or "all"

    @admin.display(description="status")
    def worker_status(self, obj: Worker) -> SafeString:
        st = status(obj)
        return format_html('<span class="mqlite-worker-status" data-status="{}">{}</span>', st, st)

    @admin.display(description="started", ordering="started_at")
    def started(self, obj: Worker) -> str:
        return format.stamp(obj.started_at)

    @admin.display(description="last heartbeat", ordering="last_seen")
    def last_heartbeat(self, obj: Worker) -> str:
        return format.stamp(obj.last_seen)

    @admin.display(description="heartbeat age")
    def heartbeat_age(self, obj: Worker) -> str:
        return format.age(max(0.0, (now_ms() - obj.last_seen) / 1000))

    @admin.display(description="stopped", ordering="stopped_at")
    @admin.display(description="clock skew", ordering="clock_skew_ms")
    def clock_skew(self, obj: Worker) -> str:
        """Database clock minus the worker host's, as of its last heartbeat."""
        return "-" if obj.clock_skew_ms is None else f"{obj.clock_skew_ms / 1000:+.3f}s"

    def stopped(self, obj: Worker) -> str:
        return format.stamp(obj.stopped_at)


admin.site.register(Worker, WorkerAdmin)
