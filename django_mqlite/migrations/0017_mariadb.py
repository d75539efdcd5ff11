"""MariaDB: what the partial indexes, the unique constraint with a
condition and the SQLite trigger of the earlier migrations are on the other two
databases. Runs on MariaDB only; on SQLite and PostgreSQL it does nothing.

Django creates the partial indexes on MariaDB without their conditions (check
models.W037) and skips the conditional unique constraint (models.W036). Here:

- the text columns of every queue table compare as bytes, with no trailing-space
  padding (``utf8mb4_nopad_bin``), as text compares on SQLite and PostgreSQL, whatever
  the database's default collation;
- each partial index is rebuilt with its condition's state leading the key, so a
  statement that names the state seeks the rows of that state only; the claim's index
  orders by ``claim_rank``, a virtual column holding ``-priority`` (a descending key
  needs MariaDB 10.8);
- ``mqlite_msg_unique`` is a unique index on ``live_unique_key``, a virtual column that
  is the unique key while the message is live and NULL otherwise (NULLs never clash),
  with a plain index on (queue, unique_key) for reading the holder;
- the ``mqlite_count_enqueued`` trigger adds every insert into ``mqlite_message`` to its
  queue's ``enqueued`` total, on the writer's shard, in the inserting statement;
- ``mqlite_lock`` holds the rows that stand for group and unique-key locks
  (``dialects.mariadb``): a row lock lasts until the transaction ends, as PostgreSQL's
  ``pg_advisory_xact_lock`` does (``GET_LOCK`` would outlive it).
"""

from django.db import migrations

TABLES = [
    "mqlite_queue",
    "mqlite_message",
    "mqlite_batch",
    "mqlite_receipt",
    "mqlite_attempt",
    "mqlite_dedup",
    "mqlite_processed_key",
    "mqlite_totals",
    "mqlite_history",
    "mqlite_worker",
    "mqlite_periodic",
    "mqlite_sqs_queue",
    "mqlite_topic",
    "mqlite_subscription",
    "mqlite_topic_totals",
]
LIVE = "('active', 'locked', 'deferred', 'scheduled')"
LOCKS = 4096  # dialects.mariadb.LOCKS
OTHERS = (
    "delivered, completed, abandoned, reclaimed, retried, exhausted, rejected, expired, "
    "dead_lettered, redriven, purged"
)

CREATE = [
    *(f"ALTER TABLE {t} CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin" for t in TABLES),
    "ALTER TABLE mqlite_message "
    "ADD COLUMN claim_rank integer AS (-priority) VIRTUAL, "
    f"ADD COLUMN live_unique_key varchar(200) AS (IF(state IN {LIVE}, unique_key, NULL)) VIRTUAL, "
    "DROP INDEX mqlite_msg_claim, "
    "ADD INDEX mqlite_msg_claim (queue_id, state, blocked, claim_rank, seq), "
    "DROP INDEX mqlite_msg_due, ADD INDEX mqlite_msg_due (state, visible_at), "
    "DROP INDEX mqlite_msg_lease, ADD INDEX mqlite_msg_lease (state, locked_until), "
    "DROP INDEX mqlite_msg_owner, ADD INDEX mqlite_msg_owner (state, locked_by), "
    "DROP INDEX mqlite_msg_ttl, ADD INDEX mqlite_msg_ttl (state, expires_at), "
    "DROP INDEX mqlite_msg_results, "
    "ADD INDEX mqlite_msg_results (queue_id, state, completed_at), "
    "ADD UNIQUE INDEX mqlite_msg_unique (queue_id, live_unique_key), "
    "ADD INDEX mqlite_msg_unique_key (queue_id, unique_key)",
    "CREATE TRIGGER mqlite_count_enqueued AFTER INSERT ON mqlite_message FOR EACH ROW "
    f"INSERT INTO mqlite_totals (queue_id, shard, enqueued, {OTHERS}) "
    "VALUES (NEW.queue_id, MOD(CONNECTION_ID(), 8), 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) "
    "ON DUPLICATE KEY UPDATE enqueued = enqueued + 1",
    "CREATE TABLE mqlite_lock (id integer NOT NULL PRIMARY KEY) ENGINE=InnoDB",
    "INSERT INTO mqlite_lock (id) VALUES " + ", ".join(f"({i})" for i in range(LOCKS)),
]
DROP = [
    "DROP TABLE IF EXISTS mqlite_lock",
    "DROP TRIGGER IF EXISTS mqlite_count_enqueued",
    "ALTER TABLE mqlite_message "
    "DROP INDEX mqlite_msg_unique_key, DROP INDEX mqlite_msg_unique, "
    "DROP INDEX mqlite_msg_results, ADD INDEX mqlite_msg_results (queue_id, completed_at), "
    "DROP INDEX mqlite_msg_ttl, ADD INDEX mqlite_msg_ttl (expires_at), "
    "DROP INDEX mqlite_msg_owner, ADD INDEX mqlite_msg_owner (locked_by), "
    "DROP INDEX mqlite_msg_lease, ADD INDEX mqlite_msg_lease (locked_until), "
    "DROP INDEX mqlite_msg_due, ADD INDEX mqlite_msg_due (visible_at), "
    "DROP INDEX mqlite_msg_claim, "
    "ADD INDEX mqlite_msg_claim (queue_id, priority DESC, seq), "
    "DROP COLUMN live_unique_key, DROP COLUMN claim_rank",
]


def _is_mariadb(schema_editor):  # type: ignore[no-untyped-def]
    conn = schema_editor.connection
    return conn.vendor == "mysql" and conn.mysql_is_mariadb


def create(apps, schema_editor):  # type: ignore[no-untyped-def]
    if _is_mariadb(schema_editor):
        for sql in CREATE:
            schema_editor.execute(sql, params=None)


def drop(apps, schema_editor):  # type: ignore[no-untyped-def]
    if _is_mariadb(schema_editor):
        for sql in DROP:
            schema_editor.execute(sql, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("django_mqlite", "0016_task_control"),
    ]

    # DDL on MariaDB commits as it goes: no transaction around it.
    atomic = False
    operations = [migrations.RunPython(create, drop, atomic=False)]
