from django.apps import AppConfig


class RecorderConfig(AppConfig):
    name = "tests.workerproject.recorder"
    label = "recorder"
