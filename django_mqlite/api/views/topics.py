"""Topics: list, create, read, delete; subscribe and unsubscribe a queue; publish.

Permissions, per queue as everywhere in this API (``permissions.QueuePermission``):

- reading a topic shows only the subscriptions of queues the caller may read, and a
  topic is shown at all when the caller may read every queue or one it feeds;
- creating and deleting a topic is ``manage`` across queues (a topic spans queues);
- subscribing and unsubscribing a queue is ``manage`` on that queue (its owner decides
  what arrives in it);
- subscribing a task (``{"task": "app.tasks.on_event"}``) is ``manage`` on the task's
  queue, and that queue must take remote sends (``MQLITE["OPEN_TASK_QUEUES"]``): a task
  subscription makes every publish a call of the task, which over HTTP is what a remote
  send to the queue does. The check comes before the path is looked at, and the path
  resolves by the rule of a task message (``mq.subscribe_task``): only a Django task of
  an installed app, of this queue and a django-mqlite backend; nothing else imported;
- publishing is ``send`` on **every** queue subscribed to the topic: a publish writes a
  message into each of them, so it asks what a send to each would ask, and a queue that
  takes no remote sends (a Tasks queue not in ``OPEN_TASK_QUEUES``) makes the topic
  unpublishable over HTTP. The
  check runs before the publish (nothing written on a 403) and again after it, inside
  the same transaction, over the subscriptions the publish saw: a subscription made in
  between cannot slip a queue past it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from django.db import transaction
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

import django_mqlite as mq

from ...permissions import accepts_remote_sends, task_queue_names
from .. import serializers as s
from .base import BODY_ERRORS, MQView, errors, extend_schema, task_queue_refusal
from .messages import out_message, send_options


def topic_dict(topic: mq.Topic, shown: set[str] | None = None) -> dict[str, Any]:
    data = dataclasses.asdict(topic)
    data["subscriptions"] = [
        sub for sub in data["subscriptions"] if shown is None or sub["queue"] in shown
    ]
    return dict(s.TopicSerializer(data).data)


class TopicsMixin(MQView):
    def shown(self, topic: mq.Topic) -> set[str] | None:
        """The subscribed queues the caller may read (None: every queue), or a 403 when
        the topic is not the caller's to see."""
        if self.queue_allowed("read", None):
            return None
        queues = set(self.visible(sub.queue for sub in topic.subscriptions))
        if not queues:
            raise PermissionDenied(f"you may not read topic {topic.name!r}")
        return queues


class TopicListView(TopicsMixin):
    mq_actions = {"GET": "read", "POST": "manage"}

    @extend_schema(operation_id="list_topics", responses={200: s.TopicListSerializer, **errors()})
    def get(self, request: Request) -> Response:
        out = []
        for topic in mq.list_topics():
            try:
                out.append(topic_dict(topic, self.shown(topic)))
            except PermissionDenied:
                continue
        return Response({"topics": out})

    @extend_schema(
        operation_id="create_topic",
        request=s.TopicCreateSerializer,
        responses={201: s.TopicSerializer, **errors(*BODY_ERRORS, 409)},
    )
    def post(self, request: Request) -> Response:
        name = self.body(s.TopicCreateSerializer)["name"]
        self.require_queue("manage", None)
        return Response(topic_dict(mq.create_topic(name)), status=201)


class TopicDetailView(TopicsMixin):
    mq_actions = {"GET": "read", "DELETE": "manage"}

    @extend_schema(operation_id="get_topic", responses={200: s.TopicSerializer, **errors(400, 404)})
    def get(self, request: Request, topic: str) -> Response:
        found = mq.get_topic(topic)
        return Response(topic_dict(found, self.shown(found)))

    @extend_schema(
        operation_id="delete_topic",
        responses={204: None, **errors(400, 404)},
        description="Delete the topic and its subscriptions (the queues stay).",
    )
    def delete(self, request: Request, topic: str) -> Response:
        self.require_queue("manage", None)
        mq.delete_topic(topic)
        return Response(status=204)


class SubscriptionView(TopicsMixin):
    """``name`` is the subscribed queue: ``QueuePermission`` asks ``manage`` on it."""

    mq_actions = {"PUT": "manage", "DELETE": "manage"}

    @extend_schema(
        operation_id="subscribe",
        request=s.SubscribeSerializer,
        responses={200: s.SubscriptionSerializer, **errors(*BODY_ERRORS)},
        description="Subscribe the queue to the topic with `filter` (absent or null: every "
        "message), or replace its subscription. With `task`, a Django task of this queue "
        "subscribes instead (the queue must be in `OPEN_TASK_QUEUES`, else 403). A "
        "malformed filter, or a `task` that is not a task of this queue, is a 400 "
        "`invalid_argument`.",
    )
    def put(self, request: Request, topic: str, name: str) -> Response:
        options = self.body(s.SubscribeSerializer)
        task = options.get("task")
        if task is None:
            sub = mq.subscribe(topic, name, options.get("filter"))
        else:
            if not accepts_remote_sends(name):
                raise PermissionDenied(task_queue_refusal(name))
            sub = mq.subscribe_task(topic, task, options.get("filter"), queue=name)
        return Response(s.SubscriptionSerializer(dataclasses.asdict(sub)).data)

    @extend_schema(
        operation_id="unsubscribe",
        responses={204: None, **errors(400, 404)},
        description="Remove the queue's subscription (404 `not_found` if it had none).",
    )
    def delete(self, request: Request, topic: str, name: str) -> Response:
        if not mq.unsubscribe(topic, name):
            raise mq.QueueNotFoundError(f"queue {name!r} is not subscribed to {topic!r}")
        return Response(status=204)


class PublishView(TopicsMixin):
    mq_actions = {"POST": "send"}

    @extend_schema(
        operation_id="publish",
        request=s.OutMessageSerializer,
        responses={201: s.PublishedSerializer, **errors(*BODY_ERRORS, 409)},
        description="Publish one message: a copy in every subscribed queue whose filter "
        "takes it, in one transaction. Needs `send` on every subscribed queue.",
    )
    def post(self, request: Request, topic: str) -> Response:
        self.require_publish(mq.get_topic(topic))
        message = out_message(self.body(s.OutMessageSerializer))
        with transaction.atomic(using=mq.topic_database(topic)):
            reached = mq.publish(topic, message.body, **send_options(message))
            # The publish holds the topic's row until commit: what it saw is what is there.
            self.require_publish(mq.get_topic(topic))
        return Response({"reached": reached}, status=201)

    def require_publish(self, topic: mq.Topic) -> None:
        tasks = task_queue_names()
        for sub in topic.subscriptions:
            # A Tasks queue is published to over HTTP only as a remote send to it would
            # be (OPEN_TASK_QUEUES), and only through a task subscription (a signed
            # call of the task the queue's owner subscribed, never a copy).
            plain_copy = sub.queue in tasks and sub.task is None
            if not accepts_remote_sends(sub.queue) or plain_copy:
                raise PermissionDenied(task_queue_refusal(sub.queue))
            if not self.queue_allowed("send", sub.queue):
                raise PermissionDenied(
                    f"publishing to {topic.name!r} needs send on every subscribed queue; "
                    f"not on {sub.queue!r}"
                )
