"""CI must exercise the real services: with REQUIRE_SERVICES=1 these fail if one is missing."""

import redis
from django.conf import settings
from django.db import connection

from tests import services


def test_postgres_is_the_database(db):
    services.require_postgres()
    with connection.cursor() as cursor:
        cursor.execute("select 1")
        assert cursor.fetchone() == (1,)


def test_redis_is_the_broker():
    services.require_redis()
    assert settings.CELERY_BROKER_URL.startswith("redis://")
    assert redis.Redis.from_url(settings.REDIS_URL, socket_timeout=3).ping() is True


def test_chromium_is_installed():
    services.require_chromium()
