"""A URLconf for tests: the project's, plus an API view and a middleware that crash."""

from django.urls import path

from config import urls as project

handler404 = project.handler404
handler500 = project.handler500

CRASH_MESSAGE = "boom in /work/main SELECT * FROM auth_user"


def crash(request):
    raise RuntimeError(CRASH_MESSAGE)


class CrashUnderApi:
    """Crashes on /api/crash-in-middleware/, before any view runs."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path == "/api/crash-in-middleware/":
            raise RuntimeError(CRASH_MESSAGE)
        return self.get_response(request)


urlpatterns = [path("api/crash/", crash), *project.urlpatterns]
