"""Tests of django_mqlite.worker: the worker runtime, runworker and runreaper."""
