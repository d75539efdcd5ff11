"""Helpers shared by test files: the concurrency oracle and thread harness
(``concurrency``), database-feature gates (``features``). Imports only django_mqlite's
public package and its dialects."""
