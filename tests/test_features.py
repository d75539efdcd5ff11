"""``tests/support/features``: a test gated on a feature name that does not exist would
skip everywhere, forever; so an unknown name is an error at collection."""

from __future__ import annotations

import pytest

from django_mqlite.engine.dialects import dialect_for
from tests.support.features import FEATURES, has, lacks, requires


def test_an_unknown_feature_is_an_error_not_a_skip() -> None:
    for gate in (has, requires, lacks):
        with pytest.raises(ValueError, match="unknown feature 'listen_notfy'"):
            gate("listen_notfy")


@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_requires_and_lacks_skip_on_opposite_databases(feature: str) -> None:
    present = has(feature)
    (skip_unless,) = requires(feature).args
    (skip_if,) = lacks(feature).args
    assert (skip_unless, skip_if) == (not present, present)


def test_the_features_follow_the_dialect() -> None:
    d = dialect_for("default")
    assert has("listen_notify") == (d.notify_sql() is not None)
    assert has("advisory_locks") == d.concurrent_writers
