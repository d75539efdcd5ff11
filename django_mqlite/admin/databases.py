"""Which database an admin page shows, when queues live on several.

Every page of the django-mqlite admin shows one queue database at a time: the one named
by ``?database=`` (a filter in the sidebar, shown when there is more than one), else
``MQLITE["DATABASE"]``. The queue databases are ``MQLITE["DATABASE"]`` and every alias a
queue in ``MQLITE["QUEUES"]`` is declared on. A detail page opened from a changelist
keeps the changelist's choice (Django carries it in ``_changelist_filters``), and the
actions act on the rows of the database shown, through the engine's verbs with
``using=`` that database.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.db.models import QuerySet
from django.http import HttpRequest, QueryDict

from ..engine.databases import queue_databases

PARAM = "database"


def selected(request: HttpRequest) -> str:
    """The queue database the request asks for (the first one when it names none)."""
    value = request.GET.get(PARAM)
    if value is None:
        value = QueryDict(request.GET.get("_changelist_filters", "")).get(PARAM)
    aliases = queue_databases()
    return value if value in aliases else aliases[0]


class DatabaseFilter(admin.SimpleListFilter):
    """The sidebar's database picker: one entry per queue database, no "All" (rows of
    different databases cannot be listed together)."""

    title = "database"
    parameter_name = PARAM

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(alias, alias) for alias in queue_databases()]

    def has_output(self) -> bool:
        return len(self.lookup_choices) > 1

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset  # the admin's get_queryset has picked the database already

    def choices(self, changelist: ChangeList) -> Iterator[dict[str, Any]]:  # type: ignore[override]
        aliases = [alias for alias, _ in self.lookup_choices]
        current = self.value() if self.value() in aliases else aliases[0]
        for alias, title in self.lookup_choices:
            yield {
                "selected": alias == current,
                "query_string": changelist.get_query_string({PARAM: alias}),
                "display": title,
            }


class OnQueueDatabase(admin.ModelAdmin):
    """Rows come from the queue database the request picked (see ``selected``)."""

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).using(selected(request))

    def get_list_filter(self, request: HttpRequest) -> Any:
        return (DatabaseFilter, *super().get_list_filter(request))
