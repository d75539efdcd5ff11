"""The SQS endpoint mounted at the site root: ``path("", include(...))``."""

from django.urls import include, path

urlpatterns = [path("", include("django_mqlite.sqs.urls"))]
