from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("mq/", include("django_mqlite.api.urls")),
    path("sqs", include("django_mqlite.sqs.urls")),
]
