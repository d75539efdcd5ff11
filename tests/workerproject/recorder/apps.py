import os

from django.apps import AppConfig


class RecorderConfig(AppConfig):
    name = "tests.workerproject.recorder"
    label = "recorder"

    def ready(self) -> None:
        # A test of a wake-up (NOTIFY) slows the worker's fallback poll down to this many
        # seconds, so only the wake-up can make the worker react in time.
        poll_s = os.environ.get("MQLITE_TEST_IDLE_POLL_S")
        if poll_s:
            from django_mqlite.worker import runner

            runner.IDLE_MIN_S = runner.IDLE_MAX_S = runner.IDLE_MAX_LISTENING_S = float(poll_s)
