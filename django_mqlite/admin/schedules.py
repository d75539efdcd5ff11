"""The Schedules page: periodic schedules stored in the database, created, changed,
paused, resumed and run from here; those declared in ``MQLITE["PERIODIC"]`` listed
beside them, read-only.

Every write goes through the engine (``mq.create_schedule``, ``update_schedule``,
``pause_schedule``, ``resume_schedule``, ``run_schedule``, ``delete_schedule``), which
checks the schedule and moves its cursor so that each occurrence is still enqueued once
across hosts; the form asks the engine's own check (``engine.schedules.build``) and
shows what it refuses as the form's errors. Adding, changing and deleting take Django's
model permissions on Schedule; pausing, resuming and running now take
``django_mqlite.operate_schedule``. A schedule's page shows its next 10 fire times.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext_lazy, ngettext

import django_mqlite as mq

from ..engine import databases
from ..engine import schedules as engine
from ..models import Schedule

OPERATE_PERMISSION = "django_mqlite.operate_schedule"
FIRE_TIMES = 10
#: The form's fields, as ``mq.create_schedule`` names them.
SPEC = {
    "cron": "cron",
    "timezone": "timezone",
    "task": "task",
    "args": "args",
    "kwargs": "kwargs",
    "queue": "queue",
    "body": "body",
    "overlap": "overlap",
    "jitter_s": "jitter",
}


def _spec(data: dict[str, Any]) -> dict[str, Any]:
    return {arg: data.get(field) for field, arg in SPEC.items()}


# Not ModelForm[Schedule]: the subscript exists for the type checker only (django-stubs),
# and a process that has not imported what adds it at run time (a worker, a project
# without the test settings' imports) failed to import the admin.
class ScheduleForm(forms.ModelForm):
    jitter_s = forms.IntegerField(label="jitter (seconds)", initial=0)

    class Meta:
        model = Schedule
        fields = (
            *("name", "cron", "timezone", "task", "args", "kwargs", "queue", "body"),
            *("overlap", "jitter_s", "paused"),
        )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "timezone" in self.fields:
            self.fields["timezone"].required = False
            self.fields["timezone"].help_text = "An IANA name; empty: settings.TIME_ZONE."

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        name = data.get("name") or (self.instance.name if self.instance.pk else "")
        if self.errors:
            return data
        try:
            engine.build(name, **_spec(data), paused=data.get("paused"))
            if not self.instance.pk and name in {s.name for s in mq.list_schedules()}:
                raise mq.ScheduleExistsError(f"a schedule named {name!r} exists already")
        except mq.MQLiteError as exc:
            raise ValidationError(str(exc), code=exc.code) from None
        return data


@admin.action(permissions=["operate"], description=gettext_lazy("Pause selected schedules"))
def pause_schedules(
    modeladmin: ScheduleAdmin, request: HttpRequest, queryset: QuerySet[Schedule]
) -> None:
    _each(modeladmin, request, queryset, mq.pause_schedule, "paused")


@admin.action(permissions=["operate"], description=gettext_lazy("Resume selected schedules"))
def resume_schedules(
    modeladmin: ScheduleAdmin, request: HttpRequest, queryset: QuerySet[Schedule]
) -> None:
    _each(modeladmin, request, queryset, mq.resume_schedule, "resumed")


@admin.action(permissions=["operate"], description=gettext_lazy("Run selected schedules now"))
def run_schedules(
    modeladmin: ScheduleAdmin, request: HttpRequest, queryset: QuerySet[Schedule]
) -> None:
    _each(modeladmin, request, queryset, mq.run_schedule, "run")


def _each(
    modeladmin: ScheduleAdmin,
    request: HttpRequest,
    queryset: QuerySet[Schedule],
    verb: Any,
    done: str,
) -> None:
    if not request.user.has_perm(OPERATE_PERMISSION):  # safe to call from anywhere
        raise PermissionDenied
    names = list(queryset.values_list("name", flat=True))
    skipped = [name for name in names if verb(name, using=queryset.db) is False]
    n = len(names) - len(skipped)
    text = ngettext("%(n)d schedule %(verb)s.", "%(n)d schedules %(verb)s.", n)
    modeladmin.message_user(request, text % {"n": n, "verb": done}, messages.SUCCESS)
    if skipped:
        modeladmin.message_user(
            request,
            "Not run, the last run is still live (overlap: skip): " + ", ".join(skipped),
            messages.WARNING,
        )


class ScheduleAdmin(admin.ModelAdmin):  # not [Schedule]: see ScheduleForm
    form = ScheduleForm
    list_display = ("name", "target", "cron", "timezone", "paused", "overlap", "jitter_s")
    list_filter = ("paused", "overlap")
    search_fields = ("name", "task", "queue")
    actions = [pause_schedules, resume_schedules, run_schedules]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Schedule]:
        return super().get_queryset(request).using(databases.alias_of(None))

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # Pausing and resuming are their own actions (they move the cursor).
        return ("name", "paused") if obj is not None else ()

    def has_operate_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(OPERATE_PERMISSION)

    @admin.display(description="enqueues")
    def target(self, obj: Schedule) -> str:
        return f"task {obj.task}" if obj.task else f"message to {obj.queue}"

    def save_model(self, request: HttpRequest, obj: Schedule, form: Any, change: bool) -> None:
        data = form.cleaned_data
        alias = databases.alias_of(None)
        if change:
            mq.update_schedule(obj.name, using=alias, **_spec(data))
        else:
            mq.create_schedule(
                obj.name, using=alias, paused=bool(data.get("paused")), **_spec(data)
            )
        obj.pk = Schedule.objects.using(alias).values_list("pk", flat=True).get(name=obj.name)

    def delete_model(self, request: HttpRequest, obj: Schedule) -> None:
        mq.delete_schedule(obj.name, using=databases.alias_of(None))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for name in queryset.values_list("name", flat=True):
            mq.delete_schedule(name, using=queryset.db)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        def declared() -> list[dict[str, Any]]:  # called by the template, after the checks
            return [
                {
                    "schedule": s,
                    "target": f"task {s.task}" if s.task else f"message to {s.queue}",
                    "next": engine.next_fire_times(s.name, 1)[0].at,
                }
                for s in mq.list_schedules()
                if not s.stored
            ]

        context = {**(extra_context or {}), "mq_declared": declared}
        return super().changelist_view(request, context)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        def fire_times() -> list[engine.FireTime]:  # called by the template, after the checks
            obj = self.get_object(request, unquote(object_id))
            if obj is None:
                return []
            return mq.next_fire_times(obj.name, FIRE_TIMES, using=databases.alias_of(None))

        context = {**(extra_context or {}), "mq_fire_times": fire_times}
        return super().change_view(request, object_id, form_url, context)


admin.site.register(Schedule, ScheduleAdmin)
