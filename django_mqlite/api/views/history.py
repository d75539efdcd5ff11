"""Per-minute history of a queue: ``GET queues/{name}/history/?minutes=``."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

import django_mqlite as mq

from .base import MQView, errors, extend_schema
from .queues import QueueStatsView

TOTALS = (
    "enqueued",
    "delivered",
    "completed",
    "abandoned",
    "reclaimed",
    "retried",
    "exhausted",
    "rejected",
    "expired",
    "dead_lettered",
    "redriven",
    "purged",
)
#: The longest window over HTTP (a week of minutes), whatever the retention.
MAX_MINUTES = 7 * 24 * 60


class HistoryQuerySerializer(serializers.Serializer):
    minutes = serializers.IntegerField(
        min_value=1,
        max_value=MAX_MINUTES,
        required=False,
        help_text="how many minutes, the current one included (default 60)",
    )


@extend_schema_field(
    {
        "type": "object",
        "nullable": True,
        "additionalProperties": {"type": "integer"},
        "description": "messages per state at the end of the minute; null when no sample "
        "was taken in that minute",
    }
)
class DepthField(serializers.DictField):
    pass


class BucketSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    depth = DepthField(child=serializers.IntegerField(), allow_null=True)

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        for name in TOTALS:
            fields[name] = serializers.IntegerField(
                help_text=f"how much the lifetime total {name} grew in this minute"
            )
        return fields


class HistorySerializer(serializers.Serializer):
    queue = serializers.CharField()
    minutes = serializers.IntegerField()
    buckets = BucketSerializer(many=True)


class QueueHistoryView(MQView):
    # Reading history needs exactly what reading the queue's stats needs.
    mq_actions = QueueStatsView.mq_actions

    @extend_schema(
        operation_id="queue_history",
        parameters=[HistoryQuerySerializer],
        responses={200: HistorySerializer, **errors(400, 404)},
        description="Per-minute buckets, oldest first, the last one being the minute in "
        "progress: how much each lifetime total grew, and the depth per state.",
    )
    def get(self, request: Request, name: str) -> Response:
        minutes = self.query(HistoryQuerySerializer).get("minutes", 60)
        buckets = mq.history(name, minutes=minutes)
        data = {"queue": name, "minutes": minutes, "buckets": buckets}
        return Response(HistorySerializer(data).data)
