"""Every writing surface against every reading surface, hostile values included.

Hypothesis generates messages (lone surrogates, NUL, escape sequences, deep and
non-finite JSON, odd content types, SQS attribute shapes valid and not, big-ish bodies)
and writes each through one surface: Python ``send``/``send_batch``, the HTTP API
(``body``, ``body_base64``, properties, batches), a publish to a topic the queue is
subscribed to (Python ``publish`` and the HTTP route), SQS ``SendMessage``/``SendMessageBatch``
with attributes, ``mqlite send``, a Tasks enqueue. A write either succeeds or is refused
with a typed error (an ``MQLiteError``, a 4xx, an SQS 400, a ``CommandError``); never a
5xx or another exception. Then every stored message is read through every reading
surface (Python peek and receive, HTTP peek and receive, SQS ``ReceiveMessage``, the
admin's changelist and change page, ``mqlite peek``, the Tasks worker): no read fails,
each receive round delivers every message, nothing claimed is left undelivered, and the
queue's totals add up (``abandoned + reclaimed == retried + exhausted``).
"""

from __future__ import annotations

import base64
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.exceptions import ClientError, ParamValidationError
from django.core.management.base import CommandError
from django.test import Client
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import django_mqlite as mq
from django_mqlite.models import Queue
from tests.support.cli_helpers import mqlite
from tests.support.messages import messages, sqs_attributes, texts, unique

from ..workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)

_unique = itertools.count(1)

# -- writing ---------------------------------------------------------------------------


@dataclass
class Harness:
    api: Any
    sqs: Any
    admin: Client
    queue: str = ""
    topic: str = ""
    url: str = ""
    accepted: int = 0
    refused: list[str] = field(default_factory=list)

    def python_send(self, items: list[dict[str, Any]]) -> None:
        for fields in items:
            f = unique(fields)
            try:
                mq.send(self.queue, f.pop("body"), **f)
                self.accepted += 1
            except (mq.InvalidArgumentError, mq.MessageTooLargeError) as exc:
                self.refused.append(exc.code)

    def python_batch(self, items: list[dict[str, Any]]) -> None:
        outs = []
        for fields in items:
            f = unique(fields)
            outs.append(mq.OutMessage(f.pop("body"), **f))
        try:
            self.accepted += len(mq.send_batch(self.queue, outs))
        except (mq.InvalidArgumentError, mq.MessageTooLargeError) as exc:
            self.refused.append(exc.code)

    def python_publish(self, items: list[dict[str, Any]]) -> None:
        """A publish to the harness's topic, whose one subscription is the queue."""
        for fields in items:
            f = unique(fields)
            try:
                self.accepted += mq.publish(self.topic, f.pop("body"), **f)
            except (mq.InvalidArgumentError, mq.MessageTooLargeError) as exc:
                self.refused.append(exc.code)

    def http_publish(self, items: list[dict[str, Any]]) -> None:
        for message in (self._http_message(f) for f in items):
            if message is None:
                continue
            raw = json.dumps(message).encode("utf-8", "surrogatepass")
            r = self.api.generic(
                "POST", f"/mq/topics/{self.topic}/publish/", raw, content_type="application/json"
            )
            assert r.status_code < 500, r.content[:300]
            assert r["Content-Type"].startswith("application/json"), r.content[:300]
            if r.status_code == 201:
                self.accepted += r.json()["reached"]
            else:
                self.refused.append(r.json()["code"])

    def _http_message(self, fields: dict[str, Any]) -> dict[str, Any] | None:
        f = unique(fields)
        body = f.pop("body")
        if isinstance(body, bytes):
            f["body_base64"] = base64.b64encode(body).decode()
        elif isinstance(body, str) or json_encodable(body):
            f["body"] = body
        else:
            return None  # not a JSON request at all: the client could not send it
        return f

    def http_send(self, items: list[dict[str, Any]], *, batch: bool) -> None:
        wire = [m for m in (self._http_message(f) for f in items) if m is not None]
        if not wire:
            return
        payloads = [{"messages": wire}] if batch else wire
        for payload in payloads:
            raw = json.dumps(payload).encode("utf-8", "surrogatepass")
            r = self.api.generic(
                "POST", f"/mq/queues/{self.queue}/messages/", raw, content_type="application/json"
            )
            assert r.status_code < 500, r.content[:300]
            assert r["Content-Type"].startswith("application/json"), r.content[:300]
            if r.status_code == 201:
                self.accepted += len(r.json()["seqs"]) if batch else 1
            else:
                self.refused.append(r.json()["code"])

    def _sqs_entry(self, fields: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
        body = fields["body"]
        if isinstance(body, bytes):
            body = body.decode("utf-8", "replace")
        elif not isinstance(body, str):
            body = json.dumps(body)
        entry: dict[str, Any] = {"MessageBody": body}
        if attrs:
            entry["MessageAttributes"] = attrs
        return entry

    def sqs_send(self, items: list[dict[str, Any]], attrs: dict[str, Any], *, batch: bool) -> None:
        entries = [self._sqs_entry(f, attrs) for f in items]
        try:
            if batch:
                out = self.sqs.send_message_batch(
                    QueueUrl=self.url,
                    Entries=[{"Id": f"e{i}", **e} for i, e in enumerate(entries)],
                )
                self.accepted += len(out.get("Successful", []))
                for failed in out.get("Failed", []):
                    assert failed["SenderFault"], failed
                    self.refused.append(failed["Code"])
            else:
                for e in entries:
                    try:
                        self.sqs.send_message(QueueUrl=self.url, **e)
                        self.accepted += 1
                    except ClientError as exc:
                        assert exc.response["ResponseMetadata"]["HTTPStatusCode"] == 400, exc
                        self.refused.append(exc.response["Error"]["Code"])
        except ClientError as exc:
            assert exc.response["ResponseMetadata"]["HTTPStatusCode"] == 400, exc
            self.refused.append(exc.response["Error"]["Code"])
        except (ParamValidationError, UnicodeEncodeError) as exc:
            self.refused.append(type(exc).__name__)  # refused by the client before sending

    def cli_send(self, items: list[dict[str, Any]]) -> None:
        for fields in items:
            f = unique(fields)
            body = f["body"]
            args = [self.queue]
            if isinstance(body, str):
                args.append(body)
            elif isinstance(body, bytes):
                args.append(body.decode("utf-8", "surrogateescape"))
            elif json_encodable(body):
                args += ["--json-body", json.dumps(body)]
            else:
                continue
            for key in ("subject", "message_id", "group_id", "content_type"):
                if key in f:
                    args += [f"--{key.replace('_', '-')}", f[key]]
            try:
                mqlite("send", *args)
                self.accepted += 1
            except CommandError as exc:
                self.refused.append(str(exc)[:40])


def json_encodable(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (ValueError, TypeError, RecursionError):
        return False
    return True


# -- reading ---------------------------------------------------------------------------


def read_everywhere(h: Harness, queue: str, expected: int) -> None:
    """Peek through every surface: each shows exactly the live messages, none fails."""
    peeked = mq.peek(queue, limit=1000)
    assert len(peeked) == expected
    r = h.api.get(f"/mq/queues/{queue}/messages/", {"limit": 1000})
    assert r.status_code == 200, r.content[:300]
    assert len(r.json()["messages"]) == expected
    qid = Queue.objects.get(name=queue).pk
    r = h.admin.get(f"/admin/django_mqlite/message/?queue__id__exact={qid}")
    assert r.status_code == 200
    for m in peeked:
        assert h.admin.get(f"/admin/django_mqlite/message/{m.seq}/change/").status_code == 200
    mqlite("peek", queue, "--limit", "1000").encode("utf-8")
    assert len(json.loads(mqlite("peek", queue, "--limit", "1000", "--json"))) == expected


def receive_everywhere(h: Harness, expected: int) -> None:
    """Three rounds, each delivering every message: Python receive (abandon), HTTP
    receive (abandon), SQS ReceiveMessage (delete)."""
    q = h.queue
    got = mq.receive(q, max_messages=256)
    assert len(got) == expected
    for m in got:
        m.abandon()
    r = h.api.post(f"/mq/queues/{q}/receive/", {"max_messages": 256}, format="json")
    assert r.status_code == 200, r.content[:300]
    wire = r.json()["messages"]
    assert len(wire) == expected
    for m in wire:
        r = h.api.post(
            f"/mq/queues/{q}/messages/{m['seq']}/abandon/",
            {"lock_token": m["lock_token"]},
            format="json",
        )
        assert r.status_code == 204, r.content
    seen = 0
    while seen < expected:
        out = h.sqs.receive_message(
            QueueUrl=h.url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
        )
        batch = out.get("Messages", [])
        assert batch, f"SQS delivered {seen} of {expected}"
        for m in batch:
            h.sqs.delete_message(QueueUrl=h.url, ReceiptHandle=m["ReceiptHandle"])
        seen += len(batch)
    assert seen == expected


def assert_totals(queue: str, accepted: int, completed: int) -> None:
    s = mq.stats(queue)
    t = s.totals
    assert t["abandoned"] + t["reclaimed"] == t["retried"] + t["exhausted"], t
    assert t["enqueued"] == accepted and t["completed"] == completed, t
    assert t["dead_lettered"] == 0, t
    live = {k: v for k, v in s.counts.items() if k != "completed"}
    assert sum(live.values()) == 0, s.counts


# -- the property -----------------------------------------------------------------------

writes = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "send",
                "batch",
                "http",
                "http_batch",
                "sqs",
                "sqs_batch",
                "cli",
                "publish",
                "http_publish",
            ]
        ),
        st.lists(messages(), min_size=1, max_size=3),
        sqs_attributes,
    ),
    min_size=1,
    max_size=3,
)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
    database=None,
)
@given(writes=writes, task_tags=st.lists(texts, max_size=2))
def test_every_written_message_reads_everywhere(
    api: Any, sqs: Any, admin_client: Client, run_worker: Any, writes: Any, task_tags: list[str]
) -> None:
    h = Harness(api, sqs, admin_client)
    h.queue = f"xs{next(_unique)}"
    h.url = sqs.create_queue(QueueName=h.queue)["QueueUrl"]
    h.topic = f"{h.queue}.events"
    mq.create_topic(h.topic)
    mq.subscribe(h.topic, h.queue)
    for surface, items, attrs in writes:
        if surface == "send":
            h.python_send(items)
        elif surface == "batch":
            h.python_batch(items)
        elif surface in ("http", "http_batch"):
            h.http_send(items, batch=surface == "http_batch")
        elif surface == "publish":
            h.python_publish(items)
        elif surface == "http_publish":
            h.http_publish(items)
        elif surface in ("sqs", "sqs_batch"):
            h.sqs_send(items, attrs, batch=surface == "sqs_batch")
        else:
            h.cli_send(items)
    event(f"accepted {min(h.accepted, 4)}{'+' if h.accepted >= 4 else ''}")
    event(f"refused {bool(h.refused)}")
    read_everywhere(h, h.queue, h.accepted)
    receive_everywhere(h, h.accepted)
    assert mq.peek(h.queue) == []
    assert_totals(h.queue, h.accepted, h.accepted)

    # The Tasks backend writes too; its worker is the reading surface that runs them.
    before = mq.stats("tasks").totals if Queue.objects.filter(name="tasks").exists() else None
    enqueued = 0
    for tag in task_tags:
        try:
            tasks.remember.enqueue(tag)
            enqueued += 1
        except mq.InvalidArgumentError:
            pass
    if before is None and not enqueued:
        return
    read_everywhere(h, "tasks", len(mq.peek("tasks", limit=1000)))
    run_worker(queues=["tasks"])
    # A task runs and completes, or (its result holding a NUL that PostgreSQL's jsonb
    # cannot keep) fails at once with a readable error: nothing stays live.
    for p in mq.peek("tasks", limit=1000):
        assert p.state in ("completed", "dead_lettered"), p
        assert p.state == "completed" or "result" in (p.dead_letter_description or ""), p
    totals = mq.stats("tasks").totals
    assert totals["abandoned"] + totals["reclaimed"] == totals["retried"] + totals["exhausted"]
    if before is not None:
        assert totals["enqueued"] - before["enqueued"] == enqueued
        settled = totals["completed"] + totals["dead_lettered"]
        assert settled - before["completed"] - before["dead_lettered"] == enqueued
