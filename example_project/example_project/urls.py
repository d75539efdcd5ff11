from django.contrib import admin
from django.urls import include, path
from shop.views import checkout

urlpatterns = [
    path("admin/", admin.site.urls),
    path("checkout/", checkout, name="checkout"),
    path("mq/", include("django_mqlite.api.urls")),
]
