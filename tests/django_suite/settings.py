"""The test settings, with Django's default TASKS (one backend, queue "default") pointed at
the stand-in for ImmediateBackend, as Django's own test runner has it for ImmediateBackend."""

from tests.settings import *  # noqa: F403

TASKS = {"default": {"BACKEND": "tests.django_suite.backends.RunNowBackend"}}
