"""Workflow batches, read-only: ``GET batches/`` and ``GET batches/{id}/`` (progress).

A batch spans queues (its children and its callbacks may be on any), and its counts
describe them all, so reading one is ``read`` across queues (``view_queue`` granted for
every queue), as reading every queue's stats is. Batches are made in the producer's
transaction (``mq.batch``), never over HTTP.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

import django_mqlite as mq

from .base import MQView, errors, extend_schema


class BatchSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    state = serializers.ChoiceField(choices=["open", "running", "finished"])
    total = serializers.IntegerField()
    pending = serializers.IntegerField(help_text="children not settled yet")
    completed = serializers.IntegerField()
    failed = serializers.IntegerField(help_text="children dead-lettered, for any reason")
    cancelled = serializers.IntegerField(help_text="children removed without running")
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    callbacks = serializers.DictField(
        child=serializers.IntegerField(), help_text="each callback enqueued, to its seq"
    )
    callback_error = serializers.CharField(allow_null=True)


class BatchListSerializer(serializers.Serializer):
    batches = BatchSerializer(many=True)


class BatchListQuerySerializer(serializers.Serializer):
    state = serializers.ChoiceField(choices=["running", "finished"], required=False)
    limit = serializers.IntegerField(min_value=1, max_value=1000, required=False)


def batch_dict(info: mq.BatchInfo) -> dict[str, Any]:
    return dict(BatchSerializer(dataclasses.asdict(info)).data)


class BatchesMixin(MQView):
    mq_actions = {"GET": "read"}

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        self.require_queue("read", None)  # before anything is looked up


class BatchListView(BatchesMixin):
    @extend_schema(
        operation_id="list_batches",
        parameters=[BatchListQuerySerializer],
        responses={200: BatchListSerializer, **errors(400)},
        description="The batches made with `mq.batch`, newest first (`limit` default 50).",
    )
    def get(self, request: Request) -> Response:
        query = self.query(BatchListQuerySerializer)
        found = mq.list_batches(state=query.get("state"), limit=query.get("limit", 50))
        return Response({"batches": [batch_dict(b) for b in found]})


class BatchDetailView(BatchesMixin):
    @extend_schema(
        operation_id="get_batch",
        responses={200: BatchSerializer, **errors(400, 404)},
        description="A batch's progress: its children by outcome and its callbacks.",
    )
    def get(self, request: Request, batch_id: int) -> Response:
        return Response(batch_dict(mq.get_batch(batch_id)))
