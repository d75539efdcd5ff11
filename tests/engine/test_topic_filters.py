"""Subscription filters, table-driven from the examples in docs/topics.md: each row is a
filter, a message and whether the filter takes it, checked by publishing through both
paths (the one-statement publish and the general send of an ordered queue)."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

import django_mqlite as mq

pytestmark = pytest.mark.django_db

DOC = Path(__file__).resolve().parents[2] / "docs" / "topics.md"
_ROW = re.compile(r"^\| `(.+)` \| `(.+)` \| `(.+)` \| (yes|no) \|$")
_names = itertools.count(1)


def doc_examples() -> list[tuple[dict[str, Any], str | None, dict[str, Any], bool]]:
    rows = []
    for line in DOC.read_text().splitlines():
        found = _ROW.match(line)
        if found:
            flt, subject, props, takes = found.groups()
            rows.append((json.loads(flt), json.loads(subject), json.loads(props), takes == "yes"))
    return rows


EXAMPLES = doc_examples()


def test_the_docs_table_is_read() -> None:
    assert len(EXAMPLES) >= 35


def count(queue: str) -> int:
    with connection.cursor() as c:
        c.execute(
            "SELECT count(*) FROM mqlite_message m JOIN mqlite_queue q ON q.id = m.queue_id "
            "WHERE q.name = %s",
            [queue],
        )
        return int(c.fetchone()[0])


@pytest.mark.parametrize(("flt", "subject", "props", "takes"), EXAMPLES, ids=repr)
def test_a_docs_example(
    flt: dict[str, Any], subject: str | None, props: dict[str, Any], takes: bool
) -> None:
    n = next(_names)
    topic, fast, general = f"t{n}", f"fast{n}", f"ordered{n}"
    mq.create_topic(topic)
    mq.create_queue(fast)
    mq.create_queue(general, ordering="strict_fifo")
    mq.subscribe(topic, fast, flt)
    mq.subscribe(topic, general, flt)
    reached = mq.publish(topic, {"n": n}, subject=subject, properties=props)
    assert reached == (2 if takes else 0)
    assert (count(fast), count(general)) == ((1, 1) if takes else (0, 0))


BAD_FILTERS = [
    {},
    [],
    "subject",
    {"subjects": "x"},
    {"properties": 1},
    {"properties.": 1},
    {'properties.a"b': 1},
    {"properties.a\\b": 1},
    {"subject": 1},
    {"subject": {"gt": 1}},
    {"subject": ["a", 1]},
    {"properties.x": []},
    {"properties.x": {}},
    {"properties.x": {"eq": 1}},
    {"properties.x": {"prefix": 1}},
    {"properties.x": {"exists": "yes"}},
    {"properties.x": {"gt": "1"}},
    {"properties.x": {"gt": True}},
    {"properties.x": {"gt": float("nan")}},
    {"properties.x": {"lt": float("inf")}},
    {"properties.x": {"a": 1}},
    {"properties.x": [[1]]},
    {"properties.x": "a\x00b"},
    {"any": []},
    {"any": {"subject": "a"}},
    {"any": [{}]},
    {"not": {}},
    {"not": [{"subject": "a"}]},
    {"not": {"not": {"not": {"not": {"not": {"not": {"not": {"not": {"subject": "a"}}}}}}}}},
    {f"properties.p{i}": i for i in range(65)},
    {"properties.x": list(range(101))},
    {f"properties.p{i}": list(range(100)) for i in range(3)},
]


@pytest.mark.parametrize("bad", BAD_FILTERS, ids=lambda b: repr(b)[:60])
def test_a_malformed_filter_is_refused_at_subscribe(bad: Any) -> None:
    mq.create_topic("t")
    mq.create_queue("q")
    with pytest.raises(mq.InvalidArgumentError):
        mq.subscribe("t", "q", bad)
    assert mq.get_topic("t").subscriptions == []


def test_the_largest_valid_filter_publishes() -> None:
    """The bounds keep a publish to many subscriptions of the largest filters within
    SQLite's parameters per statement."""
    flt: dict[str, Any] = {f"properties.p{i}": list(range(4)) for i in range(63)}
    flt["any"] = [{"not": {"subject": {"prefix": "x"}}}]
    mq.create_topic("t")
    for i in range(60):
        mq.create_queue(f"q{i}")
        mq.subscribe("t", f"q{i}", flt)
    assert mq.publish("t", "b", properties={f"p{i}": 3 for i in range(63)}) == 60


def test_matching_queues_agrees_with_the_docs_table_in_one_topic() -> None:
    """``mq.matching_queues`` (the admin's filter test) runs the same compiled SQL: every
    example at once, one subscription per row, against each example's message."""
    mq.create_topic("table")
    for i, (flt, *_) in enumerate(EXAMPLES):
        mq.create_queue(f"row{i:02d}")
        mq.subscribe("table", f"row{i:02d}", flt)
    for i, (_, subject, props, takes) in enumerate(EXAMPLES):
        matched = mq.matching_queues("table", subject=subject, properties=props)
        assert (f"row{i:02d}" in matched) == takes, (i, EXAMPLES[i], matched)
        published = mq.publish("table", b"x", subject=subject, properties=props)
        assert published == len(matched)  # and a publish reaches exactly those
    assert mq.peek("row00") and mq.matching_queues("table", subject="nothing") != []


def test_matching_queues_checks_its_input() -> None:
    mq.create_topic("t")
    with pytest.raises(mq.TopicNotFoundError):
        mq.matching_queues("nope")
    with pytest.raises(mq.InvalidArgumentError):
        mq.matching_queues("t", properties=[1])  # type: ignore[arg-type]
    with pytest.raises(mq.InvalidArgumentError):
        mq.matching_queues("t", subject="a\x00")
    assert mq.matching_queues("t") == []
