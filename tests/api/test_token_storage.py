"""REST API tokens are stored as MCP tokens are: only the SHA-256 of a 160-bit key, shown once
by POST /api/auth/token/ (issue 43, finding 5). What a database read gives cannot
authenticate; the key still does; tokens DRF's authtoken kept in plain form are hashed by a
migration and keep working; the admin shows no usable secret."""

import hashlib
import importlib
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.db import connection
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from ops.authentication import api_key_digest
from ops.models import ApiToken
from tests.api.conftest import PASSWORD, user

pytestmark = pytest.mark.django_db

legacy_migration = importlib.import_module("ops.migrations.0002_hash_legacy_api_tokens")


def sign_in(username: str = "agent"):
    return APIClient().post(
        "/api/auth/token/", {"username": username, "password": PASSWORD}, format="json"
    )


def tickets_with(key: str) -> int:
    return APIClient().get("/api/tickets/", HTTP_AUTHORIZATION=f"Token {key}").status_code


def test_the_database_keeps_only_a_digest_of_the_key_it_answered(demo):
    response = sign_in()

    assert response.status_code == 200
    assert list(response.json()) == ["token"]
    key = response.json()["token"]
    assert len(key) == 40 and int(key, 16) >= 0
    (row,) = ApiToken.objects.values()
    assert row["key_digest"] == hashlib.sha256(key.encode()).hexdigest()
    assert row["key_hint"] == key[:6]
    assert key not in {str(value) for value in row.values()}
    assert tickets_with(key) == 200


def test_what_a_stolen_row_holds_does_not_authenticate(demo):
    key = sign_in().json()["token"]
    token = ApiToken.objects.get()

    answers = [tickets_with(value) for value in (token.key_digest, token.key_hint, str(token.pk))]

    assert answers == [401, 401, 401]
    assert tickets_with(key) == 200


def test_an_expired_token_and_one_of_a_changed_password_are_refused(demo, settings):
    settings.API_TOKEN_TTL_DAYS = 30
    expiring, revoked = sign_in("agent").json()["token"], sign_in("agent2").json()["token"]
    ApiToken.objects.filter(user__username="agent").update(
        created_at=timezone.now() - timedelta(days=31)
    )
    agent2 = user("agent2")
    agent2.set_password("a-new-password-456")
    agent2.save()

    assert (tickets_with(expiring), tickets_with(revoked)) == (401, 401)
    assert not ApiToken.objects.exists()


def test_the_migration_hashes_plain_legacy_tokens_which_keep_working(demo):
    # Given DRF's authtoken table with a plain key, as a desk upgraded from it has
    key = "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"
    issued = timezone.now() - timedelta(days=3)
    with connection.cursor() as cursor:
        cursor.execute(
            'CREATE TABLE "authtoken_token" ("key" varchar(40) PRIMARY KEY, '
            '"created" timestamp with time zone NOT NULL, "user_id" integer NOT NULL)'
            if connection.vendor == "postgresql"
            else 'CREATE TABLE "authtoken_token" ("key" varchar(40) PRIMARY KEY, '
            '"created" datetime NOT NULL, "user_id" integer NOT NULL)'
        )
        cursor.execute(
            'INSERT INTO "authtoken_token" ("key", "created", "user_id") VALUES (%s, %s, %s)',
            [key, issued, user("agent").pk],
        )

    # When the migration runs (it uses only the schema editor's connection)
    legacy_migration.hash_legacy_tokens(apps, SimpleNamespace(connection=connection))

    # Then the key is kept only as its digest, with its issue time, and still signs in
    with connection.cursor() as cursor:
        cursor.execute('SELECT COUNT(*) FROM "authtoken_token"')
        assert cursor.fetchone() == (0,)
    token = ApiToken.objects.get()
    assert (token.key_digest, token.user.username) == (api_key_digest(key), "agent")
    assert abs(token.created_at - issued) < timedelta(seconds=1)
    assert tickets_with(key) == 200


def test_the_admin_shows_who_holds_a_token_but_no_usable_secret(demo):
    key = sign_in().json()["token"]
    admin = Client()
    admin.force_login(user("admin"))
    token = ApiToken.objects.get()

    listing = admin.get("/admin/ops/apitoken/").content.decode()
    page = admin.get(f"/admin/ops/apitoken/{token.pk}/change/").content.decode()

    assert key[:6] in listing and "agent" in listing
    for shown in (listing, page):
        assert key not in shown
        assert token.key_digest not in shown
    assert admin.get("/admin/ops/apitoken/add/").status_code == 403
