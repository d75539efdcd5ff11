"""Mutation testing of the modules that carry the guarantees, each against the tests
that cover it, on SQLite and PostgreSQL (docs/reliability.md, "Mutation testing").

``python -m tests.mutation``                      every module, both databases (hours)
``python -m tests.mutation --db sqlite MODULE``   one module on one database
``python -m tests.mutation --ci``                 the bounded subset CI runs
``python -m tests.mutation --list``               the module -> tests map
``python -m tests.mutation --no-run --record``    summarise the last runs, record them

Each (module, database) pair runs ``mutmut run`` (the ``mutation`` extra) in its own
scratch directory, ``.mutation/<db>/<module>/``: a ``pyproject.toml`` naming that one
module and its tests, and links to ``django_mqlite`` and ``tests``. mutmut copies them
into ``mutants/`` there, so the checkout is never edited and a second run of the same
pair retests only what changed. A mutant counts as killed when the tests kill it on
either database: a PostgreSQL-only path is tested on PostgreSQL. A survivor on every
database it ran on fails the run unless ``ACCEPTED`` lists it with the reason it is
equivalent to the original.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = ROOT / ".mutation"

E = "tests/engine/"
#: Each guarantee module and the test files that cover it.
MODULES: dict[str, list[str]] = {
    "django_mqlite/engine/claim.py": [
        E + "test_receive.py",
        E + "test_ordering.py",
        E + "test_limits.py",
        E + "test_bounds.py",
        # The byte budget, the group batch, the attempt's replay and the lease return
        # the claim runs first; its own rules one by one (messages, defaults, the
        # tracer, receive_deferred's pick); a queue on another database.
        E + "test_receive_budget.py",
        E + "test_group_batch.py",
        E + "test_attempt_scope.py",
        E + "test_lease_return.py",
        E + "test_claim_rules.py",
        E + "test_claim_one.py",
        "tests/multidb/test_claim_databases.py",
    ],
    "django_mqlite/engine/settle.py": [
        E + "test_settle.py",
        E + "test_settle_single_vs_batch.py",
        E + "test_receipts.py",
        E + "test_dead_letters.py",
        E + "test_forward_dead_letters.py",
        E + "test_idempotency.py",
        E + "test_history.py",
        # Snoozes, the release at shutdown, renewals with notes, batches and chains
        # (what a settlement counts and hands on), the lapsed handles of SQS.
        E + "test_snooze.py",
        E + "test_release.py",
        E + "test_running.py",
        E + "test_batches.py",
        E + "test_chains.py",
        "tests/sqs/test_lapsed_handles.py",
        # Its own rules one by one; every verb on a queue of another database.
        E + "test_settle_rules.py",
        "tests/multidb/test_settle_databases.py",
    ],
    "django_mqlite/engine/receipts.py": [
        E + "test_receipts.py",
        E + "test_idempotency.py",
        # The receipt lookup a lapsed settlement makes (``settled``, through ``_gone``).
        E + "test_settle_rules.py",
    ],
    "django_mqlite/engine/send.py": [
        E + "test_send.py",
        E + "test_send_statements.py",
        E + "test_idempotency.py",
        E + "test_ordering.py",
        # What only a second database, a failing batch or a second writer shows: each
        # statement on the queue's database and in its transaction, the signal, the line
        # lock, a batch that replaces or debounces.
        E + "test_send_rules.py",
    ],
    "django_mqlite/engine/send_one.py": [
        E + "test_send.py",
        E + "test_send_statements.py",
        E + "test_counter_triggers.py",
        "tests/aio/test_async_wait.py",
        "tests/multidb/test_outbox.py",
    ],
    "django_mqlite/engine/maintenance.py": [
        E + "test_reaper.py",
        "tests/worker/test_reaper_command.py",
        E + "test_stale_workers.py",
        # The quiet pass, a receive's own lease return, the dead-letter and result
        # retention passes, the liveness rule the stale-worker pass applies.
        E + "test_quiet_reap.py",
        E + "test_lease_return.py",
        E + "test_dead_letters.py",
        E + "test_liveness.py",
    ],
    "django_mqlite/worker/settlement.py": [
        # The flush's rules one by one (a failed flush gives the batch back; a delivery
        # known lost is not completed): the whole-worker files below pass without them.
        "tests/worker/test_settlement.py",
        "tests/worker/test_inprocess.py",
        "tests/worker/test_failures.py",
        "tests/worker/test_prefetch.py",
    ],
    # The policy's pure rules at their boundaries, no worker (a worker run under a
    # mutated start margin or target spins until its CPU limit).
    "django_mqlite/worker/prefetch.py": ["tests/worker/test_prefetch_rules.py"],
    # The check touches no database: its own request-by-request tests, no server.
    "django_mqlite/sqs/auth.py": ["tests/sqs/test_auth_rules.py"],
    "django_mqlite/tasks/signing.py": ["tests/tasks/test_signing.py"],
    "django_mqlite/tasks/front.py": ["tests/tasks/test_front.py"],
    # load() message by message (no worker), and its caches.
    "django_mqlite/tasks/envelope.py": [
        "tests/tasks/test_envelope_rules.py",
        "tests/tasks/test_envelope_cache.py",
    ],
    # Which task a message names, and the rule that imports only installed apps' modules.
    "django_mqlite/tasks/results.py": [
        "tests/tasks/test_envelope_rules.py",
        "tests/tasks/test_task_injection.py",
        # A result read back: its status, return value and errors, refresh and wait.
        "tests/tasks/test_running_result.py",
        "tests/tasks/test_bad_input.py",
        "tests/tasks/test_retries.py",
        "tests/tasks/test_async_and_timeout.py",
        "tests/tasks/test_cancel.py",
        # Its rules one by one: an id's bounds, the importable modules, a burial's error,
        # a history read as a result; which row an id names, each state, refresh, wait.
        "tests/tasks/test_results_rules.py",
        "tests/tasks/test_results_reading.py",
    ],
    "django_mqlite/permissions.py": [
        "tests/multidb/test_permission_model.py",
        "tests/api/test_permission_classes.py",
        "tests/tasks/test_task_injection.py",
    ],
    "django_mqlite/api/permissions.py": [
        "tests/api/test_auth_matrix.py",
        "tests/api/test_permission_classes.py",
    ],
}

#: The bounded subset CI runs (a few minutes on a quiet 2-core machine).
CI = [("django_mqlite/api/permissions.py", "sqlite")]

#: Survivors that are equivalent to the original, by mutant name, with the reason. (A
#: survivor that only changes the letter case of SQL keywords is equivalent by rule,
#: ``sql_case_only``, and needs no entry.)
_CACHE = "the statement cache misses: the statement is rebuilt, the same text"
_FALSY = "None for False in a value only ever tested for truth"
_S1 = "django_mqlite.engine.send_one."
_CLAIM = "django_mqlite.engine.claim."
_AUTH = "django_mqlite.sqs.auth."
_SIGN = "django_mqlite.tasks.signing."
_RES = "django_mqlite.tasks.results."
#: A survivor that SQLite and PostgreSQL fold but MariaDB, outside this run, refuses.
_MARIADB = (
    "not equivalent: killed on MariaDB only, outside this run (its table names and aliases "
    "are case-sensitive: lower_case_table_names=0, its Linux default), checked by hand "
    "there with the module's tests: "
)
_PG_FOLDS = "in a PostgreSQL-only statement, which PostgreSQL folds (an unquoted name)"
_SAFE = (
    "another safe set for quote(): the letters X are never encoded, '~' never is "
    "(Python 3.7+) and '/' is the default"
)
ACCEPTED: dict[str, str] = {
    **{_S1 + f"x__postgres_sql__mutmut_{i}": _CACHE for i in (4, 5, 6, 7, 8, 9)},
    **{_S1 + f"x__deferred_sql__mutmut_{i}": _CACHE for i in (1, 2, 3, 4, 18, 19)},
    _S1 + "x__deferred_sql__mutmut_8": "rpartition for partition: the text holds the "
    "separator once",
    _S1 + "x__deferred_sql__mutmut_10": "None for False picks the same statement (no NOTIFY)",
    _S1 + "x__deferred_sql__mutmut_13": "the NOTIFY tail follows the part cut off: the "
    "head is the same",
    **{
        _S1 + f"x_try_send__mutmut_{i}": "the prepared statement's name prefix: the digest "
        "of its text keeps every name unique"
        for i in (60, 61)
    },
    **{
        _S1 + f"x_flush_deferred_counts__mutmut_{i}": "the deferred constraint's name in "
        "capitals " + _PG_FOLDS
        for i in (16, 20)
    },
    _S1 + "x__build_postgres_sql__mutmut_16": "FROM Q for the CTE q " + _PG_FOLDS,
    **{
        f"django_mqlite.engine.receipts.x_write__mutmut_{i}": "PostgreSQL written to with "
        "the VALUES form every other database runs: the same receipts (its unnest form is "
        "one statement text whatever the batch's size, a speed difference, not a result)"
        for i in (5, 6)
    },
    "django_mqlite.engine.receipts.x_write__mutmut_13": "the table's and its columns' "
    "names in capitals " + _PG_FOLDS + " (the unnest form)",
    **{
        f"django_mqlite.engine.send.x__claim_dedup__mutmut_{i}": _MARIADB + "the upsert's "
        "column names in capitals (and, in 7, its table's), which the MariaDB dialect's "
        "ON CONFLICT translation matches to excluded.<column> by exact name (KeyError)"
        for i in (7, 13)
    },
    _S1 + "x__pending__mutmut_11": _FALSY + " (the default of a getattr)",
    _S1 + "xǁCountedǁ__init____mutmut_2": _FALSY,
    _S1 + "xǁCountedǁ__init____mutmut_4": _FALSY,
    **{
        f"django_mqlite.api.permissions.xǁQueuePermissionǁhas_permission__mutmut_{i}": "the "
        "default action: has_queue_permission maps any action it does not know to manage"
        for i in (9, 15, 16)
    },
    "django_mqlite.api.permissions.xǁQueuePermissionǁhas_permission__mutmut_19": "DRF sets "
    "view.kwargs in dispatch, before any permission check",
    "django_mqlite.permissions.x_has_queue_permission__mutmut_8": _FALSY
    + " (the default of a getattr whose result is negated)",
    **{_AUTH + f"x__canonical_query__mutmut_{i}": _SAFE for i in (13, 18)},
    **{_AUTH + f"x_canonical_request__mutmut_{i}": _SAFE for i in (5, 9, 10, 11)},
    **{
        _AUTH + f"x_canonical_request__mutmut_{i}": "the method's fallback: a request "
        "through Django's handlers always has a method (the fallback satisfies its type)"
        for i in (22, 23)
    },
    **{
        _AUTH + f"x_canonical_request__mutmut_{i}": "None for an absent QUERY_STRING: "
        "parse_qsl reads None as the empty query"
        for i in (26, 28)
    },
    **{
        _AUTH + f"x_verify__mutmut_{i}": "None for an absent Authorization: falsy like '', "
        "the same MissingAuthenticationToken"
        for i in (3, 5)
    },
    _AUTH + "x_verify__mutmut_70": "the header's name in capitals: _header upper-cases it",
    **{
        _SIGN + f"x_keys__mutmut_{i}": "the default of getattr(settings, "
        "'SECRET_KEY_FALLBACKS'): Django's global settings always define it"
        for i in (5, 8)
    },
    **{
        f"django_mqlite.tasks.front.x__task_message__mutmut_{i}": "a cut of a message quoting "
        "a task's own dotted path or an exception of the backend's validation: no task "
        "path of the project nears 200 characters, no such message 500"
        for i in (13, 58, 59, 90)
    },
    "django_mqlite.tasks.front.x__task_message__mutmut_34": "the Task's backend field: "
    "validate_task, envelope (given the alias) and policy never read it",
    **{
        f"django_mqlite.tasks.envelope.x_load__mutmut_{i}": "a cut of a description "
        "quoting a resolved task's dotted path or the backend validation's message: no "
        "task path of the project nears 200 characters, no such message 500"
        for i in (45, 46)
    },
    "django_mqlite.tasks.envelope.x__verify__mutmut_27": "None for b'' as the payload of "
    "an envelope that cannot be serialised: both falsy, the same refusal",
    "django_mqlite.tasks.envelope.x__verify__mutmut_28": "b'XXXX' for b'' as the payload "
    "of an envelope that cannot be serialised: no signature of ours covers those bytes",
    "django_mqlite.worker.prefetch.xǁPrefetchǁwant__mutmut_4": "room < 0 for room <= 0: "
    "at room 0 no thread is idle (an idle thread means room > target - threads >= 0) and "
    "0 is under the top-up threshold (at least 1), so 0 is returned below all the same",
    **{
        f"django_mqlite.worker.settlement.x_{fn}__mutmut_{i}": "zip()'s strict check over "
        "a batch and the engine's answer for it: the engine answers one result per item, "
        "in order (its settle verbs' contract), so the lengths always match"
        for fn, i in [
            *(("renew_due", i) for i in (31, 34, 35)),
            *(("flush_completions", i) for i in (44, 47, 48)),
            *(("flush_failures", i) for i in (63, 66, 67)),
        ]
    },
    **{
        f"django_mqlite.worker.settlement.x_renew_due__mutmut_{i}": "zip()'s strict check "
        "over a batch and its notes on a failed renewal: the notes are built from the same "
        "batch, one per delivery"
        for i in (23, 26, 27)
    },
    "django_mqlite.worker.settlement.x_flush_completions__mutmut_12": _FALSY
    + " (_after_completion's done)",
    "django_mqlite.worker.settlement.x_flush_completions__mutmut_35": "completions passed "
    "when none is given: complete_many takes an item whose completion is None by the plain "
    "statement, and reads a node's result from {} as from None",
    **{
        f"django_mqlite.engine.maintenance.x_{fn}__mutmut_{i}": "an index's name in "
        "capitals, handed to the dialect's index hint: SQLite's INDEXED BY and MariaDB's "
        "FORCE INDEX match index names case-insensitively, PostgreSQL's hint is empty"
        for fn, i in (("reclaim_stale_workers", 12), ("expire_locks", 5), ("expire_locks", 11))
    },
    **{
        f"django_mqlite.engine.maintenance.x_{fn}__mutmut_{i}": _MARIADB + "a table's name "
        "in capitals ('Table ... doesn't exist')"
        for fn, i in (
            ("expire_records", 3),
            ("expire_records", 7),
            ("expire_records", 11),
            ("reclaim_sql", 4),
            ("prune_workers", 8),
            ("result_retention", 7),
        )
    },
    **{
        f"django_mqlite.engine.maintenance.x_dlq_retention__mutmut_{i}": "a column alias in "
        "capitals (AS N, AS B), read back in lower case: column aliases are "
        "case-insensitive on every database (MariaDB's too, checked by hand)"
        for i in (38, 49)
    },
    "django_mqlite.engine.maintenance.x__reap__mutmut_1": "the default of _reap's quiet: "
    "its one caller, reap, always passes it",
    "django_mqlite.engine.maintenance.x_expire_queue_locks__mutmut_6": "1 for 0 as the "
    "count of a throttled lease return: its one caller (the receive) ignores the count",
    "django_mqlite.engine.maintenance.x_expire_queue_locks__mutmut_2": "the lease-return "
    "interval keyed without the database: a throttle, not a rule (the reaper's statement "
    "decides what returns); with two databases holding a queue of one name, one's return "
    "could run up to QUEUE_LEASES_EVERY_MS later, which no test of one queue a name can see",
    **{
        f"django_mqlite.engine.send.x_{fn}__mutmut_{i}": "zip()'s strict check over lists "
        "of one length: the rows and their dependency references are both built from the "
        "messages, one each; an INSERT's RETURNING gives one seq per VALUES tuple"
        for fn, i in (
            ("_send_once", 40),
            ("_send_once", 43),
            ("_send_once", 44),
            ("_insert", 32),
            ("_insert", 35),
            ("_insert", 36),
        )
    },
    **{
        f"django_mqlite.engine.send.x__send_once__mutmut_{i}": "another mark than -2 for a "
        "copy inside the batch: the copies are given their original's seq after every "
        "other slot is set"
        for i in (96, 97)
    },
    "django_mqlite.engine.send.x__send_once__mutmut_169": "another mark than -2 left out "
    "of the slots given their claim's seq: a copy's slot then takes 0, and the copies are "
    "given their original's seq after every other slot is set",
    "django_mqlite.engine.send.x__send_once__mutmut_87": "None for single when a repeat "
    "of a key already held is judged: a batch has repeats only with several messages, "
    "which only send_batch sends, with single False; _claim_dedup tests it for truth",
    "django_mqlite.engine.send.x__send_once__mutmut_102": "-2 for -1 as the mark of a "
    "conflict inside the batch: a slot that inserted nothing keeps its row's seq, 0, "
    "either way",
    "django_mqlite.engine.send.x__claim_dedup__mutmut_38": "-2 for -1 as a batch's "
    "conflict with an earlier message: a slot that inserted nothing keeps its row's seq, "
    "0, either way",
    "django_mqlite.engine.send.x__claim_dedup__mutmut_33": "seq >= 0 for seq > 0: a key's "
    "seq is 0 only between its claim and the UPDATE at the end of the same send, which "
    "judges that key's repeats against the owner without reading the row",
    **{
        f"django_mqlite.engine.send.x_send_batch__mutmut_{i}": _FALSY + " (single)"
        for i in (25, 34)
    },
    _S1 + "x_flush_deferred_counts__mutmut_2": "or for and: outside a transaction there "
    "are no on-commit markers, and on SQLite none are Counted, so it returns all the same",
    **{
        f"django_mqlite.engine.settle.x_complete_with_result__mutmut_{i}": "the result's "
        "encoding not handed on: encode_completion encodes the same value with the same "
        "canonical dumps (and only where results are kept)"
        for i in (17, 20)
    },
    "django_mqlite.engine.settle.x_release__mutmut_32": "an unquoted column's name in "
    "capitals in an UPDATE's SET: every database folds it",
    **{
        f"django_mqlite.engine.settle.x_{fn}__mutmut_{i}": "the source queue handed to "
        "the burial: without it the burial reads the same queue row back (one query more)"
        for fn, i in (
            ("snooze_many", 79),
            ("abandon_many", 73),
            ("reject_many", 55),
            ("_with_burials", 6),
            ("_with_burials", 11),
        )
    },
    "django_mqlite.engine.settle.x_complete_many__mutmut_30": "None for the dialect handed "
    "to complete_plain, which never reads it (one statement text on every database)",
    "django_mqlite.engine.settle.x_renew_many__mutmut_49": "an unqualified column name "
    "in capitals: column names are case-insensitive on every database",
    "django_mqlite.engine.settle.x_renew_many__mutmut_54": "the lapsed form of the SET "
    "on the rows the live fence matched: they are locked already, with a deadline, so "
    "COALESCE takes GREATEST's value",
    **{
        f"django_mqlite.engine.settle.x__settle__mutmut_{i}": "the start of a span when no "
        "tracer watches: it is only ever handed to a tracer"
        for i in (6, 8)
    },
    "django_mqlite.engine.settle.x__gone__mutmut_15": "or for and before the receipts "
    "are asked: with no verb (a renewal) they hold no receipt of a NULL verb, and with "
    "nothing absent receipts.settled is handed no request; either way nothing is taken "
    "off",
    **{
        f"django_mqlite.engine.settle.x_{fn}__mutmut_{i}": _MARIADB + "a qualified column "
        "name in capitals (tests/engine/test_settle_rules.py: 'Unknown column')"
        for fn, i in (
            ("_renew_with_notes", 35),
            ("abandon_many", 19),
            ("abandon_many", 21),
            ("reject_many", 14),
            ("reject_many", 16),
        )
    },
    **{
        f"django_mqlite.engine.settle.x__renew_with_notes__mutmut_{i}": "zip()'s strict "
        "check over a renewal's items and notes: renew_many refuses notes that are not "
        "parallel to the items before anything runs"
        for i in (9, 12, 13)
    },
    **{
        _RES + f"x_parse_id__mutmut_{i}": "the count of a split() whose first part is "
        "taken: every count gives the same first part"
        for i in (8, 11)
    },
    **{
        _RES + f"x_load_result__mutmut_{i}": "the default of a body without 'task': "
        "resolve_task refuses None (not a string) and '' and 'XXXX' (no module part to "
        "import) alike"
        for i in (17, 19, 22)
    },
    **{
        _RES + f"x_load_result__mutmut_{i}": "the key of a running attempt's error, None: "
        "build_result reads it with get(), None either way"
        for i in (84, 85)
    },
    _RES + "x_build_result__mutmut_36": "len(starts) >= 1 for > 1: with one start, its "
    "max is its min, the first attempt's",
    **{
        _RES + f"xǁMQLiteTaskResultǁ__post_init____mutmut_{i}": "the slot of the return "
        "value set to None whatever hasattr says: when __post_init__ runs it is unset or "
        "holds its default, None"
        for i in (2, 6, 7)
    },
    _RES + "xǁMQLiteTaskResultǁarefresh__mutmut_4": "thread_sensitive=True left out: it "
    "is sync_to_async's default",
    **{_CLAIM + f"x__claim_statement__mutmut_{i}": _CACHE for i in (6, 7, 50)},
    **{_CLAIM + f"x__one_statement__mutmut_{i}": _CACHE for i in (1, 2, 59)},
    _CLAIM + "x__one_statement__mutmut_18": _FALSY + " (delete: the same statement, cached "
    "under another key)",
    **{
        _CLAIM + f"x__one_statement__mutmut_{i}": "the CTE names q, p, l and c in capitals "
        + _PG_FOLDS
        for i in (49, 51, 55, 58)
    },
    **{
        _CLAIM + f"x__run_one__mutmut_{i}": "the prepared statement's label: its name "
        "also holds the digest of its text, which keeps it unique"
        for i in (11, 19, 20)
    },
    _CLAIM + "x__run_one__mutmut_1": "the default of leases made True: the one call that "
    "leaves it out passes anyway=True, which claims whatever the look finds, and reads "
    "only the claimed rows of its answer",
    _CLAIM + "x__claim_one__mutmut_28": "the lease-return interval keyed without the "
    "database: a throttle, not a rule (the reaper's statement decides what returns); "
    "with two databases holding a queue of one name, one's return could run up to "
    "QUEUE_LEASES_EVERY_MS later, which no test of one queue a name can see",
    **{_CLAIM + f"x__promote_statement__mutmut_{i}": _CACHE for i in (1, 2, 14)},
    **{
        _CLAIM + f"x__claim_statement__mutmut_{i}": "a default of _claim_statement: its callers "
        "(the claim, and tests/engine/test_rows.py) pass every argument"
        for i in (1, 2, 3, 4)
    },
    **{
        _CLAIM + f"x__claim_statement__mutmut_{i}": "the count of a replace() of "
        "'SELECT seq FROM', which every vendor's pick holds once"
        for i in (17, 24)
    },
    **{
        _CLAIM + f"x__claim_statement__mutmut_{i}": "the letter case of the byte budget's "
        "ORDER BY (DESC, and the unquoted column names every database folds)"
        for i in (38, 39)
    },
    _CLAIM + "x__receive_deferred__mutmut_78": "the letter case of the byte budget's "
    "ORDER BY column, an unquoted name every database folds",
    **{
        _CLAIM + f"x_{fn}__mutmut_6": "the start of a span when no tracer watches: it is "
        "only ever handed to a tracer"
        for fn in ("claim", "receive_deferred")
    },
}

# An SQL keyword as the engine writes them (upper case), inside a double-quoted literal.
# (AND, ORDER, LIMIT, NULL, CASE's words, VALUES and RETURNING for the continuation
# lines of a statement split over literals.)
_SQL = re.compile(
    r"\b(SELECT|INSERT|UPDATE|DELETE|SET|CAST|WITH|FROM|WHERE|COUNT|AND|ORDER|LIMIT|NULL|"
    r"CASE|WHEN|THEN|ELSE|END|VALUES|RETURNING)\b"
)
_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"')
_QUOTED = re.compile(r"'[^']*'")
_WORD = re.compile(r"[A-Za-z_]\w*")
#: The words of the engine's SQL whose letter case no database minds: keywords, and the
#: functions and types it calls by name.
_CASE_FREE = frozenset(
    "ALL AND AS ASC BIGINT BY BYTEA CASE CAST COALESCE CONFLICT CONSTRAINTS COUNT "
    "DEFERRED DELETE DESC DISTINCT DO ELSE END EXISTS FOR FROM GREATEST IMMEDIATE IN "
    "INSERT INTEGER INTO IS JOIN JSONB LEFT LENGTH LIMIT LOCKED MAX MIN NOT NULL OFFSET "
    "ON OR ORDER OVER RETURNING ROW_NUMBER SELECT SET SKIP SMALLINT SUM TEXT THEN UNNEST "
    "UPDATE VALUES VARCHAR WHEN WHERE WITH".split()
)
#: The words after which a name is a table's (a derived table's, a function's) or an
#: alias.
_NAMING = frozenset({"FROM", "JOIN", "INTO", "UPDATE", "AS"})


def _case_free_words(old: str, new: str) -> bool:
    """Whether each word of the SQL text ``old`` that ``new`` writes in another letter
    case is a keyword, a function or type name, or an unqualified column's name. Not a
    table's name (``mqlite_...``, or what follows FROM, JOIN, INTO or UPDATE), an alias
    (what follows a table's name or AS, or a name used as a qualifier), a qualified
    reference (``v.attempt``) or a placeholder (``%S`` is none): MariaDB's table names
    and aliases are case-sensitive (``lower_case_table_names=0``, its Linux default)."""
    qualifiers = {m.group(1).lower() for m in re.finditer(r"(\w+)\.", old)}
    previous = ""
    for m in _WORD.finditer(old):
        word, start, end = m.group(), m.start(), m.end()
        if new[start:end] != word and word.upper() not in _CASE_FREE:
            named = previous.upper() in _NAMING or previous.lower().startswith("mqlite_")
            table = word.lower().startswith("mqlite_") or word.lower() in qualifiers
            if named or table or old[start - 1] in ".%" or old[end : end + 1] == ".":
                return False
        previous = word
    return True


def sql_case_only(diff: str) -> bool:
    """Whether a mutant's diff changes only the letter case of SQL that no database
    minds: one line, the code around its string literals unchanged, and each literal
    that changed an SQL text (an upper-case keyword in it) whose quoted SQL literals
    kept their case and whose words that changed are keywords, functions, types or
    unqualified column names (``_case_free_words``). Such a mutant is equivalent."""
    lines = diff.splitlines()
    minus = [x[1:] for x in lines if x.startswith("-") and not x.startswith("---")]
    plus = [x[1:] for x in lines if x.startswith("+") and not x.startswith("+++")]
    if len(minus) != 1 or len(plus) != 1 or minus[0] == plus[0]:
        return False
    old, new = minus[0], plus[0]
    if _LITERAL.sub('""', old) != _LITERAL.sub('""', new):
        return False  # the code itself changed, not only a string
    pairs = list(zip(_LITERAL.findall(old), _LITERAL.findall(new), strict=False))
    changed = [(a, b) for a, b in pairs if a != b]
    return bool(changed) and all(
        a.lower() == b.lower()
        and _SQL.search(a)
        and _QUOTED.findall(a) == _QUOTED.findall(b)
        and _case_free_words(a, b)
        for a, b in changed
    )


#: Names that Python's codec and hashlib registries look up whatever their letter case.
_NAMES_ANY_CASE = {"utf-8", "ascii", "sha256"}


def name_case_only(diff: str) -> bool:
    """Whether a mutant's diff only changes the letter case of a codec or digest name
    (``"utf-8"`` to ``"UTF-8"``, ``"sha256"`` to ``"SHA256"``): one line, and the only
    literal that changed is such a name, case aside. ``str.encode`` and ``hmac.digest``
    look names up case-insensitively, so such a mutant is equivalent."""
    lines = diff.splitlines()
    minus = [x[1:] for x in lines if x.startswith("-") and not x.startswith("---")]
    plus = [x[1:] for x in lines if x.startswith("+") and not x.startswith("+++")]
    if len(minus) != 1 or len(plus) != 1 or minus[0] == plus[0]:
        return False
    old, new = minus[0], plus[0]
    if _LITERAL.sub('""', old) != _LITERAL.sub('""', new):
        return False
    pairs = list(zip(_LITERAL.findall(old), _LITERAL.findall(new), strict=False))
    changed = [(a, b) for a, b in pairs if a != b]
    return bool(changed) and all(
        a.lower() == b.lower() and a.strip('"').lower() in _NAMES_ANY_CASE for a, b in changed
    )


_HINT = re.compile(r"index_hint\('([^']*)'\)")


def index_case_only(diff: str) -> bool:
    """Whether a mutant's diff only changes the letter case of an index's name given to
    the dialect's ``index_hint``: one line, nothing else changed. SQLite's ``INDEXED BY``
    and MariaDB's ``FORCE INDEX`` match index names case-insensitively, and PostgreSQL's
    hint is empty, so such a mutant is equivalent."""
    lines = diff.splitlines()
    minus = [x[1:] for x in lines if x.startswith("-") and not x.startswith("---")]
    plus = [x[1:] for x in lines if x.startswith("+") and not x.startswith("+++")]
    if len(minus) != 1 or len(plus) != 1 or minus[0] == plus[0]:
        return False
    old, new = minus[0], plus[0]
    if _HINT.sub("index_hint('')", old) != _HINT.sub("index_hint('')", new):
        return False
    return [n.lower() for n in _HINT.findall(old)] == [n.lower() for n in _HINT.findall(new)]


#: Per module and database, the mutants that survive there but the other database's
#: run kills (a path that only one database takes), as the last run of both recorded
#: them (``--record``): a run of one database alone (CI's) counts them as killed.
ELSEWHERE = Path(__file__).with_name("mutation_elsewhere.json")

DATABASES = ("sqlite", "postgres")
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests"}
STATUS.update({34: "skipped", 36: "timeout", 24: "timeout", -24: "timeout", 152: "timeout"})


def _slug(module: str) -> str:
    return module.removeprefix("django_mqlite/").removesuffix(".py").replace("/", ".")


def _pyproject(module: str, tests: list[str], db: str) -> str:
    """The checkout's pytest settings, and its ``[tool.mutmut]`` narrowed to this one
    module and its tests. Every mutant is a fresh pytest session: on PostgreSQL it keeps
    the test database (``--reuse-db``; the tests roll back what they write) rather than
    create and migrate it for each mutant."""
    text = (ROOT / "pyproject.toml").read_text()
    pytest_ini = text[text.index("[tool.pytest.ini_options]") :]
    pytest_ini = pytest_ini[: pytest_ini.index("\n[", 1)]
    config = dict(tomllib.loads(text)["tool"]["mutmut"])
    config["only_mutate"] = [module]
    config["pytest_add_cli_args_test_selection"] = tests
    if db != "sqlite":
        config["pytest_add_cli_args"] = [*config.get("pytest_add_cli_args", []), "--reuse-db"]
    mutmut = "".join(f"{key} = {json.dumps(value)}\n" for key, value in config.items())
    return f"{pytest_ini}\n\n[tool.mutmut]\n{mutmut}"


def run_one(module: str, db: str, max_children: int) -> dict[str, int]:
    """Run mutmut over ``module`` on ``db``; the exit code of each mutant, by name."""
    where = SCRATCH / db / _slug(module)
    where.mkdir(parents=True, exist_ok=True)
    for name in ("django_mqlite", "tests"):
        link = where / name
        if not link.exists():
            link.symlink_to(ROOT / name)
    config = _pyproject(module, MODULES[module], db)
    pyproject = where / "pyproject.toml"
    if not pyproject.exists() or pyproject.read_text() != config:
        pyproject.write_text(config)
    # MQLITE_MUTATION: tests/conftest.py empties the statement caches before each test.
    env = {
        **os.environ,
        "MQLITE_TEST_DB": db,
        "MQLITE_TEST_DIR": str(where),
        "MQLITE_MUTATION": "1",
    }
    # A mutant's run is a few test files, not a whole suite: CI's skip pins are not its.
    env.pop("MQLITE_EXPECTED_SKIPS", None)
    mutmut = Path(sys.executable).with_name("mutmut")
    started = time.monotonic()
    log = where / "mutmut.log"
    with log.open("w") as out:
        cmd = [str(mutmut), "run", "--max-children", str(max_children)]
        done = subprocess.run(cmd, cwd=where, env=env, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise SystemExit(f"mutmut failed on {module} ({db}), see {log}")
    meta = where / "mutants" / f"{module}.meta"
    codes: dict[str, int] = json.loads(meta.read_text())["exit_code_by_key"]
    print(f"{module} on {db}: {len(codes)} mutants in {time.monotonic() - started:.0f}s")
    return codes


def summarise(module: str, by_db: dict[str, dict[str, int]]) -> list[str]:
    """Print the module's score per database and combined; its unexplained survivors."""
    for db, codes in by_db.items():
        counts = Counter(STATUS.get(c, "suspicious") for c in codes.values())
        print(f"  {db}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    names = set().union(*by_db.values())
    statuses = {n: {STATUS.get(c.get(n, 33), "suspicious") for c in by_db.values()} for n in names}
    killed = {n for n, s in statuses.items() if "killed" in s}
    tested = {n for n, s in statuses.items() if s & {"killed", "survived"}}
    if len(by_db) == 1:  # one database: what the other one kills (recorded) counts
        [db] = by_db
        elsewhere = set(_elsewhere().get(module, {}).get(db, []))
        killed |= tested & elsewhere
    survivors = sorted(tested - killed)
    db = next(iter(by_db))
    equivalent = {n: ACCEPTED[n] for n in survivors if n in ACCEPTED}
    for n in survivors:
        if n in equivalent:
            continue
        diff = show(module, db, n)
        if sql_case_only(diff):
            equivalent[n] = "only the letter case of SQL keywords or column names"
        elif name_case_only(diff):
            equivalent[n] = "only the letter case of a codec or digest name"
        elif index_case_only(diff):
            equivalent[n] = "only the letter case of an index name in a hint"
    score = (len(killed) + len(equivalent)) / len(tested) if tested else 1.0
    print(
        f"  {'+'.join(by_db)}: {len(killed)} killed and {len(equivalent)} equivalent of "
        f"{len(tested)} tested ({len(names) - len(tested)} reached by no test), "
        f"score {score:.1%}"
    )
    for n, why in sorted(equivalent.items()):
        print(f"    equivalent: {n}: {why}")
    return [n for n in survivors if n not in equivalent]


def _elsewhere() -> dict[str, dict[str, list[str]]]:
    if not ELSEWHERE.exists():
        return {}
    data: dict[str, dict[str, list[str]]] = json.loads(ELSEWHERE.read_text())
    return data


def record(results: dict[str, dict[str, dict[str, int]]]) -> None:
    """Write, per module run on both databases, the survivors of each that the other
    kills."""
    data = _elsewhere()
    for module, by_db in results.items():
        if set(by_db) != set(DATABASES):
            continue
        data[module] = {
            db: sorted(
                n
                for n, code in codes.items()
                if STATUS.get(code) == "survived"
                and any(STATUS.get(o.get(n, 33)) == "killed" for d, o in by_db.items() if d != db)
            )
            for db, codes in by_db.items()
        }
    ELSEWHERE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def show(module: str, db: str, name: str) -> str:
    """The diff of mutant ``name`` (``mutmut show`` in its scratch directory)."""
    where = SCRATCH / db / _slug(module)
    mutmut = Path(sys.executable).with_name("mutmut")
    done = subprocess.run(
        [str(mutmut), "show", name], cwd=where, capture_output=True, text=True, check=True
    )
    return done.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutation")
    parser.add_argument("modules", nargs="*", help="default: every module of MODULES")
    parser.add_argument("--db", choices=[*DATABASES, "both"], default="both")
    parser.add_argument("--ci", action="store_true", help="only the CI subset")
    parser.add_argument("--list", action="store_true", help="print the map and exit")
    parser.add_argument("--max-children", type=int, default=1)
    parser.add_argument(
        "--no-run", action="store_true", help="summarise the last runs' results only"
    )
    parser.add_argument(
        "--record", action="store_true", help=f"write {ELSEWHERE.name} from these runs"
    )
    args = parser.parse_args(argv)
    if args.list:
        for module, tests in MODULES.items():
            print(module, *tests, sep="\n    ")
        return 0
    unknown = set(args.modules) - set(MODULES)
    if unknown:
        parser.error(f"not a guarantee module: {', '.join(sorted(unknown))}")
    dbs = list(DATABASES) if args.db == "both" else [args.db]
    pairs = CI if args.ci else [(m, db) for m in args.modules or MODULES for db in dbs]
    results: dict[str, dict[str, dict[str, int]]] = {}
    for module, db in pairs:
        if args.no_run:
            meta = SCRATCH / db / _slug(module) / "mutants" / f"{module}.meta"
            if meta.exists():
                results.setdefault(module, {})[db] = json.loads(meta.read_text())[
                    "exit_code_by_key"
                ]
            continue
        results.setdefault(module, {})[db] = run_one(module, db, args.max_children)
    if args.record:
        record(results)
    failed: list[str] = []
    for module, by_db in results.items():
        print(module)
        failed += summarise(module, by_db)
    if failed:
        print("survivors (kill each with a test, or list it in ACCEPTED with why):")
        print(*(f"  {n}" for n in failed), sep="\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
