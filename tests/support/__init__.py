"""Helpers shared by test files: the concurrency oracle and thread harness
(``concurrency``), database-feature gates (``features``), a burst worker in this
process (``inprocess``), worker processes of the test project (``procs``,
``limits_child``), broken connections (``dbfaults``), the ``mqlite`` command in-process
(``cli_helpers``), the stats invariants (``invariants``), query plans (``plans``),
hostile messages for Hypothesis (``messages``), rows and properties written past
admission (``legacy_rows``) and the unique-key table reads (``unique_keys``). Imports
django_mqlite, ``django.db``, Hypothesis and the test settings; never a test module."""
