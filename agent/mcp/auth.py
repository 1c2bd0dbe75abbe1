"""Who may open an MCP session, and on which ticket (DESIGN §12).

A host authenticates with a desk API token, the DRF `Token` rows the REST API reads, and binds
one ticket. Everything here is decided before a session exists. A refusal says what is wrong
in words a person configuring a host can act on, and carries the HTTP status the HTTP
transport answers with; it never repeats the token.
"""

from dataclasses import dataclass

from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

from config.roles import support_role
from ops.authentication import api_token_expired
from orders.models import Customer
from tickets.models import Ticket

TICKET_HEADER = "X-Desk-Ticket"
# Both spellings: "Bearer" is what MCP hosts send, "Token" what the desk's REST API documents.
TOKEN_KEYWORDS = ("bearer", "token")
# A reference is "TCK-" and digits; anything longer is not one, and is not echoed in full.
REFERENCE_SHOWN = 40


class SessionRefused(Exception):
    """An MCP session may not start, or may not go on."""

    def __init__(self, status: int, reason: str, message: str):
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class SessionScope:
    """Who acts and on whose data: what a session is bound to when it starts."""

    user: User
    role: str
    ticket: Ticket
    customer: Customer


def token_from_header(authorization: str | None) -> str:
    """The key in `Authorization: Bearer <key>` (or `Token <key>`)."""
    if not authorization or not authorization.strip():
        raise SessionRefused(
            401,
            "token_missing",
            "No desk API token: send the header 'Authorization: Bearer <token>'. A desk user "
            "gets a token from POST /api/auth/token/.",
        )
    keyword, _, key = authorization.strip().partition(" ")
    key = key.strip()
    if keyword.lower() not in TOKEN_KEYWORDS or not key or " " in key:
        raise SessionRefused(
            401,
            "token_malformed",
            "The Authorization header must read 'Bearer <token>' or 'Token <token>'.",
        )
    return key


def token_from_environment(value: str | None) -> str:
    """The key in DESK_TOKEN: the bare token, or the header's spelling of it."""
    value = (value or "").strip()
    if " " in value:
        return token_from_header(value)
    if not value:
        raise SessionRefused(
            401,
            "token_missing",
            "No desk API token: set DESK_TOKEN in the server's environment. A desk user gets "
            "a token from POST /api/auth/token/.",
        )
    return value


def authenticated_user(key: str) -> User:
    """The active user whose token `key` is, as the API's token authentication decides it
    (ops.authentication): an expired token is deleted."""
    token = Token.objects.select_related("user").filter(key=key).first()
    if token is None:
        raise SessionRefused(401, "token_invalid", "The desk API token is not valid.")
    if api_token_expired(token):
        token.delete()
        raise SessionRefused(
            401,
            "token_expired",
            "The desk API token has expired; get a new one from POST /api/auth/token/.",
        )
    if not token.user.is_active:
        raise SessionRefused(
            401, "user_inactive", "The desk user this token belongs to is inactive."
        )
    return token.user


def desk_role(user: User) -> str:
    """The role the user's tools act with; the same rule as starting an assistant run."""
    role = support_role(user)
    if role is None:
        raise SessionRefused(
            403,
            "no_support_role",
            f"Only interns, agents and supervisors may use the desk's tools; "
            f"{user.get_username()} is none of these.",
        )
    return role


def bound_ticket(reference: str | None, *, source: str = TICKET_HEADER) -> Ticket:
    """The ticket a session works on, named by `source` (a header or an environment
    variable)."""
    reference = (reference or "").strip()
    if not reference:
        raise SessionRefused(
            400,
            "ticket_missing",
            f"No ticket: a session works on one ticket, named by {source} (e.g. TCK-1001).",
        )
    ticket = (
        Ticket.objects.select_related("customer", "order")
        .filter(reference=reference.upper())
        .first()
    )
    if ticket is None:
        shown = reference[:REFERENCE_SHOWN]
        raise SessionRefused(404, "ticket_unknown", f"There is no ticket {shown!r} on the desk.")
    return ticket


def session_scope(*, user: User, ticket_reference: str | None, source: str) -> SessionScope:
    """What a session of `user` on that ticket is bound to, or why it may not start."""
    role = desk_role(user)
    ticket = bound_ticket(ticket_reference, source=source)
    return SessionScope(user=user, role=role, ticket=ticket, customer=ticket.customer)
