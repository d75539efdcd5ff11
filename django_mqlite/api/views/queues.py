"""Queues: list, create, read, change settings, delete; stats."""

from __future__ import annotations

import dataclasses
from typing import Any

from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request
from rest_framework.response import Response

import django_mqlite as mq

from .. import serializers as s
from .base import BODY_ERRORS, MQView, errors, extend_schema


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
        queues = mq.list_queues()
        shown = set(self.visible(q.name for q in queues))
        return Response({"queues": [queue_dict(q) for q in queues if q.name in shown]})

    @extend_schema(
        operation_id="create_queue",
        request=s.QueueCreateSerializer,
        responses={
            201: s.QueueSerializer,
            200: s.QueueSerializer,
            **errors(*BODY_ERRORS, 409),
        },
        description="Create a queue (201). An existing queue is returned (200) when every "
        "setting given matches it, and is a 409 `already_exists` when one differs; "
        "settings not given are never changed (PATCH changes them).",
    )
    def post(self, request: Request) -> Response:
        options = self.body(s.QueueCreateSerializer)
        name = options.pop("name")
        self.require_queue("manage", name)
        try:
            mq.get_queue(name)
            existed = True
        except mq.QueueNotFoundError:
            existed = False
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
        return Response(queue_dict(mq.update_queue(name, **changes)))

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
        description="Delete an empty queue; one that still holds messages (live, "
        "dead-lettered or kept results) is a 409 `queue_not_empty` unless `force=true`.",
    )
    def delete(self, request: Request, name: str) -> Response:
        force = self.query(s.DeleteQuerySerializer).get("force", False)
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
        # Only the queues this user may view are counted (each from its own index
        # entries), not every queue's messages before filtering.
        shown = self.visible(sorted(q.name for q in mq.list_queues()))
        return Response({"queues": {n: stats_dict(mq.stats(n)) for n in shown}})
