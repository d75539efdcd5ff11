"""The mutation run's map (tests/mutation.py) names real files, and the checkout's one
``[tool.mutmut]`` configuration covers the same modules."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.mutation import (
    ACCEPTED,
    CI,
    MODULES,
    ROOT,
    index_case_only,
    name_case_only,
    sql_case_only,
)


def test_the_pyproject_configuration_mutates_the_mapped_modules() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    assert config["only_mutate"] == list(MODULES)
    assert config["process_isolation"] == "forkserver"


def test_every_mapped_module_and_test_file_exists() -> None:
    for module, tests in MODULES.items():
        assert (ROOT / module).is_file(), module
        assert tests, module
        for test in tests:
            assert Path(ROOT / test).is_file(), test


def test_the_ci_subset_and_the_accepted_survivors_name_mapped_modules() -> None:
    assert CI
    for module, db in CI:
        assert module in MODULES
        assert db in ("sqlite", "postgres")
    for name, why in ACCEPTED.items():
        assert name.startswith("django_mqlite."), name
        assert why.strip(), name


def test_the_statement_caches_emptied_under_mutation_testing_exist() -> None:
    from tests.conftest import statement_caches

    assert all(isinstance(cache, dict) for cache in statement_caches())


def _diff(old: str, new: str) -> str:
    return f"--- a\n+++ b\n-{old}\n+{new}\n"


def test_only_a_change_of_case_inside_sql_is_equivalent_by_rule() -> None:
    sql = 'cursor.execute("SET CONSTRAINTS mqlite_count_deferred IMMEDIATE")'
    assert sql_case_only(_diff(sql, sql.replace("SET CONSTRAINTS", "set constraints")))
    state = """c.execute("SELECT 1 WHERE state = 'active'")"""
    assert not sql_case_only(_diff(state, state.upper()))  # a quoted literal's case
    code = 'raise _denied("IncompleteSignature", "X-Amz-Date is missing.") from None'
    assert not sql_case_only(
        _diff(code, code.replace("IncompleteSignature", "INCOMPLETESIGNATURE"))
    )
    assert not sql_case_only(_diff('f("SELECT 1")', 'g("SELECT 1")'))
    tail = '"AND m.completed_at <= %s - COALESCE(q.keep_results_ms, 0) LIMIT %s)",'
    assert sql_case_only(_diff(tail, tail.lower()))  # a statement's continuation line


def test_a_table_alias_qualified_name_or_placeholder_in_capitals_is_not_by_rule() -> None:
    # MariaDB's table names and aliases are case-sensitive (lower_case_table_names=0 on
    # Linux), and %S is no placeholder: only keywords, functions, types and unqualified
    # column names may change their letter case by rule.
    line = '"SELECT v.attempt, body FROM mqlite_message m JOIN t AS v WHERE seq = 1"'
    assert sql_case_only(_diff(line, line.replace("body", "BODY").replace("seq", "SEQ")))
    assert sql_case_only(_diff(line, line.replace("SELECT", "select").replace("AS", "as")))
    for name in ("v.attempt", "mqlite_message", "m JOIN", "t AS", "AS v"):
        assert not sql_case_only(_diff(line, line.replace(name, name.upper()))), name
    update = '"UPDATE mqlite_message SET attempts = mqlite_message.attempts + %s"'
    assert not sql_case_only(_diff(update, update.replace(".attempts", ".ATTEMPTS")))
    assert not sql_case_only(_diff(update, update.replace("%s", "%S")))
    assert sql_case_only(_diff(update, update.replace("SET attempts", "SET ATTEMPTS")))
    counted = '"SELECT seq, row_number() OVER (ORDER BY seq) AS n FROM q"'
    assert sql_case_only(_diff(counted, counted.replace("row_number", "ROW_NUMBER")))
    assert not sql_case_only(_diff(counted, counted.replace("FROM q", "FROM Q")))
    # An alias used only as a qualifier on this line.
    tail = '"WHERE q.id = x AND q.paused = 0"'
    assert not sql_case_only(_diff(tail, tail.replace("q.", "Q.")))


def test_only_a_change_of_case_of_a_codec_or_digest_name_is_equivalent_by_rule() -> None:
    line = 'return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()'
    assert name_case_only(_diff(line, line.replace("utf-8", "UTF-8")))
    digest = 'return hmac.digest(keys()[0], data, "sha256").hex()'
    assert name_case_only(_diff(digest, digest.replace("sha256", "SHA256")))
    assert not name_case_only(_diff(line, line.replace("utf-8", "XXutf-8XX")))
    assert not name_case_only(_diff(line, line.replace("digest()", "hexdigest()")))
    code = 'raise _denied("IncompleteSignature", "x")'
    assert not name_case_only(
        _diff(code, code.replace("IncompleteSignature", "incompletesignature"))
    )


def test_only_a_change_of_case_of_an_index_name_in_a_hint_is_equivalent_by_rule() -> None:
    line = """f"CROSS JOIN mqlite_message m {dialect.index_hint('mqlite_msg_results')} \""""
    assert index_case_only(_diff(line, line.replace("mqlite_msg_results", "MQLITE_MSG_RESULTS")))
    assert not index_case_only(_diff(line, line.replace("mqlite_msg_results", "mqlite_msg_due")))
    assert not index_case_only(_diff(line, line.replace("CROSS JOIN", "JOIN")))
    assert not index_case_only(_diff(line, line.replace("index_hint", "key_hint")))
