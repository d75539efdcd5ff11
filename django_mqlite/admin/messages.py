"""The Messages page (every state, read-only) and the Dead letters page."""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

from django.contrib import admin
from django.db.models import BinaryField, QuerySet
from django.db.models.functions import Length, Substr
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from ..engine.types import State
from ..models import Batch, DeadLetter, Dependency, Message, Queue
from . import actions, format
from .base import ReadOnlyAdmin
from .databases import OnQueueDatabase, selected


def _queue_ids(using: str) -> list[int]:
    # Filtering on an explicit list of queues lets the (queue, state, seq) index serve a
    # state filter across all queues: one index range per queue instead of a table scan.
    return list(Queue.objects.using(using).values_list("id", flat=True))


class QueueFilter(admin.RelatedFieldListFilter):
    """The queues of the database shown (Django's own filter would list the default
    database's)."""

    def field_choices(self, field: Any, request: HttpRequest, model_admin: Any) -> Any:
        rows = Queue.objects.using(selected(request)).order_by("name")
        return list(rows.values_list("pk", "name"))


class StateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(s.value, s.value) for s in State]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() in {s.value for s in State}:
            return queryset.filter(queue_id__in=_queue_ids(queryset.db), state=self.value())
        return queryset


class ReasonFilter(admin.SimpleListFilter):
    """Dead-letter reasons to filter by: the most common among the latest dead letters,
    so the sidebar costs a bounded query however many dead letters there are."""

    title = "dead letter reason"
    parameter_name = "dead_letter_reason"
    #: How many of the latest dead letters are looked at, and how many reasons shown.
    SAMPLE = 10_000
    SHOWN = 25

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        using = selected(request)
        latest = (
            DeadLetter.objects.using(using)
            .filter(queue_id__in=_queue_ids(using), state=State.DEAD_LETTERED.value)
            .order_by("-seq")
            .values_list("dead_letter_reason", flat=True)[: self.SAMPLE]
        )
        counts = Counter(r for r in latest if r)
        return [(r, r) for r, _ in counts.most_common(self.SHOWN)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset if value is None else queryset.filter(dead_letter_reason=value)


class UniqueKeyFilter(admin.SimpleListFilter):
    """Messages sent with a unique key (``mq.send(..., unique_key=)``), by the window the
    key is held in: while live, or while pending (until first claimed)."""

    title = "unique key"
    parameter_name = "unique"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("live", "held while live"), ("pending", "held while pending"), ("none", "none")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "live":
            return queryset.filter(unique_key__isnull=False)
        if self.value() == "pending":
            return queryset.filter(pending_key__isnull=False)
        if self.value() == "none":
            return queryset.filter(unique_key__isnull=True, pending_key__isnull=True)
        return queryset


class MessageAdmin(OnQueueDatabase, ReadOnlyAdmin):
    list_display: tuple[str, ...] = (
        "seq",
        "queue",
        "state",
        "message_id",
        "group_id",
        "subject",
        "unique",
        "delivery_count",
        "enqueued",
        "body_preview",
    )
    list_filter: ClassVar[tuple[Any, ...]] = (
        ("queue", QueueFilter),
        StateFilter,
        UniqueKeyFilter,
    )
    list_select_related = ("queue",)
    # Exact matches (prefix for subjects): a substring search cannot use any index.
    search_fields = ("=message_id", "=group_id", "^subject", "=unique_key", "=pending_key")
    search_help_text = "Exact message_id, group_id or unique key, or the start of a subject."
    ordering = ("-seq",)
    actions: Sequence[Any] = (actions.cancel_selected,)
    message_fields: tuple[str, ...] = (
        "seq",
        "queue",
        "state",
        "priority",
        "delivery_count",
        "message_id",
        "group_id",
        "subject",
        "unique",
        "correlation_id",
        "reply_to",
        "content_type",
        "properties_detail",
    )
    time_fields: tuple[str, ...] = (
        "enqueued",
        "visible",
        "locked_until_at",
        "expires",
        "dead_lettered",
        "completed",
    )
    dead_letter_fields: tuple[str, ...] = (
        "dead_letter_reason",
        "dead_letter_description",
        "last_error_detail",
    )

    #: Task control (``engine.running``): a cancel request, the handler's reports.
    running_fields: tuple[str, ...] = ("cancel_requested", "progress_detail", "checkpoint_detail")

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        return [
            (None, {"fields": self.message_fields}),
            ("Times", {"fields": self.time_fields}),
            ("Task control", {"fields": self.running_fields}),
            ("Dead letter", {"fields": self.dead_letter_fields}),
            ("Workflow", {"fields": ("workflow_detail",)}),
            ("Body", {"fields": ("body_detail",)}),
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return (
            *self.message_fields,
            *self.time_fields,
            *self.running_fields,
            *self.dead_letter_fields,
            "workflow_detail",
            "body_detail",
        )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        # The changelist shows a one-line preview; fetching whole bodies (up to 1 MiB
        # each) for a page of 100 rows would be wasteful. The detail page loads the body.
        return (
            super()
            .get_queryset(request)
            .defer("body", "result", "last_error", "progress", "checkpoint")
            .annotate(
                body_size=Length("body"),
                body_head=Substr("body", 1, format.LIST_PREVIEW_BYTES, output_field=BinaryField()),
            )
        )

    @admin.display(description="unique key")
    def unique(self, obj: Message) -> str:
        if obj.pending_key is not None:
            return f"{obj.pending_key} (while pending)"
        return obj.unique_key or "—"

    @admin.display(description="enqueued", ordering="enqueued_at")
    def enqueued(self, obj: Message) -> str:
        return format.stamp(obj.enqueued_at)

    @admin.display(description="visible at")
    def visible(self, obj: Message) -> str:
        return format.stamp(obj.visible_at)

    @admin.display(description="locked until")
    def locked_until_at(self, obj: Message) -> str:
        return format.stamp(obj.locked_until)

    @admin.display(description="expires")
    def expires(self, obj: Message) -> str:
        return format.stamp(obj.expires_at)

    @admin.display(description="dead-lettered", ordering="dead_lettered_at")
    def dead_lettered(self, obj: Message) -> str:
        return format.stamp(obj.dead_lettered_at)

    @admin.display(description="completed")
    def completed(self, obj: Message) -> str:
        return format.stamp(obj.completed_at)

    @admin.display(description="body")
    def body_preview(self, obj: Any) -> str:
        head = bytes(obj.body_head or b"")
        return format.body_summary(head, int(obj.body_size or 0), obj.content_type)

    @admin.display(description="body")
    def body_detail(self, obj: Message) -> SafeString:
        return format.body_detail(bytes(obj.body), obj.content_type)

    @admin.display(description="properties")
    def properties_detail(self, obj: Message) -> SafeString:
        return format_html("<pre>{}</pre>", format.properties(obj.properties))

    @admin.display(description="cancel requested")
    def cancel_requested(self, obj: Message) -> str:
        return format.stamp(obj.cancel_requested_at)

    @admin.display(description="progress")
    def progress_detail(self, obj: Message) -> SafeString:
        return format_html("<pre>{}</pre>", format.json_value(obj.progress))

    @admin.display(description="checkpoint")
    def checkpoint_detail(self, obj: Message) -> SafeString:
        return format_html("<pre>{}</pre>", format.json_value(obj.checkpoint))

    @admin.display(description="workflow")
    def workflow_detail(self, obj: Message) -> SafeString | str:
        """The batch it is a child of, the chain steps that follow it (kept with a dead
        step: a redrive resumes them), and what it waits for."""
        using = obj._state.db or "default"
        lines: list[str] = []
        node = Batch.objects.using(using).filter(id=obj.batch_id).first() if obj.batch_id else None
        if node is not None and node.seq is None:
            lines.append(f"child of batch {node.id}")
        elif node is not None and node.parent_id is not None:  # its node sits in a batch
            lines.append(f"child of batch {node.parent_id}")
        for n, spec in enumerate((node.steps or []) if node is not None else [], 1):
            body = base64.b64decode(spec["body"])
            summary = format.body_summary(body[:200], len(body), spec["content_type"])
            lines.append(f"chain step +{n}: {spec['queue']}: {summary}")
        if obj.state == State.WAITING.value:
            waited = Dependency.objects.using(using).filter(seq=obj.seq).values("batch_id")
            for b in Batch.objects.using(using).filter(id__in=waited).order_by("id"):
                lines.append(f"waits for message {b.seq}" if b.seq else f"waits for batch {b.id}")
        if not lines:
            return "—"
        return format_html_join("", "<div>{}</div>", ((line,) for line in lines))

    @admin.display(description="last error")
    def last_error_detail(self, obj: Message) -> SafeString | str:
        if not obj.last_error:
            return "—"
        return format_html('<pre class="mqlite-traceback">{}</pre>', obj.last_error)


class DeadLetterAdmin(MessageAdmin):
    """Dead letters only, with the actions that bring them back or remove them."""

    list_display = (
        "seq",
        "queue",
        "dead_letter_reason",
        "description",
        "error",
        "delivery_count",
        "enqueued",
        "dead_lettered",
        "body_preview",
    )
    list_filter = (("queue", QueueFilter), ReasonFilter)
    ordering = ("-seq",)
    actions = (
        actions.redrive_selected,
        actions.redrive_selected_to_queue,
        actions.purge_selected,
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        qs = super().get_queryset(request).defer(None).defer("body", "result")
        return qs.filter(queue_id__in=_queue_ids(qs.db), state=State.DEAD_LETTERED.value)

    @admin.display(description="description")
    def description(self, obj: Message) -> str:
        text = obj.dead_letter_description or "—"
        return text if len(text) <= 100 else text[:100] + "…"

    @admin.display(description="last error")
    def error(self, obj: Message) -> str:
        # A traceback's last line names the exception; the detail page has the rest.
        lines = (obj.last_error or "").strip().splitlines()
        return lines[-1][:120] if lines else "—"


admin.site.register(Message, MessageAdmin)
admin.site.register(DeadLetter, DeadLetterAdmin)
