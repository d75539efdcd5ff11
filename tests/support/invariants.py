"""The stats invariants of SPEC §3, checked over every queue after a hostile run."""

from __future__ import annotations

import django_mqlite as mq


def assert_stats_invariants() -> None:
    """Every failure is reported or noticed and leads to a retry or a burial, and every
    dead letter has its reason (TTL dead letters only where the queue keeps them)."""
    for name, st in mq.stats().items():
        t = st.totals
        assert t["abandoned"] + t["reclaimed"] == t["retried"] + t["exhausted"], (name, t)
        ttl = t["expired"] if mq.get_queue(name).dead_letter_on_expire else 0
        assert t["dead_lettered"] == t["exhausted"] + t["rejected"] + ttl, (name, t)
        assert all(n >= 0 for n in st.counts.values()), (name, st.counts)
