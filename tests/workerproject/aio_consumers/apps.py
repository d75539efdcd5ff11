from django.apps import AppConfig


class AioConsumersConfig(AppConfig):
    name = "tests.workerproject.aio_consumers"
    label = "aio_consumers"
