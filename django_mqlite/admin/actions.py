"""Admin actions on dead letters and queues, shaped like Django's ``delete_selected``.

Each is a module-level function with ``@admin.action(permissions=..., description=...)``;
the admin only offers (and only runs) it for users whose ``has_<permission>_permission``
says yes. Destructive ones show a confirmation page first; the change itself always goes
through the engine's verbs (``mq.redrive``, ``mq.purge``), never ``queryset.update()``
or ``.delete()``, so counters, ordered lines and totals stay right.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from .. import (  # the public API's verbs
    list_queues,
    pause_queue,
    purge,
    redrive,
    request_cancel,
    resume_queue,
)
from ..exceptions import MessageFinishedError, MessageNotFoundError
from ..models import Message, Queue
from .pagination import capped_count

#: Seqs handed to one engine call; the engine itself works in REAP_CHUNK transactions.
BATCH = 1000
#: How many of the targeted messages/queues a confirmation page lists by name.
SAMPLE = 20

REDRIVE_PERMISSION = "django_mqlite.redrive_message"
PURGE_PERMISSION = "django_mqlite.purge_message"
PAUSE_PERMISSION = "django_mqlite.pause_queue"
CANCEL_PERMISSION = "django_mqlite.cancel_message"


def _require(request: HttpRequest, perm: str) -> None:
    # The admin already hides actions the user lacks permission for; this makes the
    # function safe to call from anywhere else too.
    if not request.user.has_perm(perm):
        raise PermissionDenied


def _batches(queryset: QuerySet[Message]) -> Iterator[tuple[str, list[int]]]:
    """(queue name, seqs) batches of the selected messages, by keyset pagination so the
    engine may change the rows between batches."""
    last = 0
    while True:
        rows = list(
            queryset.filter(seq__gt=last).order_by("seq").values_list("seq", "queue__name")[:BATCH]
        )
        if not rows:
            return
        last = rows[-1][0]
        by_queue: dict[str, list[int]] = {}
        for seq, name in rows:
            by_queue.setdefault(name, []).append(seq)
        yield from by_queue.items()


def _confirm(
    modeladmin: admin.ModelAdmin[Any],
    request: HttpRequest,
    queryset: QuerySet[Any],
    *,
    action_name: str,
    title: str,
    question: str,
    submit_label: str,
    form: forms.Form | None = None,
) -> TemplateResponse:
    """The intermediate page: what is about to happen, to what, and a button."""
    total = capped_count(queryset)
    sample = [str(line) for line in _sample_lines(queryset)]
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": title,
        "subtitle": None,
        "question": question,
        "sample": sample,
        "more": max(0, total - len(sample)),
        "form": form,
        "opts": modeladmin.model._meta,
        "action_name": action_name,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "selected": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME),
        "select_across": request.POST.get("select_across") == "1",
        "submit_label": submit_label,
        "media": modeladmin.media,
    }
    request.current_app = modeladmin.admin_site.name
    return TemplateResponse(request, "admin/django_mqlite/action_confirmation.html", context)


def _sample_lines(queryset: QuerySet[Any]) -> list[str]:
    if queryset.model is Queue:
        return [q.name for q in queryset.order_by("name")[:SAMPLE]]
    rows = queryset.order_by("seq").values_list("seq", "queue__name", "dead_letter_reason")
    return [
        _("#%(seq)s in %(queue)s (%(reason)s)") % {"seq": s, "queue": q, "reason": r or "—"}
        for s, q, r in rows[:SAMPLE]
    ]


def _report(
    modeladmin: admin.ModelAdmin[Any], request: HttpRequest, done: int, asked: int, verb: str
) -> None:
    if verb == "redriven":
        text = ngettext("Redrove %(count)d dead letter.", "Redrove %(count)d dead letters.", done)
    else:
        text = ngettext("Purged %(count)d dead letter.", "Purged %(count)d dead letters.", done)
    modeladmin.message_user(request, text % {"count": done}, messages.SUCCESS)
    if asked > done:
        skipped = asked - done
        modeladmin.message_user(
            request,
            ngettext(
                "%(count)d selected message was no longer a dead letter and was left alone.",
                "%(count)d selected messages were no longer dead letters and were left alone.",
                skipped,
            )
            % {"count": skipped},
            messages.WARNING,
        )


# -- Messages ----------------------------------------------------------------------


@admin.action(permissions=["cancel"], description=gettext_lazy("Cancel selected messages…"))
def cancel_selected(
    modeladmin: admin.ModelAdmin[Any], request: HttpRequest, queryset: QuerySet[Message]
) -> TemplateResponse | None:
    """After a confirmation page, ``mq.request_cancel`` each selected message: a running
    one is asked to stop, one that has not started is dead-lettered (``Cancelled``);
    finished ones are left alone and counted."""
    _require(request, CANCEL_PERMISSION)
    if not request.POST.get("post"):
        return _confirm(
            modeladmin,
            request,
            queryset,
            action_name="cancel_selected",
            title=_("Cancel messages"),
            question=_(
                "Are you sure? Running messages are asked to stop (their handler sees it "
                "within half a lease); messages that have not started are dead-lettered as "
                "Cancelled. Finished messages are left alone."
            ),
            submit_label=_("Yes, cancel them"),
        )
    done = asked = 0
    for queue, seqs in _batches(queryset):
        for seq in seqs:
            asked += 1
            try:
                done += request_cancel(queue, seq, using=queryset.db)
            except (MessageFinishedError, MessageNotFoundError):
                pass
    text = ngettext(
        "Cancelled or asked to stop %(count)d message.",
        "Cancelled or asked to stop %(count)d messages.",
        done,
    )
    modeladmin.message_user(request, text % {"count": done}, messages.SUCCESS)
    if asked > done:
        skipped = asked - done
        modeladmin.message_user(
            request,
            ngettext(
                "%(count)d selected message had finished or was asked already.",
                "%(count)d selected messages had finished or were asked already.",
                skipped,
            )
            % {"count": skipped},
            messages.WARNING,
        )
    return None


# -- Dead letters -------------------------------------------------------------------


@admin.action(permissions=["redrive"], description=gettext_lazy("Redrive selected dead letters"))
def redrive_selected(
    modeladmin: admin.ModelAdmin[Any], request: HttpRequest, queryset: QuerySet[Message]
) -> None:
    """Back to active in their own queue, delivery count reset."""
    _require(request, REDRIVE_PERMISSION)
    asked = done = 0
    for queue, seqs in _batches(queryset):
        asked += len(seqs)
        done += redrive(queue, seqs=seqs, using=queryset.db)
    _report(modeladmin, request, done, asked, "redriven")


class RedriveTargetForm(forms.Form):
    to_queue = forms.ChoiceField(label=gettext_lazy("Target queue"), choices=())

    def __init__(self, *args: Any, using: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["to_queue"]
        assert isinstance(field, forms.ChoiceField)
        # Dead letters move within their database: the target is one of its queues.
        field.choices = [(q.name, q.name) for q in list_queues(using=using)]


@admin.action(
    permissions=["redrive"], description=gettext_lazy("Redrive selected to another queue…")
)
def redrive_selected_to_queue(
    modeladmin: admin.ModelAdmin[Any], request: HttpRequest, queryset: QuerySet[Message]
) -> TemplateResponse | None:
    """An intermediate page picks the target queue; then the dead letters move there."""
    _require(request, REDRIVE_PERMISSION)
    form = RedriveTargetForm(request.POST if request.POST.get("post") else None, using=queryset.db)
    if form.is_bound and form.is_valid():
        target = form.cleaned_data["to_queue"]
        asked = done = 0
        for queue, seqs in _batches(queryset):
            asked += len(seqs)
            done += redrive(queue, seqs=seqs, to_queue=target, using=queryset.db)
        _report(modeladmin, request, done, asked, "redriven")
        return None
    return _confirm(
        modeladmin,
        request,
        queryset,
        action_name="redrive_selected_to_queue",
        title=_("Redrive to another queue"),
        question=_("Move these dead letters to which queue? They become active there."),
        submit_label=_("Redrive"),
        form=form,
    )


@admin.action(permissions=["purge"], description=gettext_lazy("Purge selected dead letters…"))
def purge_selected(
    modeladmin: admin.ModelAdmin[Any], request: HttpRequest, queryset: QuerySet[Message]
) -> TemplateResponse | None:
    """Delete dead letters for good, after a confirmation page."""
    _require(request, PURGE_PERMISSION)
    if request.POST.get("post"):
        asked = done = 0
        for queue, seqs in _batches(queryset):
            asked += len(seqs)
            done += purge(queue, seqs=seqs, using=queryset.db)
        _report(modeladmin, request, done, asked, "purged")
        return None
    return _confirm(
        modeladmin,
        request,
        queryset,
        action_name="purge_selected",
        title=_("Purge dead letters"),
        question=_("Are you sure? These dead letters will be deleted for good:"),
        submit_label=_("Yes, purge them"),
    )


# -- Queues -------------------------------------------------------------------------

#: Dead letters one whole-queue action moves or removes per request (in chunks of
#: ``REAP_CHUNK`` rows, one transaction each), so a huge dead-letter queue never holds
#: a request (or a database writer) for minutes; run the action again for the rest.
WHOLE_QUEUE_LIMIT = 10_000


def _whole_queues(
    modeladmin: admin.ModelAdmin[Any],
    request: HttpRequest,
    queryset: QuerySet[Queue],
    verb: Callable[..., int],
    name: str,
) -> int:
    done = 0
    for queue in queryset:
        left = WHOLE_QUEUE_LIMIT - done
        if left <= 0:
            break
        done += verb(queue.name, limit=left, using=queryset.db)
    if done >= WHOLE_QUEUE_LIMIT:
        modeladmin.message_user(
            request,
            _("Stopped after %(count)d dead letters; run the action again to %(verb)s the rest.")
            % {"count": done, "verb": name},
            messages.WARNING,
        )
    return done


@admin.action(
    permissions=["redrive"], description=gettext_lazy("Redrive all dead letters of selected queues")
)
def redrive_queue_dlq(
    modeladmin: admin.ModelAdmin[Any], request: HttpRequest, queryset: QuerySet[Queue]
) -> None:
    _require(request, REDRIVE_PERMISSION)
    done = _whole_queues(modeladmin, request, queryset, redrive, "redrive")
    _report(modeladmin, request, done, done, "redriven")


@admin.action(
    permissions=["purge"], description=gettext_lazy("Purge all dead letters of selected queues…")
)
def purge_queue_dlq(
    modeladmin: admin.ModelAdmin[Any], request: HttpRequest, queryset: QuerySet[Queue]
) -> TemplateResponse | None:
    _require(request, PURGE_PERMISSION)
    if request.POST.get("post"):
        done = _whole_queues(modeladmin, request, queryset, purge, "purge")
        _report(modeladmin, request, done, done, "purged")
        return None
    return _confirm(
        modeladmin,
        request,
        queryset,
        action_name="purge_queue_dlq",
        title=_("Purge dead-letter queues"),
        question=_("Are you sure? Every dead letter of these queues will be deleted for good:"),
        submit_label=_("Yes, purge them"),
    )


@admin.action(permissions=["pause"], description=gettext_lazy("Pause selected queues"))
def pause_queues(
    modeladmin: admin.ModelAdmin[Any], request: HttpRequest, queryset: QuerySet[Queue]
) -> None:
    """Stop handing out messages of the selected queues (sends still go in)."""
    _each_queue(modeladmin, request, queryset, pause_queue, "paused")


@admin.action(permissions=["pause"], description=gettext_lazy("Resume selected queues"))
def resume_queues(
    modeladmin: admin.ModelAdmin[Any], request: HttpRequest, queryset: QuerySet[Queue]
) -> None:
    _each_queue(modeladmin, request, queryset, resume_queue, "resumed")


def _each_queue(
    modeladmin: admin.ModelAdmin[Any],
    request: HttpRequest,
    queryset: QuerySet[Queue],
    verb: Callable[..., Any],
    done: str,
) -> None:
    """Pause or resume each selected queue on the database the page shows."""
    _require(request, PAUSE_PERMISSION)
    names = [q.name for q in queryset]
    for name in names:
        verb(name, using=queryset.db)
    _report_queues(modeladmin, request, len(names), done)


def _report_queues(
    modeladmin: admin.ModelAdmin[Any], request: HttpRequest, n: int, verb: str
) -> None:
    text = ngettext("%(n)d queue %(verb)s.", "%(n)d queues %(verb)s.", n) % {"n": n, "verb": verb}
    modeladmin.message_user(request, text, messages.SUCCESS)
