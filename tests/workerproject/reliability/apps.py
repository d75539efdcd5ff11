from django.apps import AppConfig


class ReliabilityConfig(AppConfig):
    name = "tests.workerproject.reliability"
    label = "reliability"
