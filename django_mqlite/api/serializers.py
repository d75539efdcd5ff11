"""Request shapes (strict: unknown fields and wrong types are refused) and response
shapes (also the OpenAPI schema's components)."""

from __future__ import annotations

import re
from typing import Any

from rest_framework import serializers

from ..admission import MAX_UNIQUE_KEY, ON_CONFLICT, UNIQUE_WHILE
from ..conf import current
from .fields import (
    AnyJSONField,
    Base64Field,
    DependsOnField,
    PropertiesField,
    StrictBooleanField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
)

QUEUE_NAME = re.compile(r"[A-Za-z0-9._-]{1,80}")
MAX_RECEIVE = 256
MAX_PEEK = 1000
MAX_WAIT_S = 20
SEQ_MAX = 2**63 - 1
TEN_YEARS_S = 10 * 365 * 86400
ORDERINGS = ("standard", "group_fifo", "strict_fifo")
STATES = ("active", "locked", "deferred", "scheduled", "completed", "dead_lettered")
PURGEABLE = tuple(s for s in STATES if s != "locked")
MODES = ("peek_lock", "receive_and_delete")


def seconds(*, positive: bool = False, **kwargs: Any) -> StrictFloatField:
    """A duration in seconds (at most ten years)."""
    return StrictFloatField(min_value=0.001 if positive else 0, max_value=TEN_YEARS_S, **kwargs)


def text(max_length: int = 128, **kwargs: Any) -> StrictCharField:
    return StrictCharField(max_length=max_length, **kwargs)


def seq_field(**kwargs: Any) -> StrictIntegerField:
    return StrictIntegerField(min_value=1, max_value=SEQ_MAX, **kwargs)


def batch_cap() -> int:
    return current().api_max_batch


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not know, so a typo is a 400, not a silently dropped option."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: ["unknown field"] for name in unknown})
        return super().to_internal_value(data)


# -- queues ----------------------------------------------------------------------------


class QueueSettingsSerializer(StrictSerializer):
    ordering = serializers.ChoiceField(choices=ORDERINGS, required=False)
    lock_duration = seconds(positive=True, required=False)
    max_delivery_count = StrictIntegerField(min_value=1, max_value=10_000, required=False)
    default_ttl = seconds(positive=True, required=False, allow_null=True)
    dead_letter_on_expire = StrictBooleanField(required=False)
    dedup_window = seconds(required=False)
    content_dedup = StrictBooleanField(required=False)
    dlq_max_age = StrictFloatField(
        min_value=-TEN_YEARS_S, max_value=TEN_YEARS_S, required=False, allow_null=True
    )
    dlq_max_count = StrictIntegerField(
        min_value=-(2**62), max_value=2**62, required=False, allow_null=True
    )
    dlq_max_bytes = StrictIntegerField(
        min_value=-(2**62), max_value=2**62, required=False, allow_null=True
    )
    keep_results = seconds(positive=True, required=False, allow_null=True)
    rate_limit = StrictFloatField(
        min_value=0.001, max_value=1_000_000, required=False, allow_null=True
    )
    max_in_flight = StrictIntegerField(
        min_value=1, max_value=1_000_000, required=False, allow_null=True
    )
    max_snoozes = StrictIntegerField(min_value=0, required=False)  # the engine caps it


class QueueCreateSerializer(QueueSettingsSerializer):
    # The whole string must match: nothing trimmed, no "$" letting a newline through.
    name = StrictCharField(max_length=80)

    def validate_name(self, value: str) -> str:
        if not QUEUE_NAME.fullmatch(value):
            raise serializers.ValidationError(
                "1-80 characters of letters, digits, '.', '_', '-' (nothing else)"
            )
        return value


class QueueSerializer(serializers.Serializer):
    name = serializers.CharField()
    ordering = serializers.ChoiceField(choices=ORDERINGS)
    lock_duration = serializers.FloatField()
    max_delivery_count = serializers.IntegerField()
    default_ttl = serializers.FloatField(allow_null=True)
    dead_letter_on_expire = serializers.BooleanField()
    dedup_window = serializers.FloatField()
    content_dedup = serializers.BooleanField()
    dlq_max_age = serializers.FloatField(allow_null=True)
    dlq_max_count = serializers.IntegerField(allow_null=True)
    dlq_max_bytes = serializers.IntegerField(allow_null=True)
    keep_results = serializers.FloatField(allow_null=True)
    created_at = serializers.DateTimeField()
    paused = serializers.BooleanField()
    rate_limit = serializers.FloatField(allow_null=True)
    max_in_flight = serializers.IntegerField(allow_null=True)
    max_snoozes = serializers.IntegerField()


class QueueListSerializer(serializers.Serializer):
    queues = QueueSerializer(many=True)


# -- producing -------------------------------------------------------------------------


class OutMessageSerializer(StrictSerializer):
    """One message: ``body`` (any JSON value; a string is sent as text) or ``body_base64``."""

    body = AnyJSONField(required=False)
    body_base64 = Base64Field(required=False)
    content_type = text(256, required=False, allow_null=True)
    message_id = text(required=False, allow_null=True)
    group_id = text(required=False, allow_null=True)
    subject = text(256, required=False, allow_null=True)
    properties = PropertiesField(required=False, allow_null=True)
    correlation_id = text(required=False, allow_null=True)
    reply_to = text(256, required=False, allow_null=True)
    priority = StrictIntegerField(min_value=-32768, max_value=32767, required=False)
    delay = seconds(required=False, allow_null=True)
    scheduled_at = serializers.DateTimeField(required=False, allow_null=True)
    ttl = seconds(positive=True, required=False, allow_null=True)
    # The engine's admission decides both; the bounds are named here for the schema.
    unique_key = text(MAX_UNIQUE_KEY, required=False, allow_null=True)
    on_conflict = serializers.ChoiceField(choices=ON_CONFLICT, required=False, allow_null=True)
    unique_while = serializers.ChoiceField(choices=UNIQUE_WHILE, required=False, allow_null=True)
    depends_on = DependsOnField(
        required=False,
        allow_null=True,
        help_text='waits until these complete: seqs, {"queue": name, "seq": n}, {"batch": id}',
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("body" in attrs) == ("body_base64" in attrs):
            raise serializers.ValidationError("give exactly one of body and body_base64")
        if "delay" in attrs and "scheduled_at" in attrs:
            raise serializers.ValidationError("give delay or scheduled_at, not both")
        return attrs


class SendBatchSerializer(StrictSerializer):
    messages = serializers.ListField(child=OutMessageSerializer(), min_length=1)

    def validate_messages(self, value: list[Any]) -> list[Any]:
        if len(value) > batch_cap():
            raise serializers.ValidationError(f"at most {batch_cap()} messages per request")
        return value


class SeqSerializer(serializers.Serializer):
    seq = serializers.IntegerField()


class SeqsSerializer(serializers.Serializer):
    seqs = serializers.ListField(
        child=serializers.IntegerField(), help_text="0 for a dedup-conflict slot"
    )


# -- consuming -------------------------------------------------------------------------


class ReceiveRequestSerializer(StrictSerializer):
    max_messages = StrictIntegerField(min_value=1, max_value=MAX_RECEIVE, required=False)
    wait = StrictFloatField(min_value=0, max_value=MAX_WAIT_S, required=False)
    lock_duration = seconds(positive=True, required=False, allow_null=True)
    mode = serializers.ChoiceField(choices=MODES, required=False)
    attempt_id = text(required=False, allow_null=True)


class _MessageFieldsSerializer(serializers.Serializer):
    seq = serializers.IntegerField()
    body = AnyJSONField(required=False, help_text="present when the content is JSON or UTF-8 text")
    body_base64 = Base64Field(required=False, help_text="present otherwise")
    content_type = serializers.CharField(allow_null=True)
    message_id = serializers.CharField(allow_null=True)
    group_id = serializers.CharField(allow_null=True)
    subject = serializers.CharField(allow_null=True)
    properties = PropertiesField()
    correlation_id = serializers.CharField(allow_null=True)
    reply_to = serializers.CharField(allow_null=True)
    priority = serializers.IntegerField()
    delivery_count = serializers.IntegerField()
    enqueued_at = serializers.DateTimeField()


class ReceivedSerializer(_MessageFieldsSerializer):
    lock_token = serializers.CharField(allow_null=True)
    locked_until = serializers.DateTimeField(allow_null=True)


class PeekedSerializer(_MessageFieldsSerializer):
    state = serializers.ChoiceField(choices=STATES)
    visible_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)
    locked_until = serializers.DateTimeField(allow_null=True)
    dead_letter_reason = serializers.CharField(allow_null=True)
    dead_letter_description = serializers.CharField(allow_null=True)
    last_error = serializers.CharField(allow_null=True)
    progress = serializers.JSONField(
        allow_null=True, help_text="the progress the handler last reported (JSON)"
    )
    checkpoint = serializers.JSONField(allow_null=True, help_text="its last checkpoint (JSON)")
    cancel_requested_at = serializers.DateTimeField(
        allow_null=True, help_text="when a cancel of the running message was requested"
    )


def _truncated() -> serializers.BooleanField:
    return serializers.BooleanField(
        required=False,
        help_text="present (true) when MQLITE['API_MAX_RESPONSE_BYTES'] cut the list short",
    )


class ReceivedListSerializer(serializers.Serializer):
    messages = ReceivedSerializer(many=True)
    truncated = _truncated()


class PeekedListSerializer(serializers.Serializer):
    messages = PeekedSerializer(many=True)
    truncated = _truncated()


class PeekQuerySerializer(serializers.Serializer):
    state = serializers.ChoiceField(choices=STATES, required=False)
    limit = serializers.IntegerField(min_value=1, max_value=MAX_PEEK, required=False)
    after_seq = serializers.IntegerField(min_value=0, max_value=SEQ_MAX, required=False)


class ReceiveDeferredSerializer(StrictSerializer):
    seqs = serializers.ListField(child=seq_field(), max_length=MAX_RECEIVE)
    lock_duration = seconds(positive=True, required=False, allow_null=True)


# -- settling --------------------------------------------------------------------------


class TokenSerializer(StrictSerializer):
    lock_token = text(64)


class AbandonSerializer(TokenSerializer):
    delay = seconds(required=False, allow_null=True)


class SnoozeSerializer(TokenSerializer):
    delay = seconds()


class OutcomeSerializer(serializers.Serializer):
    """What a settlement did: ``snoozed``, or past the queue's ``max_snoozes`` what the
    abandon it became did (``retried``, ``scheduled``, ``dead_lettered``, ``forwarded``),
    or ``replayed`` for an exact repeat."""

    outcome = serializers.CharField()


class RejectSerializer(TokenSerializer):
    reason = text(128)
    description = StrictCharField(max_length=4096, required=False, allow_blank=True)


class RenewSerializer(TokenSerializer):
    lock_duration = seconds(positive=True, required=False, allow_null=True)


class RequestedSerializer(serializers.Serializer):
    """A cancel: True when this request took effect (false: asked already)."""

    requested = serializers.BooleanField()


class LockedUntilSerializer(serializers.Serializer):
    locked_until = serializers.DateTimeField()


class RenewedSerializer(LockedUntilSerializer):
    """A renewal's answer: the new lease, and whether a cancel of the message was
    requested (read by the renewal's own statement, as a worker's renewal reads it)."""

    cancel_requested = serializers.BooleanField()


class ItemSerializer(StrictSerializer):
    seq = seq_field()
    lock_token = text(64)


class CompleteBatchSerializer(StrictSerializer):
    items = serializers.ListField(child=ItemSerializer())

    def validate_items(self, value: list[Any]) -> list[Any]:
        if len(value) > batch_cap():
            raise serializers.ValidationError(f"at most {batch_cap()} items per request")
        return value


class RenewBatchSerializer(CompleteBatchSerializer):
    lock_duration = seconds(positive=True, required=False, allow_null=True)


class ResultsSerializer(serializers.Serializer):
    results = serializers.ListField(child=serializers.BooleanField())


# -- operating -------------------------------------------------------------------------


class _SeqListMixin:
    def validate_seqs(self, value: list[int] | None) -> list[int] | None:
        if value is not None and len(value) > batch_cap():
            raise serializers.ValidationError(f"at most {batch_cap()} seqs per request")
        return value


class RedriveSerializer(_SeqListMixin, StrictSerializer):
    seqs = serializers.ListField(child=seq_field(), required=False, allow_null=True)
    to_queue = text(80, required=False, allow_null=True)
    limit = StrictIntegerField(min_value=1, max_value=2**62, required=False, allow_null=True)


class PurgeSerializer(_SeqListMixin, StrictSerializer):
    state = serializers.ChoiceField(choices=PURGEABLE, required=False)
    older_than = seconds(required=False, allow_null=True)
    limit = StrictIntegerField(min_value=1, max_value=2**62, required=False, allow_null=True)
    seqs = serializers.ListField(child=seq_field(), required=False, allow_null=True)


class CountSerializer(serializers.Serializer):
    count = serializers.IntegerField()


class QueueStatsSerializer(serializers.Serializer):
    queue = serializers.CharField()
    counts = serializers.DictField(child=serializers.IntegerField())
    oldest_active_age = serializers.FloatField(allow_null=True)
    totals = serializers.DictField(child=serializers.IntegerField())
    paused = serializers.BooleanField()
    rate_limit = serializers.FloatField(allow_null=True)
    max_in_flight = serializers.IntegerField(allow_null=True)


class AllStatsSerializer(serializers.Serializer):
    queues = serializers.DictField(child=QueueStatsSerializer())


class HealthSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=("ok", "unavailable"))
    database = serializers.BooleanField()


class ErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


class DeleteQuerySerializer(serializers.Serializer):
    force = serializers.BooleanField(required=False)


# -- topics ------------------------------------------------------------------------------


class SubscriptionSerializer(serializers.Serializer):
    topic = serializers.CharField()
    queue = serializers.CharField()
    filter = AnyJSONField(help_text="the filter as given; null takes every message")
    created_at = serializers.DateTimeField()
    task = serializers.CharField(
        allow_null=True,
        help_text="a task subscription: the dotted path of the Django task each publish "
        "the filter takes is enqueued as (its one argument the event); null: copies",
    )


class TopicSerializer(serializers.Serializer):
    name = serializers.CharField()
    created_at = serializers.DateTimeField()
    subscriptions = SubscriptionSerializer(many=True)


class TopicListSerializer(serializers.Serializer):
    topics = TopicSerializer(many=True)


class TopicCreateSerializer(StrictSerializer):
    name = text(80)


class SubscribeSerializer(StrictSerializer):
    filter = AnyJSONField(required=False, help_text="docs/topics.md#filters; null: every message")
    task = text(
        200,
        required=False,
        allow_null=True,
        help_text="subscribe a Django task of this queue instead of taking copies: its "
        "dotted path (docs/topics.md#tasks-subscribe-too)",
    )


class PublishedSerializer(serializers.Serializer):
    reached = serializers.IntegerField(help_text="the number of queues that got a copy")
