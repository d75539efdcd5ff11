"""The Batches page: each workflow batch (``mq.batch``) with a progress bar, its children
by state, its callbacks, and an action that redrives its failed children.

Read-only like every page here: the counts are the engine's (``mqlite_batch``, kept by
the transaction that settles each child), the children are rows of the Messages page
(each state a link to it, filtered by the batch), and the action goes through
``mq.redrive``, which re-opens a finished batch the way a redrive by any other route does
(docs/workflows.md).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Count, F, Q, QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .. import redrive
from ..engine.types import BatchState, State
from ..models import Batch, Message
from . import format
from .actions import REDRIVE_PERMISSION, _batches, _confirm, _report, _require
from .base import ReadOnlyAdmin
from .databases import PARAM, OnQueueDatabase

#: The bar's segments, in order: (counter, colour, label).
SEGMENTS = (
    ("completed", "#2e7d32", "completed"),
    ("failed", "#c62828", "failed"),
    ("cancelled", "#9e9e9e", "cancelled"),
)
CALLBACKS = ("on_complete", "on_success", "on_failure")


def _pending(obj: Batch) -> int:
    return obj.total - obj.completed - obj.failed - obj.cancelled


def _query(**params: object) -> str:
    """A changelist query string (``?`` not included)."""
    return urlencode({k: str(v) for k, v in params.items()})


def _state(obj: Batch) -> BatchState:
    return BatchState.of(sealed=bool(obj.sealed), pending=_pending(obj))


class BatchStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(BatchState.RUNNING.value, "running"), (BatchState.FINISHED.value, "finished")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() not in (BatchState.RUNNING.value, BatchState.FINISHED.value):
            return queryset
        pending = F("total") - F("completed") - F("failed") - F("cancelled")
        sealed = queryset.filter(sealed=1).alias(pending=pending)
        if self.value() == BatchState.RUNNING.value:
            return sealed.filter(pending__gt=0)
        return sealed.filter(pending=0)


class BatchAdmin(OnQueueDatabase, ReadOnlyAdmin):
    list_display = ("id", "state", "progress", "total", "created", "finished")
    list_filter = (BatchStateFilter,)
    ordering = ("-id",)
    fields = (
        "id",
        "state",
        "progress",
        "children",
        "callbacks_detail",
        "callback_error",
        "created",
        "finished",
    )
    readonly_fields = fields
    actions = ("redrive_failed_children",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        # A message's own node (a chain step, a message others wait for) is a batch of
        # one the engine made: its message's page shows it, not this one.
        return super().get_queryset(request).filter(seq__isnull=True)

    @admin.display(description="state")
    def state(self, obj: Batch) -> str:
        return _state(obj).value

    @admin.display(description="progress")
    def progress(self, obj: Batch) -> SafeString:
        """A bar of the settled children (completed, failed, cancelled) out of the total,
        with the numbers beside it."""
        total = max(obj.total, 1)
        bar = format_html_join(
            "",
            '<span title="{} {}" style="display:inline-block;height:100%;width:{}%;'
            'background:{}"></span>',
            (
                (getattr(obj, name), label, f"{100 * getattr(obj, name) / total:.2f}", colour)
                for name, colour, label in SEGMENTS
                if getattr(obj, name)
            ),
        )
        settled = obj.total - _pending(obj)
        return format_html(
            '<span style="display:inline-block;width:10em;height:0.8em;background:#e0e0e0;'
            'vertical-align:middle;overflow:hidden;white-space:nowrap">{}</span> {}',
            bar,
            _("%(settled)d of %(total)d settled (%(failed)d failed)")
            % {"settled": settled, "total": obj.total, "failed": obj.failed},
        )

    @admin.display(description="children")
    def children(self, obj: Batch) -> SafeString:
        """The children by state, each a link to the Messages page filtered to them."""
        rows = (
            Message.objects.using(obj._state.db)
            .filter(_children_of([obj.id]))
            .values("state")
            .annotate(n=Count("seq"))
            .order_by("state")
        )
        url = reverse("admin:django_mqlite_message_changelist")
        # Children something depends on point at their own node within the batch.
        nodes = Batch.objects.using(obj._state.db).filter(parent_id=obj.id)
        ids = [obj.id, *nodes.order_by("id").values_list("id", flat=True)]
        which = {"batch_id__in": ",".join(map(str, ids))} if len(ids) > 1 else {"batch_id": obj.id}
        return format_html_join(
            "",
            '<div><a href="{}?{}">{}</a>: {}</div>',
            (
                (
                    url,
                    _query(**which, state=r["state"], **{PARAM: obj._state.db}),
                    r["state"],
                    r["n"],
                )
                for r in rows
            ),
        ) or SafeString(_("none left (a settled child keeps a row only where results are kept)"))

    @admin.display(description="callbacks")
    def callbacks_detail(self, obj: Batch) -> SafeString:
        """Each callback: its queue, and the message it became once enqueued."""
        specs = obj.callbacks or {}
        enqueued = obj.callback_seqs or {}
        url = reverse("admin:django_mqlite_message_changelist")
        lines = []
        for name in CALLBACKS:
            spec = specs.get(name)
            if spec is None:
                continue
            seq = enqueued.get(name)
            where = spec.get("queue", "?") if isinstance(spec, dict) else "?"
            if seq is None:
                line = format_html("<div>{} → <code>{}</code>: not enqueued</div>", name, where)
                lines.append(line)
            else:
                query = _query(seq=seq, **{PARAM: obj._state.db})
                lines.append(
                    format_html(
                        '<div>{} → <code>{}</code>: enqueued as <a href="{}?{}">#{}</a></div>',
                        name,
                        where,
                        url,
                        query,
                        seq,
                    )
                )
        return SafeString("".join(lines)) if lines else SafeString(_("none"))

    @admin.display(description="created", ordering="created_at")
    def created(self, obj: Batch) -> str:
        return format.stamp(obj.created_at)

    @admin.display(description="finished", ordering="finished_at")
    def finished(self, obj: Batch) -> str:
        return format.stamp(obj.finished_at)

    def has_redrive_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(REDRIVE_PERMISSION)

    @admin.action(
        permissions=["redrive"],
        description=gettext_lazy("Redrive the failed children of selected batches…"),
    )
    def redrive_failed_children(
        self, request: HttpRequest, queryset: QuerySet[Batch]
    ) -> TemplateResponse | None:
        """The selected batches' dead-lettered children back to active in their own
        queues (their batches re-open), after a confirmation page."""
        _require(request, REDRIVE_PERMISSION)
        dead = Message.objects.using(queryset.db).filter(
            _children_of(list(queryset.values_list("id", flat=True))),
            state=State.DEAD_LETTERED.value,
        )
        if request.POST.get("post"):
            asked = done = 0
            for queue, seqs in _batches(dead):
                asked += len(seqs)
                done += redrive(queue, seqs=seqs, using=queryset.db)
            _report(self, request, done, asked, "redriven")
            return None
        return _confirm(
            self,
            request,
            dead,
            action_name="redrive_failed_children",
            title=_("Redrive failed children"),
            question=_(
                "Move these dead-lettered children back to active in their own queues? "
                "Their batches re-open and count them again when they settle."
            ),
            submit_label=_("Redrive"),
        )


admin.site.register(Batch, BatchAdmin)


def _children_of(ids: list[int]) -> Q:
    """The children of these batches: their own, and those behind a node of theirs (a
    child something depends on, ``engine/nodes.py``)."""
    behind = Batch.objects.filter(parent_id__in=ids).values("id")
    return Q(batch_id__in=ids) | Q(batch_id__in=behind)
