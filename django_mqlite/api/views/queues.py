"""Queues: list, create, read, change settings, delete; stats."""

from __future__ import annotations

import dataclasses
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

import django_mqlite as mq

from .. import serializers as s
from .base import BODY_ERRORS, MQView, errors


def queue_dict(queue: mq.Queue) -> dict[str, Any]:
    data = dataclasses.asdict(queue)
    data["ordering"] = str(queue.ordering)
    return s.QueueSerializer(data).data


def stats_dict(stats: mq.QueueStats) -> dict[str, Any]:
    return s.QueueStatsSerializer(dataclasses.asdict(stats)).data


class QueueListView(MQView):
    mq_actions = {"GET": "read", "POST": "manage"}

    @extend_schema(operation_id="list_queues", responses={200: s.QueueListSerializer, **errors()})
    def get(self, request: Request) -> Response:
        return Response({"queues": [queue_dict(q) for q in mq.list_queues()]})

    @extend_schema(
        operation_id="create_queue",
        request=s.QueueCreateSerializer,
        responses={
            201: s.QueueSerializer,
            200: s.QueueSerializer,
            **errors(*BODY_ERRORS),
        },
        description="Create a queue (201), or bring an existing one's settings to those "
        "given, omitted ones to their defaults (200), like `mq.create_queue`.",
    )
    def post(self, request: Request) -> Response:
        options = self.body(s.QueueCreateSerializer)
        name = options.pop("name")
        existed = name in {q.name for q in mq.list_queues()}
        queue = mq.create_queue(name, **options)
        return Response(queue_dict(queue), status=200 if existed else 201)


class QueueDetailView(MQView):
    mq_actions = {"GET": "read", "PATCH": "manage", "DELETE": "manage"}

    @extend_schema(operation_id="get_queue", responses={200: s.QueueSerializer, **errors(400, 404)})
    def get(self, request: Request, name: str) -> Response:
        return Response(queue_dict(mq.get_queue(name)))

    @extend_schema(
        operation_id="update_queue",
        request=s.QueueSettingsSerializer,
        responses={200: s.QueueSerializer, **errors(*BODY_ERRORS)},
        description="Change the settings given; the others keep their values.",
    )
    def patch(self, request: Request, name: str) -> Response:
        changes = self.body(s.QueueSettingsSerializer)
        current = mq.get_queue(name)
        settings = {
            f.name: getattr(current, f.name)
            for f in dataclasses.fields(current)
            if f.name not in ("name", "created_at", "paused")
        }
        settings["ordering"] = str(current.ordering)
        return Response(queue_dict(mq.create_queue(name, **{**settings, **changes})))

    @extend_schema(
        operation_id="delete_queue",
        parameters=[
            OpenApiParameter(
                "force",
                bool,
                description="delete even when the queue holds live messages",
            )
        ],
        responses={204: None, **errors(400, 404, 409)},
    )
    def delete(self, request: Request, name: str) -> Response:
        force = self.valid(s.DeleteQuerySerializer, request.query_params).get("force", False)
        mq.delete_queue(name, force=force)
        return Response(status=204)


class QueuePauseView(MQView):
    mq_actions = {"POST": "manage"}

    @extend_schema(
        operation_id="pause_queue",
        request=None,
        responses={200: s.QueueSerializer, **errors(400, 404)},
        description="Stop handing out this queue's messages; sends are still accepted and "
        "leases already held run to their end.",
    )
    def post(self, request: Request, name: str) -> Response:
        return Response(queue_dict(mq.pause_queue(name)))


class QueueResumeView(MQView):
    mq_actions = {"POST": "manage"}

    @extend_schema(
        operation_id="resume_queue",
        request=None,
        responses={200: s.QueueSerializer, **errors(400, 404)},
        description="Hand out this queue's messages again.",
    )
    def post(self, request: Request, name: str) -> Response:
        return Response(queue_dict(mq.resume_queue(name)))


class QueueStatsView(MQView):
    mq_actions = {"GET": "read"}

    @extend_schema(
        operation_id="queue_stats",
        responses={200: s.QueueStatsSerializer, **errors(400, 404)},
    )
    def get(self, request: Request, name: str) -> Response:
        return Response(stats_dict(mq.stats(name)))


class StatsView(MQView):
    mq_actions = {"GET": "read"}

    @extend_schema(operation_id="all_stats", responses={200: s.AllStatsSerializer, **errors()})
    def get(self, request: Request) -> Response:
        everything = mq.stats()
        return Response({"queues": {n: stats_dict(st) for n, st in everything.items()}})
