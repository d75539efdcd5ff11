"""Messages: send (one or many), peek, cancel a scheduled one or any live one; receive
and settle."""

from __future__ import annotations

from typing import Any, ClassVar

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

import django_mqlite as mq

from ...permissions import accepts_remote_sends
from ...tasks.front import remote_message
from .. import bodies, budget, longpoll
from .. import serializers as s
from .base import BODY_ERRORS, MQView, errors, extend_schema, task_queue_refusal

_SEND_REQUEST = PolymorphicProxySerializer(
    component_name="SendRequest",
    serializers=[s.OutMessageSerializer, s.SendBatchSerializer],
    resource_type_field_name=None,
)
_SEND_RESPONSE = PolymorphicProxySerializer(
    component_name="SendResponse",
    serializers=[s.SeqSerializer, s.SeqsSerializer],
    resource_type_field_name=None,
)


def out_message(attrs: dict[str, Any]) -> mq.OutMessage:
    options = {k: v for k, v in attrs.items() if k not in ("body", "body_base64")}
    return mq.OutMessage(bodies.from_wire(attrs), **options)


def send_options(message: mq.OutMessage) -> dict[str, Any]:
    """A message's keywords for ``mq.send`` (everything but its body)."""
    return {k: v for k, v in vars(message).items() if k != "body"}


def no_items(queue: str) -> list[Any]:
    """An empty batch still names a queue that must exist (404 otherwise)."""
    mq.get_queue(queue)
    return []


def messages_response(items: list[dict[str, Any]], truncated: bool = False) -> Response:
    """``items`` already rendered; ``truncated`` when the byte budget cut the list."""
    data: dict[str, Any] = {"messages": items}
    if truncated:
        data["truncated"] = True
    return Response(data)


def rendered(got: list[mq.Received]) -> list[dict[str, Any]]:
    return [dict(s.ReceivedSerializer(bodies.received(m)).data) for m in got]


class MessagesView(MQView):
    mq_actions = {"GET": "read", "POST": "send"}

    @extend_schema(
        operation_id="send",
        request=_SEND_REQUEST,
        responses={201: _SEND_RESPONSE, **errors(*BODY_ERRORS, 409)},
        description='Send one message, or many (`{"messages": [...]}`) in one transaction.',
    )
    def post(self, request: Request, name: str) -> Response:
        if not accepts_remote_sends(name):
            raise PermissionDenied(task_queue_refusal(name))
        data = request.data
        if isinstance(data, dict) and "messages" in data:
            batch = self.body(s.SendBatchSerializer)["messages"]
            seqs = mq.send_batch(name, [remote_message(name, out_message(m)) for m in batch])
            return Response({"seqs": seqs}, status=201)
        message = remote_message(name, out_message(self.body(s.OutMessageSerializer)))
        return Response({"seq": mq.send(name, message.body, **send_options(message))}, status=201)

    @extend_schema(
        operation_id="peek",
        parameters=[s.PeekQuerySerializer],
        responses={200: s.PeekedListSerializer, **errors(400, 404)},
    )
    def get(self, request: Request, name: str) -> Response:
        query = self.query(s.PeekQuerySerializer)
        state = query.get("state")

        def fetch(limit: int, after_seq: int) -> list[mq.Peeked]:
            return mq.peek(name, state=state, limit=limit, after_seq=after_seq)

        items, truncated = budget.peek_pages(
            fetch,
            lambda m: dict(s.PeekedSerializer(bodies.peeked(m)).data),
            query.get("limit", 32),
            query.get("after_seq", 0),
        )
        return messages_response(items, truncated)


class MessageView(MQView):
    mq_actions = {"DELETE": "send"}

    @extend_schema(
        operation_id="cancel_scheduled",
        responses={204: None, **errors(400, 404)},
        description="Remove a scheduled message that was never delivered.",
    )
    def delete(self, request: Request, name: str, seq: int) -> Response:
        if not mq.cancel_scheduled(name, seq):
            raise NotFound(f"message {seq} on {name!r} is not a never-delivered scheduled message")
        return Response(status=204)


class CancelView(MQView):
    """Cancel a message: ask a running one to stop, dead-letter a waiting one."""

    mq_actions = {"POST": "manage"}

    @extend_schema(
        operation_id="request_cancel",
        request=None,
        responses={200: s.RequestedSerializer, **errors(400, 404, 409)},
        description="Cancel the message (`mq.request_cancel`): a running one's handler is "
        "asked to stop (it sees the request within half a lease, at once on PostgreSQL); one "
        "that has not started is dead-lettered with reason `Cancelled` at once. `requested` "
        "is false when the running message had been asked already. A finished message is 409 "
        "`finished`, an unknown one 404 `not_found`.",
    )
    def post(self, request: Request, name: str, seq: int) -> Response:
        requested = mq.request_cancel(name, seq)
        return Response(s.RequestedSerializer({"requested": requested}).data)


class ReceiveView(MQView):
    mq_actions = {"POST": "receive"}

    @extend_schema(
        operation_id="receive",
        request=s.ReceiveRequestSerializer,
        responses={200: s.ReceivedListSerializer, **errors(*BODY_ERRORS)},
        description="Claim up to `max_messages`; `wait` long-polls up to that many seconds "
        "(at most 20) and answers as soon as something is claimable.",
    )
    def post(self, request: Request, name: str) -> Response:
        options = self.body(s.ReceiveRequestSerializer)
        wait = options.pop("wait", 0)
        asked = options.get("max_messages", 1)
        releasable = options.get("mode", "peek_lock") == "peek_lock" and not options.get(
            "attempt_id"
        )
        got = longpoll.receive(
            name,
            wait=wait,
            max_bytes=budget.claim_bytes(),
            attempt_scope=self.attempt_scope(),
            **options,
        )
        items = rendered(got)
        left = 0
        if releasable:
            items, left = budget.fill(items)
        if left:  # rendered larger than stored: what does not fit goes back, uncounted
            rest = got[len(items) :]
            mq.release(name, [(m.seq, m.lock_token or "") for m in rest])
        return messages_response(items, bool(left) or budget.may_be_cut(got, asked))


class ReceiveDeferredView(MQView):
    mq_actions = {"POST": "receive"}

    @extend_schema(
        operation_id="receive_deferred",
        request=s.ReceiveDeferredSerializer,
        responses={200: s.ReceivedListSerializer, **errors(*BODY_ERRORS)},
    )
    def post(self, request: Request, name: str) -> Response:
        options = self.body(s.ReceiveDeferredSerializer)
        seqs = options.pop("seqs")
        if not seqs:
            return messages_response(no_items(name))
        got = mq.receive_deferred(name, seqs, max_bytes=budget.claim_bytes(), **options)
        return messages_response(rendered(got), budget.may_be_cut(got, len(set(seqs))))


class SettleView(MQView):
    """One settlement verb on one message, fenced on ``lock_token``."""

    mq_actions = {"POST": "receive"}
    verb: ClassVar[str] = ""
    request_serializer: ClassVar[type[s.StrictSerializer]] = s.TokenSerializer

    def post(self, request: Request, name: str, seq: int) -> Response:
        args = dict(self.body(self.request_serializer))
        token = args.pop("lock_token")
        if self.verb == "renew":
            got = mq.renew_lease(name, seq, token, **args)
            answer = {"locked_until": got.locked_until, "cancel_requested": got.cancel_requested}
            return Response(s.RenewedSerializer(answer).data)
        if self.verb == "snooze":
            got = mq.snooze(name, seq, token, args["delay"])
            return Response(s.OutcomeSerializer({"outcome": got.outcome.value}).data)
        if self.verb == "reject":
            mq.reject(name, seq, token, args["reason"], args.get("description", ""))
        else:
            getattr(mq, self.verb)(name, seq, token, **args)
        return Response(status=204)


def _settle_view(verb: str, serializer: type[s.StrictSerializer], doc: str) -> type[SettleView]:
    ok: Any = {"renew": s.RenewedSerializer, "snooze": s.OutcomeSerializer}.get(verb)

    # A function of its own per verb: extend_schema annotates the function it is given.
    @extend_schema(
        operation_id=verb,
        request=serializer,
        responses={200 if ok else 204: ok, **errors(*BODY_ERRORS, 409)},
        description=doc,
    )
    def post(self: SettleView, request: Request, name: str, seq: int) -> Response:
        return SettleView.post(self, request, name, seq)

    attrs = {"verb": verb, "request_serializer": serializer, "post": post}
    return type(f"{verb.title()}View", (SettleView,), attrs)


CompleteView = _settle_view("complete", s.TokenSerializer, "Complete (remove) the message.")
AbandonView = _settle_view(
    "abandon", s.AbandonSerializer, "Give the message back, now or after `delay` seconds."
)
SnoozeView = _settle_view(
    "snooze",
    s.SnoozeSerializer,
    "Give the message back for `delay` seconds without using up a delivery (at most the "
    "queue's `max_snoozes` times; past that it is an ordinary abandon). Answers what "
    "happened as `outcome`.",
)
RejectView = _settle_view("reject", s.RejectSerializer, "Dead-letter the message at once.")
DeferView = _settle_view("defer", s.TokenSerializer, "Set the message aside (receive-deferred).")
RenewView = _settle_view("renew", s.RenewSerializer, "Extend the message's lease.")


class CompleteBatchView(MQView):
    mq_actions = {"POST": "receive"}

    @extend_schema(
        operation_id="complete_batch",
        request=s.CompleteBatchSerializer,
        responses={200: s.ResultsSerializer, **errors(*BODY_ERRORS)},
    )
    def post(self, request: Request, name: str) -> Response:
        items = self.body(s.CompleteBatchSerializer)["items"]
        pairs = [(i["seq"], i["lock_token"]) for i in items]
        results = mq.complete_batch(name, pairs) if pairs else no_items(name)
        return Response({"results": results})


class RenewBatchView(MQView):
    mq_actions = {"POST": "receive"}

    @extend_schema(
        operation_id="renew_batch",
        request=s.RenewBatchSerializer,
        responses={200: s.ResultsSerializer, **errors(*BODY_ERRORS)},
    )
    def post(self, request: Request, name: str) -> Response:
        options = self.body(s.RenewBatchSerializer)
        items = [(i["seq"], i["lock_token"]) for i in options.pop("items")]
        results = mq.renew_batch(name, items, **options) if items else no_items(name)
        return Response({"results": results})
