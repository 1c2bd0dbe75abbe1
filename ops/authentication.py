"""Desk API tokens (DRF's authtoken rows) expire: a token is good for API_TOKEN_TTL_DAYS from
when it was issued, 0 meaning until it is deleted. An expired token is deleted when it is
next shown, and answered as an invalid one is; POST /api/auth/token/ then issues a new one.
(A password change or a deactivation deletes a user's tokens: ops/credentials.py.)"""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from rest_framework.authentication import TokenAuthentication, get_authorization_header
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed

from agent.mcp_tokens import is_mcp_key

TOKEN_EXPIRED = "The token has expired; get a new one from POST /api/auth/token/."
MCP_TOKEN_REFUSED = (
    "This is an MCP token: it works only at /mcp, for the desk's MCP tools. The REST API takes "
    "a desk API token from POST /api/auth/token/."
)


def api_token_expired(token: Token) -> bool:
    days = settings.API_TOKEN_TTL_DAYS
    return days > 0 and token.created <= timezone.now() - timedelta(days=days)


@transaction.atomic
def api_token_issue(*, user: User) -> Token:
    """The user's token: the one they hold, or a new one when they hold none or it expired."""
    token = Token.objects.filter(user=user).first()
    if token is not None and api_token_expired(token):
        token.delete()
    # get_or_create: two sign-ins at once both end up with the one token the user may hold.
    token, _ = Token.objects.get_or_create(user=user)
    return token


class ExpiringTokenAuthentication(TokenAuthentication):
    """DRF's `Authorization: Token <key>`, refusing (401) and deleting an expired token, and
    refusing (401) an MCP token however it is sent (DESIGN §17)."""

    def authenticate(self, request):
        keyword, _, key = get_authorization_header(request).decode(errors="replace").partition(" ")
        if keyword.lower() in ("token", "bearer") and is_mcp_key(key.strip()):
            raise AuthenticationFailed(MCP_TOKEN_REFUSED, code="mcp_token_refused")
        return super().authenticate(request)

    def authenticate_credentials(self, key):
        user, token = super().authenticate_credentials(key)
        if api_token_expired(token):
            token.delete()
            raise AuthenticationFailed(TOKEN_EXPIRED)
        return user, token
