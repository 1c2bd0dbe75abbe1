"""Desk API tokens (ops.models.ApiToken): a key of 160 random bits, shown once by POST
/api/auth/token/ and kept only as its SHA-256, as MCP tokens are (agent/mcp_tokens.py). A
database read, a backup or a leaked dump holds no key anyone can send; a key lost is a
sign-in again. A token is good for API_TOKEN_TTL_DAYS from when it was issued, 0 meaning until
it is deleted; an expired one is deleted when it is next shown, and answered as an invalid one
is. (A password change or a deactivation deletes a user's tokens: ops/credentials.py.)"""

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from rest_framework.authentication import TokenAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed

from agent.mcp_tokens import is_mcp_key
from ops.models import ApiToken

KEY_BYTES = 20  # 40 hex digits, as DRF's own tokens read: never "mcp_…"
KEY_HINT_CHARS = 6
TOKEN_INVALID = "Invalid token."
TOKEN_EXPIRED = "The token has expired; get a new one from POST /api/auth/token/."
MCP_TOKEN_REFUSED = (
    "This is an MCP token: it works only at /mcp, for the desk's MCP tools. The REST API takes "
    "a desk API token from POST /api/auth/token/."
)


@dataclass(frozen=True)
class IssuedApiToken:
    token: ApiToken
    # Shown once, to whoever signed in; never stored.
    key: str


def api_key_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def api_token_expired(token: ApiToken) -> bool:
    days = settings.API_TOKEN_TTL_DAYS
    return days > 0 and token.created_at <= timezone.now() - timedelta(days=days)


def api_token_for_key(key: str) -> ApiToken | None:
    """The token whose key this is, expired or not."""
    return ApiToken.objects.select_related("user").filter(key_digest=api_key_digest(key)).first()


@transaction.atomic
def api_token_issue(*, user: User) -> IssuedApiToken:
    """A new token for `user`, its key to show once. A stored key cannot be shown again, so
    every sign-in gets a token of its own; the user's expired ones go now."""
    cutoff = timezone.now() - timedelta(days=settings.API_TOKEN_TTL_DAYS)
    if settings.API_TOKEN_TTL_DAYS > 0:
        ApiToken.objects.filter(user=user, created_at__lte=cutoff).delete()
    key = secrets.token_hex(KEY_BYTES)
    token = ApiToken.objects.create(
        user=user, key_digest=api_key_digest(key), key_hint=key[:KEY_HINT_CHARS]
    )
    return IssuedApiToken(token=token, key=key)


class ExpiringTokenAuthentication(TokenAuthentication):
    """DRF's `Authorization: Token <key>`, the key looked up by its digest; refusing (401) and
    deleting an expired token, and refusing (401) an MCP token however it is sent (DESIGN
    §17)."""

    def authenticate(self, request):
        keyword, _, key = get_authorization_header(request).decode(errors="replace").partition(" ")
        if keyword.lower() in ("token", "bearer") and is_mcp_key(key.strip()):
            raise AuthenticationFailed(MCP_TOKEN_REFUSED, code="mcp_token_refused")
        return super().authenticate(request)

    def authenticate_credentials(self, key):
        token = api_token_for_key(key)
        if token is None:
            raise AuthenticationFailed(TOKEN_INVALID)
        if not token.user.is_active:
            raise AuthenticationFailed("User inactive or deleted.")
        if api_token_expired(token):
            token.delete()
            raise AuthenticationFailed(TOKEN_EXPIRED)
        return token.user, token
