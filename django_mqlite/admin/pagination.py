"""Changelists that stay fast on a million rows.

Django's changelist asks its paginator for ``count``, which is a ``COUNT(*)`` over every
matching row: a full index scan on a deep queue, on every page view. Here the count is
exact only while it is small — ``COUNT(*)`` over a subquery with ``LIMIT cap + 1``, which
stops after ``cap + 1`` index entries — and an estimate beyond that:

- PostgreSQL: the planner's row estimate for the changelist's own query
  (``EXPLAIN (FORMAT JSON)``, backed by ``pg_class.reltuples`` and the column statistics).
- SQLite, which keeps no usable row estimates: the span of sequence numbers
  ``max(seq) - min(seq) + 1`` of the matching rows, two index seeks. Seqs only grow, so
  the span is an upper bound (gaps are messages already settled).

The admins set ``show_full_result_count = False`` too, so the changelist never runs the
second, unfiltered count either.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.paginator import Paginator
from django.db import connections
from django.db.models import QuerySet
from django.utils.functional import cached_property

#: Counts up to this many rows are exact; above it they are estimates.
EXACT_COUNT_CAP = 10_000


def capped_count(queryset: QuerySet[Any], cap: int = EXACT_COUNT_CAP) -> int:
    """``min(count, cap + 1)``, reading at most ``cap + 1`` rows."""
    return queryset.order_by().values("pk")[: cap + 1].count()


def estimated_count(queryset: QuerySet[Any]) -> int:
    """A cheap estimate of how many rows ``queryset`` matches (see the module docstring)."""
    connection = connections[queryset.db]
    # The one vendor branch of the admin: row estimates are not something Django's
    # database features describe.
    if connection.vendor == "postgresql":
        sql, params = queryset.order_by().values("pk").query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
            plan = cursor.fetchone()[0]
        if isinstance(plan, str):
            plan = json.loads(plan)
        return int(plan[0]["Plan"]["Plan Rows"])
    seqs = queryset.order_by().values_list("pk", flat=True)
    low = seqs.order_by("pk").first()
    high = seqs.order_by("-pk").first()
    return 0 if low is None or high is None else int(high) - int(low) + 1


class EstimatedCountPaginator(Paginator):
    """A paginator whose ``count`` is exact when small and estimated when large."""

    @cached_property
    def count(self) -> int:
        queryset = self.object_list
        if not isinstance(queryset, QuerySet):  # pragma: no cover - lists are cheap
            return len(queryset)
        exact = capped_count(queryset)
        if exact <= EXACT_COUNT_CAP:
            return exact
        return max(exact, estimated_count(queryset))
