"""DRF's authtoken rows kept each API token's key itself. Each becomes an ApiToken holding only
the key's SHA-256 (the key still works: it is hashed when sent), keeping its user and issue
time, and the plain row is deleted. The authtoken app is no longer installed: its table is
read with SQL, when it exists (a database made after this has none)."""

import hashlib
from datetime import UTC, datetime

from django.db import migrations
from django.utils.dateparse import parse_datetime

LEGACY_TABLE = "authtoken_token"


def hash_legacy_tokens(apps, schema_editor):
    connection = schema_editor.connection
    if LEGACY_TABLE not in connection.introspection.table_names():
        return
    ApiToken = apps.get_model("ops", "ApiToken")
    with connection.cursor() as cursor:
        # Standard SQL quoting, read alike by SQLite and PostgreSQL.
        cursor.execute('SELECT "key", "user_id", "created" FROM "authtoken_token"')
        rows = cursor.fetchall()
    for key, user_id, created in rows:
        token = ApiToken.objects.create(
            user_id=user_id,
            key_digest=hashlib.sha256(key.encode()).hexdigest(),
            key_hint=key[:6],
        )
        # auto_now_add stamped it now: it keeps the time it was issued, and so its expiry.
        ApiToken.objects.filter(pk=token.pk).update(created_at=_aware(created))
    with connection.cursor() as cursor:
        cursor.execute('DELETE FROM "authtoken_token"')


def _aware(created: datetime | str) -> datetime:
    """The issue time as the driver gives it: SQLite's is text, in UTC like PostgreSQL's."""
    if isinstance(created, str):
        created = parse_datetime(created) or datetime.now(UTC)
    return created if created.tzinfo is not None else created.replace(tzinfo=UTC)


class Migration(migrations.Migration):
    dependencies = [("ops", "0001_api_tokens")]

    operations = [
        # Not reversible in substance: the keys are gone; going back leaves no tokens.
        migrations.RunPython(hash_legacy_tokens, migrations.RunPython.noop),
    ]
