from django.contrib import admin
from django.urls import path
from shop.views import checkout

urlpatterns = [
    path("admin/", admin.site.urls),
    path("checkout/", checkout, name="checkout"),
]
