from django.urls import path  # noqa: F401

# HTML pages of this app, mounted by config/urls.py.
urlpatterns: list = []

# API endpoints of this app, mounted under /api/ by config/urls.py.
api_urlpatterns: list = []
