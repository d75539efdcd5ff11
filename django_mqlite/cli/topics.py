"""``manage.py mqlite topics|create-topic|delete-topic|subscribe|unsubscribe|publish``.

Like ``cli.subcommands``, each function takes the parsed options and an output; engine errors become
``CommandError`` in the command's ``handle``. Filters and properties are JSON arguments,
parsed by argparse (``json_arg``); what they mean is the engine's to check.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from django.core.management.base import OutputWrapper

import django_mqlite as mq


def json_arg(value: str) -> Any:
    """An argparse type: a JSON document."""
    try:
        return json.loads(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None


def _dump(out: OutputWrapper, value: Any) -> None:
    out.write(json.dumps(value, default=str, indent=1))


def topics(out: OutputWrapper, o: dict[str, Any]) -> None:
    found = mq.list_topics(using=o["database"])
    if o["json"]:
        _dump(out, [asdict(t) for t in found])
        return
    if not found:
        out.write("no topics (create one with: manage.py mqlite create-topic NAME)")
        return
    for t in found:
        out.write(f"{t.name}  ({len(t.subscriptions)} subscriptions)")
        for s in t.subscriptions:
            shown = "every message" if s.filter is None else json.dumps(s.filter)
            out.write(f"  -> {s.queue}: {shown}" + (f", as task {s.task}" if s.task else ""))


def create_topic(out: OutputWrapper, o: dict[str, Any]) -> None:
    t = mq.create_topic(o["name"], using=o["database"])
    if o["json"]:
        _dump(out, asdict(t))
    else:
        out.write(f"created topic {t.name!r}")


def delete_topic(out: OutputWrapper, o: dict[str, Any]) -> None:
    mq.delete_topic(o["name"], using=o["database"])
    if o["json"]:
        _dump(out, {"deleted": o["name"]})
    else:
        out.write(f"deleted topic {o['name']!r}")


def subscribe(out: OutputWrapper, o: dict[str, Any]) -> None:
    if o["task"] is None:
        s = mq.subscribe(o["topic"], o["queue"], o["filter"], using=o["database"])
    else:
        s = mq.subscribe_task(
            o["topic"], o["task"], o["filter"], queue=o["queue"], using=o["database"]
        )
    if o["json"]:
        _dump(out, asdict(s))
    else:
        out.write(f"subscribed queue {s.queue!r} to topic {s.topic!r}")


def unsubscribe(out: OutputWrapper, o: dict[str, Any]) -> None:
    gone = mq.unsubscribe(o["topic"], o["queue"], using=o["database"])
    if o["json"]:
        _dump(out, {"unsubscribed": gone})
    else:
        out.write(f"unsubscribed queue {o['queue']!r}" if gone else "it was not subscribed")


def publish(out: OutputWrapper, o: dict[str, Any]) -> None:
    reached = mq.publish(
        o["topic"],
        o["body"],
        subject=o["subject"],
        properties=o["properties"],
        using=o["database"],
    )
    if o["json"]:
        _dump(out, {"reached": reached})
    else:
        out.write(f"reached {reached} queue(s)")


def add_parsers(add: Any) -> None:
    """Add the topic subcommands; ``add(name, help, module)`` is the command's helper."""
    import sys

    module = sys.modules[__name__]
    add("topics", "list the topics with their subscriptions", module)
    for verb, text in (("create-topic", "create a topic"), ("delete-topic", "delete a topic")):
        add(verb, text, module).add_argument("name")
    p = add("subscribe", "subscribe a queue to a topic (or replace its subscription)", module)
    p.add_argument("topic")
    p.add_argument("queue")
    p.add_argument("--filter", type=json_arg, default=None, help="the filter, as JSON")
    p.add_argument(
        "--task",
        metavar="DOTTED.PATH",
        help="subscribe this Django task of QUEUE instead: each publish is a call task(event)",
    )
    p = add("unsubscribe", "remove a queue's subscription to a topic", module)
    p.add_argument("topic")
    p.add_argument("queue")
    p = add("publish", "publish one message (BODY is text) to a topic's subscribers", module)
    p.add_argument("topic")
    p.add_argument("body")
    p.add_argument("--subject")
    p.add_argument("--properties", type=json_arg, help="a JSON object")
