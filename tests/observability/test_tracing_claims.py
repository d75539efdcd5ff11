"""Claim and settlement spans over every surface (``MQLITE["TRACING_CLAIMS_AND_SETTLES"]``):
made once, by the engine's claim and settle functions, so an HTTP receive and its
settlements and an SQS ReceiveMessage and its DeleteMessage get the spans a worker gets:
a ``receive`` span linking to each returned message's producer, a ``settle`` span per
settlement with its verb, outcome and the producer linked; none with the setting off."""

from __future__ import annotations

from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.consumers import Registry
from tests.support.inprocess import burst

from .test_tracing import named, one, parent_of

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")
from opentelemetry.trace import SpanKind, StatusCode

pytestmark = pytest.mark.django_db(transaction=True)

TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = "b7ad6b7169203331"
TRACEPARENT = f"00-{TRACE}-{PARENT}-01"


ON = {"TRACING_CLAIMS_AND_SETTLES": True}  # added to the surface's own MQLITE


def linked(span: Any) -> list[int]:
    """The span ids ``span`` links to, in order."""
    return [link.context.span_id for link in span.links]


def producers(spans: Any, queue: str) -> dict[str, int]:
    """The producer span id of each message sent to ``queue``, by seq (as a string)."""
    return {
        s.attributes["messaging.message.id"]: s.context.span_id
        for s in named(spans, f"send {queue}")
    }


def messaging(span: Any, queue: str, operation: str, name: str | None = None) -> None:
    assert span.kind is SpanKind.CLIENT
    assert span.attributes["messaging.system"] == "mqlite"
    assert span.attributes["messaging.destination.name"] == queue
    assert span.attributes["messaging.operation.type"] == operation
    assert span.attributes["messaging.operation.name"] == (name or operation)


def test_an_http_receive_and_its_settlements(spans: Any, api: Any, settings: Any) -> None:
    settings.MQLITE = {**getattr(settings, "MQLITE", {}), **ON}
    mq.create_queue("web")
    for body in ("a", "b"):
        assert (
            api.post("/mq/queues/web/messages/", {"body": body}, format="json").status_code == 201
        )
    sent = producers(spans, "web")
    with spans.tracer.start_as_current_span("POST /mq/queues/web/receive/") as server:
        got = api.post("/mq/queues/web/receive/", {"max_messages": 2}, format="json").json()
    first, second = got["messages"]
    receive = one(spans, "receive web")
    messaging(receive, "web", "receive")
    assert parent_of(receive) == server.get_span_context().span_id
    assert receive.attributes["messaging.batch.message_count"] == 2
    assert linked(receive) == [sent[str(first["seq"])], sent[str(second["seq"])]]
    assert [link.attributes["messaging.message.id"] for link in receive.links] == [
        str(first["seq"]),
        str(second["seq"]),
    ]

    # The settlement's caller sends its trace context, Django is not instrumented.
    done = api.post(
        f"/mq/queues/web/messages/{first['seq']}/complete/",
        {"lock_token": first["lock_token"]},
        format="json",
        HTTP_TRACEPARENT=TRACEPARENT,
    )
    assert done.status_code == 204
    settle = one(spans, "settle web")
    messaging(settle, "web", "settle", "complete")
    assert f"{settle.context.trace_id:032x}" == TRACE
    assert f"{parent_of(settle):016x}" == PARENT
    assert settle.attributes["messaging.message.id"] == str(first["seq"])
    assert settle.attributes["messaging.mqlite.outcome"] == "completed"
    assert linked(settle) == [sent[str(first["seq"])]]
    assert settle.status.status_code is not StatusCode.ERROR

    # A settlement whose lock is gone is one too, in error.
    again = api.post(
        f"/mq/queues/web/messages/{first['seq']}/abandon/",
        {"lock_token": first["lock_token"]},
        format="json",
    )
    assert again.status_code == 409
    lost = [
        s
        for s in named(spans, "settle web")
        if s.attributes["messaging.operation.name"] == "abandon"
    ]
    assert [s.attributes["messaging.mqlite.outcome"] for s in lost] == ["stale"]
    assert lost[0].status.status_code is StatusCode.ERROR


@pytest.mark.parametrize(
    ("verb", "payload", "outcome"),
    [
        ("complete", {}, "completed"),
        ("abandon", {}, "retried"),
        ("reject", {"reason": "Invalid"}, "dead_lettered"),
        ("defer", {}, "deferred"),
        ("renew", {}, "renewed"),
    ],
)
def test_each_http_settlement_verb(
    spans: Any, api: Any, settings: Any, verb: str, payload: dict[str, Any], outcome: str
) -> None:
    settings.MQLITE = {**getattr(settings, "MQLITE", {}), **ON}
    mq.create_queue("verbs")
    mq.send("verbs", "x")
    [m] = api.post("/mq/queues/verbs/receive/", {}, format="json").json()["messages"]
    got = api.post(
        f"/mq/queues/verbs/messages/{m['seq']}/{verb}/",
        {"lock_token": m["lock_token"], **payload},
        format="json",
    )
    assert got.status_code in (200, 204), got.content
    settle = one(spans, "settle verbs")
    messaging(settle, "verbs", "settle", verb)
    assert settle.attributes["messaging.mqlite.outcome"] == outcome
    assert linked(settle) == [one(spans, "send verbs").context.span_id]


def test_an_http_batch_completion_is_one_settle_span(spans: Any, api: Any, settings: Any) -> None:
    settings.MQLITE = {**getattr(settings, "MQLITE", {}), **ON}
    mq.create_queue("many")
    mq.send_batch("many", [mq.OutMessage(i) for i in range(3)])
    got = api.post("/mq/queues/many/receive/", {"max_messages": 3}, format="json").json()
    items = [{"seq": m["seq"], "lock_token": m["lock_token"]} for m in got["messages"]]
    assert (
        api.post("/mq/queues/many/complete/", {"items": items}, format="json").json()["results"]
        == [True] * 3
    )
    settle = one(spans, "settle many")
    assert settle.attributes["messaging.batch.message_count"] == 3
    assert "messaging.message.id" not in settle.attributes
    created = {
        s.attributes["messaging.message.id"]: s.context.span_id for s in named(spans, "create many")
    }
    assert linked(settle) == [created[str(i["seq"])] for i in items]
    assert [link.attributes["messaging.mqlite.outcome"] for link in settle.links] == [
        "completed"
    ] * 3


def test_an_http_receive_of_deferred_messages(spans: Any, api: Any, settings: Any) -> None:
    settings.MQLITE = {**getattr(settings, "MQLITE", {}), **ON}
    mq.create_queue("later")
    seq = mq.send("later", "x")
    [m] = mq.receive("later")
    m.defer()
    got = api.post("/mq/queues/later/receive-deferred/", {"seqs": [seq]}, format="json")
    assert [r["seq"] for r in got.json()["messages"]] == [seq]
    # The Python receive's claim, then the HTTP receive of the deferred message.
    claim, deferred = named(spans, "receive later")
    producer = one(spans, "send later").context.span_id
    assert linked(claim) == linked(deferred) == [producer]
    assert deferred.attributes["messaging.message.id"] == str(seq)


def test_an_sqs_receive_and_its_deletes(spans: Any, sqs: Any, settings: Any) -> None:
    settings.MQLITE = {**getattr(settings, "MQLITE", {}), **ON}
    url = sqs.create_queue(QueueName="sqsc")["QueueUrl"]
    for body in ("a", "b", "c"):
        sqs.send_message(QueueUrl=url, MessageBody=body)
    sent = [s.context.span_id for s in named(spans, "send sqsc")]
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=3, VisibilityTimeout=30)["Messages"]
    assert [m["Body"] for m in got] == ["a", "b", "c"]
    receive = one(spans, "receive sqsc")
    messaging(receive, "sqsc", "receive")
    assert receive.attributes["messaging.batch.message_count"] == 3
    assert linked(receive) == sent

    sqs.delete_message(QueueUrl=url, ReceiptHandle=got[0]["ReceiptHandle"])
    delete = one(spans, "settle sqsc")
    messaging(delete, "sqsc", "settle", "complete")
    assert delete.attributes["messaging.mqlite.outcome"] == "completed"
    assert linked(delete) == [sent[0]]

    # The batch verbs settle each entry on its own: a settle span each.
    sqs.delete_message_batch(
        QueueUrl=url, Entries=[{"Id": "b", "ReceiptHandle": got[1]["ReceiptHandle"]}]
    )
    sqs.change_message_visibility_batch(
        QueueUrl=url,
        Entries=[{"Id": "c", "ReceiptHandle": got[2]["ReceiptHandle"], "VisibilityTimeout": 0}],
    )
    settles = named(spans, "settle sqsc")
    assert [s.attributes["messaging.operation.name"] for s in settles] == [
        "complete",
        "complete",
        "abandon",
    ]
    assert [linked(s) for s in settles] == [[sent[0]], [sent[1]], [sent[2]]]


def test_off_by_default_no_claim_or_settle_spans(spans: Any, api: Any, sqs: Any) -> None:
    """The same operations with the setting off (the default): sends and handler calls
    are traced, claims and settlements are not, on any surface."""
    mq.create_queue("quiet")
    mq.send("quiet", "x")
    [m] = api.post("/mq/queues/quiet/receive/", {}, format="json").json()["messages"]
    api.post(
        f"/mq/queues/quiet/messages/{m['seq']}/complete/",
        {"lock_token": m["lock_token"]},
        format="json",
    )
    url = sqs.create_queue(QueueName="quiet2")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="y")
    [got] = sqs.receive_message(QueueUrl=url)["Messages"]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=got["ReceiptHandle"])
    registry = Registry()
    registry.register("quiet", lambda msg: None)
    mq.send("quiet", "z")
    burst(registry, "quiet")
    names = sorted({s.name for s in spans.get_finished_spans()})
    assert names == ["process quiet", "send quiet", "send quiet2"]


def test_a_worker_claim_and_settlement_are_traced_once(spans: Any, settings: Any) -> None:
    """The worker's spans come from the same place: one receive per claim, one settle
    per settlement statement, the settle of one message a child of its process span; a
    handler that settles itself makes its settle span inside its process span."""
    settings.MQLITE = {**getattr(settings, "MQLITE", {}), **ON}
    mq.create_queue("w")
    registry = Registry()

    def handle(msg: mq.Received) -> None:
        if msg.text() == "self":
            msg.defer()

    registry.register("w", handle)
    mq.send("w", "self")
    burst(registry, "w")
    process, settle = one(spans, "process w"), one(spans, "settle w")
    assert parent_of(settle) == process.context.span_id
    assert settle.attributes["messaging.operation.name"] == "defer"
    assert linked(settle) == [one(spans, "send w").context.span_id]  # not its parent again
    assert len(named(spans, "receive w")) == 1
    # Finished handlers are completed in batches on the worker's main thread: the
    # settle span of one message is its process span's child, of several it links them.
    mq.send_batch("w", [mq.OutMessage("a"), mq.OutMessage("b")])
    burst(registry, "w")
    processes = [
        s for s in named(spans, "process w") if s.context.span_id != process.context.span_id
    ]
    completes = [
        s
        for s in named(spans, "settle w")
        if s.attributes["messaging.operation.name"] == "complete"
    ]
    assert len(processes) == 2 and 1 <= len(completes) <= 2
    together = len(completes) == 1  # both completed by one statement, or one each
    for p in processes:
        [s] = [s for s in completes if p.context.span_id in (parent_of(s), *linked(s))]
        assert s.attributes.get("messaging.batch.message_count", 1) == (2 if together else 1)
        assert (parent_of(s) == p.context.span_id) is not together


def test_an_http_send_joins_the_callers_traceparent(spans: Any, api: Any) -> None:
    mq.create_queue("remote")
    got = api.post(
        "/mq/queues/remote/messages/",
        {"body": "x"},
        format="json",
        HTTP_TRACEPARENT=TRACEPARENT,
        HTTP_TRACESTATE="vendor=value",
    )
    assert got.status_code == 201
    send = one(spans, "send remote")
    assert f"{send.context.trace_id:032x}" == TRACE
    assert f"{parent_of(send):016x}" == PARENT
    assert send.context.trace_state.get("vendor") == "value"
    # Nothing of the request's context is left behind once it is answered.
    mq.send("remote", "y")
    assert named(spans, "send remote")[-1].parent is None


def test_an_http_publish_joins_the_callers_traceparent(spans: Any, api: Any) -> None:
    mq.create_queue("subscriber")
    mq.create_topic("news")
    mq.subscribe("news", "subscriber")
    got = api.post(
        "/mq/topics/news/publish/", {"body": "x"}, format="json", HTTP_TRACEPARENT=TRACEPARENT
    )
    assert got.status_code in (200, 201), got.content
    send = one(spans, "send news")
    assert f"{send.context.trace_id:032x}" == TRACE
    assert f"{parent_of(send):016x}" == PARENT


def test_an_active_server_span_wins_over_the_header(spans: Any, api: Any) -> None:
    mq.create_queue("local")
    with spans.tracer.start_as_current_span("POST /mq/queues/local/messages/") as server:
        api.post(
            "/mq/queues/local/messages/", {"body": "x"}, format="json", HTTP_TRACEPARENT=TRACEPARENT
        )
    send = one(spans, "send local")
    assert parent_of(send) == server.get_span_context().span_id
    assert send.context.trace_id == server.get_span_context().trace_id
