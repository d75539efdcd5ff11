"""What every django-mqlite admin shares: read-only rows, and the dedicated permissions
(``django_mqlite.redrive_message``, ``purge_message``, ``cancel_message``,
``pause_queue``) that guard the actions."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.options import ShowFacets
from django.http import HttpRequest

from .actions import CANCEL_PERMISSION, PAUSE_PERMISSION, PURGE_PERMISSION, REDRIVE_PERMISSION
from .pagination import EstimatedCountPaginator


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows the engine owns: viewable, never added, edited or deleted by hand.

    Changes go through the engine's verbs (the actions below, ``mq.*``, the ``mqlite``
    command); a hand edit could break an invariant the engine keeps (lines, counters).
    """

    paginator = EstimatedCountPaginator
    show_full_result_count = False
    show_facets = ShowFacets.NEVER

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_redrive_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(REDRIVE_PERMISSION)

    def has_purge_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(PURGE_PERMISSION)

    def has_pause_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(PAUSE_PERMISSION)

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(CANCEL_PERMISSION)
