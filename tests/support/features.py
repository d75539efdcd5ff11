"""Tests gated by what the database can do (a dialect feature), not by its vendor name.

``requires("listen_notify")`` skips a test (or a module, as ``pytestmark``) where the
database under test lacks the feature; ``lacks("prepare")`` runs one only where it
does; ``has("deferred_counts")`` answers inside a test that does both. Each feature is
read from the database's dialect (``django_mqlite.engine.dialects``), so a test says
what it needs and a third vendor would get the right answer from its own dialect.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from django_mqlite.engine.dialects import Dialect, dialect_for

#: Each feature a test may need: how the dialect says it, and the skip reason where the
#: database has not got it.
FEATURES: dict[str, tuple[Callable[[Dialect], bool], str]] = {
    "skip_locked": (
        lambda d: d.supports_skip_locked,
        "the database has no FOR UPDATE SKIP LOCKED",
    ),
    "listen_notify": (lambda d: d.has_listen_notify, "the database has no LISTEN/NOTIFY"),
    "wake_ups": (
        lambda d: d.has_listen_notify or d.has_commit_counter,
        "the database has no wake-up source (no LISTEN/NOTIFY, no commit counter): workers poll",
    ),
    "prepare": (lambda d: d.supports_prepare, "the database has no PREPARE"),
    "advisory_locks": (
        lambda d: d.lock_group_sql() is not None,
        "the database has no advisory locks",
    ),
    "concurrent_writers": (
        lambda d: d.concurrent_writers,
        "the database runs one writer at a time",
    ),
    "deferred_counts": (
        lambda d: d.defers_counts,
        "the database has no deferred counting trigger (later sends count at commit)",
    ),
    "counting_trigger": (
        lambda d: d.counts_enqueued,
        "the database has no trigger counting every send",
    ),
    "deadlock_retry": (
        lambda d: d.retries_deadlocks,
        "no transaction is run again after a deadlock on this database (engine/retry.py)",
    ),
    "sequence_page": (
        lambda d: d.upsert_writes_sequence,
        "the database's upsert takes no AUTOINCREMENT number (SQLite's sqlite_sequence)",
    ),
    "writable_cte": (
        lambda d: d.writable_cte,
        "the database has no writable CTE (a planned publish is two statements)",
    ),
    "json_text": (
        lambda d: d.json_is_text,
        "the database's JSON columns parse what they store (jsonb never held a lone surrogate)",
    ),
}


def has(feature: str, using: str = "default") -> bool:
    """Whether database ``using`` has ``feature`` (a key of ``FEATURES``)."""
    try:
        check, _ = FEATURES[feature]
    except KeyError:
        raise ValueError(f"unknown feature {feature!r}; one of {', '.join(FEATURES)}") from None
    return check(dialect_for(using))


def requires(*features: str, using: str = "default") -> pytest.MarkDecorator:
    """Skip unless database ``using`` has every one of ``features``."""
    missing = [f for f in features if not has(f, using)]
    reason = "; ".join(FEATURES[f][1] for f in missing) or f"has {', '.join(features)}"
    return pytest.mark.skipif(bool(missing), reason=reason)


def lacks(feature: str, using: str = "default") -> pytest.MarkDecorator:
    """Run only where database ``using`` has not got ``feature`` (a test of its absence)."""
    return pytest.mark.skipif(
        has(feature, using), reason=f"the database has {feature}: this tests its absence"
    )


@pytest.fixture
def needs_notify() -> None:
    """Skip the test where the database has no LISTEN/NOTIFY."""
    if not has("listen_notify"):
        pytest.skip(FEATURES["listen_notify"][1])
