"""OpenTelemetry spans (the ``[otel]`` extra), recorded by the SDK's in-memory exporter:
a PRODUCER span per send (a batch: a ``create`` span per message and one ``send`` span
linking them), the trace context carried in the message's properties, a CONSUMER span per
handler call whose parent is the producer on the first delivery and which links to it on
redeliveries, with destination, seq, delivery count, group and outcome; through the
Python API, Tasks, the HTTP API and the SQS endpoint."""

from __future__ import annotations

from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.consumers import Registry
from tests.support.inprocess import burst

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")
from opentelemetry.trace import SpanKind, StatusCode

pytestmark = pytest.mark.django_db(transaction=True)


def named(spans: Any, name: str) -> list[Any]:
    return [s for s in spans.get_finished_spans() if s.name == name]


def one(spans: Any, name: str) -> Any:
    found = named(spans, name)
    assert len(found) == 1, [s.name for s in spans.get_finished_spans()]
    return found[0]


def parent_of(span: Any) -> int | None:
    return None if span.parent is None else span.parent.span_id


def test_view_send_handler_send_handler_is_one_trace(spans: Any) -> None:
    mq.create_queue("first")
    mq.create_queue("second")
    registry = Registry()
    registry.register("first", lambda msg: mq.send("second", {"from": msg.seq}))
    registry.register("second", lambda msg: None)
    with spans.tracer.start_as_current_span("GET /order") as view:
        seq = mq.send("first", "x", group_id="g1")
    burst(registry, "first", "second")
    send1, send2 = one(spans, "send first"), one(spans, "send second")
    process1, process2 = one(spans, "process first"), one(spans, "process second")
    trace_id = view.get_span_context().trace_id
    for s in (send1, send2, process1, process2):
        assert s.context.trace_id == trace_id
    assert parent_of(send1) == view.get_span_context().span_id
    assert parent_of(process1) == send1.context.span_id
    assert parent_of(send2) == process1.context.span_id
    assert parent_of(process2) == send2.context.span_id
    assert (send1.kind, process1.kind) == (SpanKind.PRODUCER, SpanKind.CONSUMER)
    assert send1.attributes["messaging.system"] == "mqlite"
    assert send1.attributes["messaging.destination.name"] == "first"
    assert send1.attributes["messaging.operation.type"] == "send"
    assert send1.attributes["messaging.message.id"] == str(seq)
    assert send1.attributes["messaging.mqlite.message.group_id"] == "g1"
    assert process1.attributes["messaging.operation.type"] == "process"
    assert process1.attributes["messaging.mqlite.message.seq"] == seq
    assert process1.attributes["messaging.mqlite.message.delivery_count"] == 1
    assert process1.attributes["messaging.mqlite.message.group_id"] == "g1"
    assert process1.attributes["messaging.mqlite.outcome"] == "completed"
    assert process1.status.status_code is not StatusCode.ERROR


def test_the_message_carries_w3c_trace_context(spans: Any) -> None:
    mq.create_queue("carry")
    with spans.tracer.start_as_current_span("request"):
        mq.send("carry", "x", properties={"mine": "kept"})
    send = one(spans, "send carry")
    [m] = mq.receive("carry")
    ctx = send.context
    assert m.properties["traceparent"].startswith(f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-")
    assert m.properties["mine"] == "kept"


def test_a_batch_is_one_send_span_linking_a_create_span_per_message(spans: Any) -> None:
    mq.create_queue("batch")
    with spans.tracer.start_as_current_span("request"):
        seqs = mq.send_batch("batch", [mq.OutMessage(i) for i in range(3)])
    send = one(spans, "send batch")
    creates = named(spans, "create batch")
    assert len(creates) == 3
    assert send.attributes["messaging.batch.message_count"] == 3
    assert {link.context.span_id for link in send.links} == {c.context.span_id for c in creates}
    assert sorted(c.attributes["messaging.message.id"] for c in creates) == sorted(map(str, seqs))
    registry = Registry()
    registry.register("batch", lambda msg: None)
    burst(registry, "batch")
    by_seq = {c.attributes["messaging.mqlite.message.seq"]: c for c in creates}
    for p in named(spans, "process batch"):
        seq = p.attributes["messaging.mqlite.message.seq"]
        assert parent_of(p) == by_seq[seq].context.span_id


def test_a_redelivery_links_to_the_producer_and_dead_letters(spans: Any, clock: Any) -> None:
    mq.create_queue("retry", max_delivery_count=2)
    registry = Registry()

    def fail(msg: mq.Received) -> None:
        raise RuntimeError(f"attempt {msg.delivery_count}")

    registry.register("retry", fail)
    with spans.tracer.start_as_current_span("request"):
        mq.send("retry", "x")
    burst(registry, "retry")
    clock.advance(60)
    burst(registry, "retry")
    send = one(spans, "send retry")
    first, second = sorted(
        named(spans, "process retry"),
        key=lambda s: s.attributes["messaging.mqlite.message.delivery_count"],
    )
    assert parent_of(first) == send.context.span_id and not first.links
    assert first.attributes["messaging.mqlite.outcome"] == "scheduled"
    assert first.status.status_code is StatusCode.ERROR
    assert first.attributes["error.type"] == "RuntimeError"
    assert [e.name for e in first.events] == ["exception"]
    # The redelivery: a trace of its own, linked to the producer.
    assert second.parent is None
    assert second.context.trace_id != send.context.trace_id
    assert [link.context.span_id for link in second.links] == [send.context.span_id]
    assert second.attributes["messaging.mqlite.message.delivery_count"] == 2
    assert second.attributes["messaging.mqlite.outcome"] == "dead_lettered"


def test_a_rejection_and_a_handler_that_settles_itself(spans: Any) -> None:
    mq.create_queue("rej")
    registry = Registry()

    def handle(msg: mq.Received) -> None:
        if msg.text() == "bad":
            raise mq.Reject("Invalid")
        msg.defer()

    registry.register("rej", handle)
    mq.send("rej", "bad")
    mq.send("rej", "later")
    burst(registry, "rej")
    outcomes = sorted(s.attributes["messaging.mqlite.outcome"] for s in named(spans, "process rej"))
    assert outcomes == ["dead_lettered", "deferred"]


def test_settle_spans_behind_the_setting(spans: Any, settings: Any) -> None:
    settings.MQLITE = {"TRACING_CLAIMS_AND_SETTLES": True}
    mq.create_queue("st")
    registry = Registry()
    registry.register("st", lambda msg: None)
    mq.send("st", "x")
    burst(registry, "st")
    settle, process = one(spans, "settle st"), one(spans, "process st")
    assert parent_of(settle) == process.context.span_id
    assert settle.attributes["messaging.mqlite.outcome"] == "completed"
    claim = one(spans, "receive st")
    assert claim.attributes["messaging.batch.message_count"] == 1
    assert [link.context.span_id for link in claim.links] == [one(spans, "send st").context.span_id]
    settings.MQLITE = {}
    mq.send("st", "y")
    burst(registry, "st")
    assert len(named(spans, "settle st")) == len(named(spans, "receive st")) == 1


def test_tasks_carry_the_trace(spans: Any, run_worker: Any) -> None:
    from tests.workerproject.recorder.tasks import add

    with spans.tracer.start_as_current_span("view") as view:
        result = add.enqueue(1, 2)
    run_worker()
    assert add.get_result(result.id).return_value == 3
    # The first send of a task may find its queue missing (an error span), then create
    # it and send again.
    [send] = [s for s in named(spans, "send tasks") if s.status.status_code != StatusCode.ERROR]
    process = one(spans, "process tasks")
    assert parent_of(send) == view.get_span_context().span_id
    assert parent_of(process) == send.context.span_id
    assert process.attributes["messaging.mqlite.outcome"] == "completed"


def test_the_http_api_send_is_traced(spans: Any, api: Any) -> None:
    mq.create_queue("web")
    with spans.tracer.start_as_current_span("POST /mq/queues/web/messages/") as server:
        got = api.post("/mq/queues/web/messages/", {"body": "x"}, format="json")
    assert got.status_code == 201
    registry = Registry()
    registry.register("web", lambda msg: None)
    burst(registry, "web")
    send, process = one(spans, "send web"), one(spans, "process web")
    assert parent_of(send) == server.get_span_context().span_id
    assert send.attributes["messaging.message.id"] == str(got.json()["seq"])
    assert parent_of(process) == send.context.span_id
    # Received over HTTP, the message shows its trace context in its properties.
    api.post("/mq/queues/web/messages/", {"body": "y"}, format="json")
    taken = api.post("/mq/queues/web/receive/", {}, format="json").json()["messages"]
    assert taken[0]["properties"]["traceparent"].startswith("00-")


TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = "b7ad6b7169203331"


def test_sqs_message_attributes_and_aws_trace_header(spans: Any, sqs: Any) -> None:
    url = sqs.create_queue(QueueName="sqst")["QueueUrl"]
    # An instrumented SQS producer puts its context in a "traceparent" message attribute.
    sqs.send_message(
        QueueUrl=url,
        MessageBody="one",
        MessageAttributes={
            "traceparent": {"DataType": "String", "StringValue": f"00-{TRACE}-{PARENT}-01"}
        },
    )
    send = one(spans, "send sqst")
    assert f"{send.context.trace_id:032x}" == TRACE
    assert f"{parent_of(send):016x}" == PARENT
    got = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"])["Messages"][0]
    carried = got["MessageAttributes"]["traceparent"]["StringValue"]
    assert carried.startswith(f"00-{TRACE}-{send.context.span_id:016x}-")
    sqs.delete_message(QueueUrl=url, ReceiptHandle=got["ReceiptHandle"])
    # X-Ray's AWSTraceHeader, as AWS keeps it: the producer joins that trace, and a
    # receive gives the header back as it was sent.
    header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
    sqs.send_message(
        QueueUrl=url,
        MessageBody="two",
        MessageSystemAttributes={"AWSTraceHeader": {"DataType": "String", "StringValue": header}},
    )
    [_, xray] = named(spans, "send sqst")
    assert f"{xray.context.trace_id:032x}" == "5759e988bd862e3fe1be46a994272793"
    assert f"{parent_of(xray):016x}" == "53995c3f42cd8ad8"
    got = sqs.receive_message(QueueUrl=url, MessageSystemAttributeNames=["AWSTraceHeader"])
    assert got["Messages"][0]["Attributes"]["AWSTraceHeader"] == header
    # A worker consuming it (its second delivery) links to the producer.
    registry = Registry()
    registry.register("sqst", lambda msg: None)
    sqs.change_message_visibility(
        QueueUrl=url, ReceiptHandle=got["Messages"][0]["ReceiptHandle"], VisibilityTimeout=0
    )
    burst(registry, "sqst")
    process = one(spans, "process sqst")
    assert [link.context.span_id for link in process.links] == [xray.context.span_id]


def test_a_topic_publish_is_one_producer_span(spans: Any) -> None:
    mq.create_queue("sub1")
    mq.create_queue("sub2")
    mq.create_topic("events")
    mq.subscribe("events", "sub1")
    mq.subscribe("events", "sub2")
    assert mq.publish("events", "x") == 2
    send = one(spans, "send events")
    for queue in ("sub1", "sub2"):
        [m] = mq.receive(queue)
        assert f"{send.context.span_id:016x}" in m.properties["traceparent"]


def test_no_sdk_no_spans_and_no_properties() -> None:
    """Installed but no SDK provider configured: nothing recorded, nothing added."""
    from django_mqlite import otel
    from django_mqlite.engine import tracing

    assert otel.configure(None)
    assert tracing.hook is not None
    mq.create_queue("plain")
    mq.send("plain", "x")
    [m] = mq.receive("plain")
    assert m.properties == {}


def test_sqs_keeps_the_x_amzn_trace_id_header_as_aws_does(spans: Any, sqs: Any) -> None:
    """The request's X-Ray header is the AWSTraceHeader of a message that sets none."""
    url = sqs.create_queue(QueueName="sqsh")["QueueUrl"]
    header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"

    def add_header(request: Any, **kwargs: Any) -> None:
        request.headers["X-Amzn-Trace-Id"] = header

    sqs.meta.events.register("before-sign.sqs.SendMessage", add_header)
    sqs.send_message(QueueUrl=url, MessageBody="one")
    got = sqs.receive_message(QueueUrl=url, MessageSystemAttributeNames=["AWSTraceHeader"])
    assert got["Messages"][0]["Attributes"]["AWSTraceHeader"] == header
    send = one(spans, "send sqsh")
    assert f"{send.context.trace_id:032x}" == "5759e988bd862e3fe1be46a994272793"


def test_an_async_handler_runs_inside_its_consumer_span(spans: Any) -> None:
    import asyncio

    from asgiref.sync import sync_to_async
    from django.db import connections

    from django_mqlite.worker.aio import event_loop

    mq.create_queue("async-in")
    mq.create_queue("async-out")
    registry = Registry()

    async def handle(msg: mq.Received) -> None:
        await sync_to_async(mq.send)("async-out", "next")

    registry.register("async-in", handle)
    mq.send("async-in", "x")
    burst(registry, "async-in")
    process, send = one(spans, "process async-in"), one(spans, "send async-out")
    assert parent_of(send) == process.context.span_id
    assert process.attributes["messaging.mqlite.outcome"] == "completed"
    # The handler's database work ran on asgiref's thread-sensitive thread, whose
    # connection a worker keeps across messages: close it before the test database goes.
    asyncio.run_coroutine_threadsafe(
        sync_to_async(connections.close_all, thread_sensitive=True)(), event_loop()
    ).result(10)
