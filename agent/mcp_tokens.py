"""MCP tokens (DESIGN §17): made, found and revoked here, for the admin, `manage.py
mcp_token`, the MCP server that accepts them and the REST API that refuses them.

A key reads "mcp_" and 43 URL-safe characters (256 random bits). Only its sha256 is stored:
whoever reads the database cannot use a token, and a key lost is a key revoked and made anew.
"""

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from agent.models import McpToken
from config.roles import support_role
from orders.models import Customer
from tickets.models import Ticket

KEY_PREFIX = "mcp_"
KEY_HINT_CHARS = 10
MAX_DAYS = 365


class McpTokenRefused(Exception):
    """A token may not be made as asked."""


@dataclass(frozen=True)
class IssuedToken:
    token: McpToken
    # Shown once, to whoever made the token; never stored.
    key: str


def is_mcp_key(key: str) -> bool:
    return key.startswith(KEY_PREFIX)


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@transaction.atomic
def mcp_token_issue(
    *,
    user: User,
    ticket: Ticket | None = None,
    customer: Customer | None = None,
    days: int,
    created_by: User | None = None,
    label: str = "",
) -> IssuedToken:
    """A new token for `user` on one ticket or one customer, good for `days` days."""
    if (ticket is None) == (customer is None):
        raise McpTokenRefused("A token is bound to exactly one ticket or one customer.")
    if not 1 <= days <= MAX_DAYS:
        raise McpTokenRefused(f"A token lasts from 1 to {MAX_DAYS} days, not {days}.")
    check_token_holder(user)
    token = McpToken(
        user=user,
        ticket=ticket,
        customer=customer,
        label=label,
        created_by=created_by,
        expires_at=timezone.now() + timedelta(days=days),
    )
    key = with_new_key(token)
    token.save()
    return IssuedToken(token=token, key=key)


def check_token_holder(user: User) -> None:
    """McpTokenRefused unless `user` could open a session with a token: active, and in a role
    that has tools (what /mcp asks again when a session starts: agent.mcp.auth.desk_role). A
    token nobody can use is only a secret to leak."""
    if not user.is_active:
        raise McpTokenRefused(f"{user.get_username()} is inactive.")
    if support_role(user) is None:
        raise McpTokenRefused(
            f"{user.get_username()} has no role with tools (support intern, agent or "
            "supervisor), so /mcp would refuse every session with this token. Add the user "
            "to one of those groups first."
        )


def with_new_key(token: McpToken) -> str:
    """Give the unsaved `token` a new key; the key, to show once."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    token.key_digest = key_digest(key)
    token.key_hint = key[:KEY_HINT_CHARS]
    return key


def mcp_token_for_key(key: str) -> McpToken | None:
    """The token whose key this is, whatever its state (the caller decides what a revoked or
    expired one answers)."""
    return (
        McpToken.objects.select_related("user", "ticket", "customer")
        .filter(key_digest=key_digest(key))
        .first()
    )


def mcp_token_revoke(*, token: McpToken) -> bool:
    """Revoke `token`; False when it was revoked already. Sessions opened with it stop at
    their next request."""
    revoked = McpToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    return bool(revoked)


def mcp_token_used(*, token: McpToken) -> None:
    McpToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
