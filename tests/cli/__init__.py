"""Tests of django_mqlite.cli: manage.py mqlite SUBCOMMAND."""
