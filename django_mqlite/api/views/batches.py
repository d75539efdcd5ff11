"""Workflow batches: ``POST batches/`` (create one with its children and callbacks),
``GET batches/`` and ``GET batches/{id}/`` (progress).

A batch spans queues (its children and its callbacks may be on any), and its counts
describe them all, so reading one is ``read`` across queues (``view_queue`` granted for
every queue), as reading every queue's stats is. Creating one is ``send`` on each queue
it names, children's and callbacks' alike, asked before anything is written; the batch
is made by ``mq.batch`` in one transaction (the engine's rules: at least one child, one
database, callbacks checked), so a refused child leaves nothing behind.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

import django_mqlite as mq

from ...permissions import accepts_remote_sends
from ...tasks.front import remote_message
from .. import serializers as s
from .base import BODY_ERRORS, MQView, errors, extend_schema, task_queue_refusal
from .messages import out_message, send_options


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


class ChildSerializer(s.OutMessageSerializer):
    """A child: a message (``send``'s fields) and the queue it goes to."""

    queue = serializers.CharField(max_length=80)


class CallbackSerializer(s.OutMessageSerializer):
    """A callback: the message a batch enqueues when it finishes, and its queue."""

    queue = serializers.CharField(max_length=80)


class BatchCreateSerializer(s.StrictSerializer):
    children = serializers.ListField(child=ChildSerializer(), min_length=1)
    on_complete = CallbackSerializer(required=False)
    on_success = CallbackSerializer(required=False)
    on_failure = CallbackSerializer(required=False)

    def validate_children(self, value: list[Any]) -> list[Any]:
        if len(value) > s.batch_cap():
            raise serializers.ValidationError(f"at most {s.batch_cap()} children per request")
        return value


class BatchCreatedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    seqs = serializers.ListField(
        child=serializers.IntegerField(), help_text="each child's seq, in the order given"
    )


CALLBACKS = ("on_complete", "on_success", "on_failure")


def batch_dict(info: mq.BatchInfo) -> dict[str, Any]:
    return dict(BatchSerializer(dataclasses.asdict(info)).data)


class BatchesMixin(MQView):
    mq_actions = {"GET": "read", "POST": "send"}

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if request.method != "POST":  # a create asks per queue, once it has read them
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

    @extend_schema(
        operation_id="create_batch",
        request=BatchCreateSerializer,
        responses={201: BatchCreatedSerializer, **errors(*BODY_ERRORS, 409)},
        description="Create a batch (`mq.batch`): its children, sent in one transaction, "
        "and the callbacks it enqueues exactly once when the last child settles. `send` on "
        "every queue named; nothing is written when any part is refused.",
    )
    def post(self, request: Request) -> Response:
        data = self.body(BatchCreateSerializer)
        children = [(c.pop("queue"), c) for c in data["children"]]
        callbacks = {name: data[name] for name in CALLBACKS if name in data}
        queues = {q for q, _ in children} | {cb["queue"] for cb in callbacks.values()}
        for queue in sorted(queues):
            self.require_queue("send", queue)
            if not accepts_remote_sends(queue):
                raise PermissionDenied(task_queue_refusal(queue))
        made = {name: _callback(cb) for name, cb in callbacks.items()}
        seqs: list[int] = []
        with mq.batch(  # one transaction: a refused child rolls back the whole batch
            on_complete=made.get("on_complete"),
            on_success=made.get("on_success"),
            on_failure=made.get("on_failure"),
        ) as b:
            for queue, attrs in children:
                message = remote_message(queue, out_message(attrs))
                seqs.append(b.send(queue, message.body, **send_options(message)))
        return Response({"id": b.id, "seqs": seqs}, status=201)


def _callback(attrs: dict[str, Any]) -> mq.Callback:
    queue = attrs.pop("queue")
    message = out_message(attrs)
    return mq.Callback(queue, message.body, **send_options(message))


class BatchDetailView(BatchesMixin):
    @extend_schema(
        operation_id="get_batch",
        responses={200: BatchSerializer, **errors(400, 404)},
        description="A batch's progress: its children by outcome and its callbacks.",
    )
    def get(self, request: Request, batch_id: int) -> Response:
        return Response(batch_dict(mq.get_batch(batch_id)))
