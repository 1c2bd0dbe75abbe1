"""Who may open an MCP session, and on which ticket (DESIGN §12, §17).

A host authenticates with an MCP token (agent/mcp_tokens.py), never with the REST API's
tokens, and binds one ticket inside the token's scope: its ticket, or a ticket of its
customer. Everything here is decided before a session exists, and the token is checked
again on every later request. A refusal says what is wrong in words a person configuring a
host can act on, and carries the HTTP status the HTTP transport answers with; it never
repeats the token.
"""

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.utils import timezone

from agent.mcp_tokens import is_mcp_key, mcp_token_for_key, mcp_token_used
from agent.models import McpToken
from config.roles import support_role
from ops.authentication import api_token_for_key
from orders.models import Customer
from tickets.models import Ticket

HOW_TO_GET_ONE = (
    "An admin makes MCP tokens (admin, or manage.py mcp_token --user <username> "
    "--ticket <TCK-…> --days <N>)."
)

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
    token: McpToken


def token_from_header(authorization: str | None) -> str:
    """The key in `Authorization: Bearer <key>` (or `Token <key>`)."""
    if not authorization or not authorization.strip():
        raise SessionRefused(
            401,
            "token_missing",
            "No MCP token: send the header 'Authorization: Bearer <token>'. " + HOW_TO_GET_ONE,
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
            "No MCP token: set DESK_TOKEN in the server's environment. " + HOW_TO_GET_ONE,
        )
    return value


def authenticated_token(key: str) -> McpToken:
    """The MCP token whose key this is, if it may be used now: not a REST API token, not
    revoked, not expired, its user active."""
    if not is_mcp_key(key):
        if api_token_for_key(key) is not None:
            raise SessionRefused(
                401,
                "rest_token_refused",
                "This is a desk REST API token; /mcp takes only MCP tokens, each bound to one "
                "ticket or customer. " + HOW_TO_GET_ONE,
            )
        raise SessionRefused(401, "token_invalid", "The MCP token is not valid.")
    token = mcp_token_for_key(key)
    if token is None:
        raise SessionRefused(401, "token_invalid", "The MCP token is not valid.")
    if token.revoked_at is not None:
        raise SessionRefused(401, "token_revoked", "The MCP token was revoked. " + HOW_TO_GET_ONE)
    if token.expires_at <= timezone.now():
        raise SessionRefused(401, "token_expired", "The MCP token has expired. " + HOW_TO_GET_ONE)
    if not token.user.is_active:
        raise SessionRefused(
            401, "user_inactive", "The desk user this token belongs to is inactive."
        )
    mcp_token_used(token=token)
    return token


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


def session_scope(*, token: McpToken, ticket_reference: str | None, source: str) -> SessionScope:
    """What a session with `token` on that ticket is bound to, or why it may not start. A
    ticket token names its ticket by itself; a customer token needs one of theirs named."""
    role = desk_role(token.user)
    if token.ticket is not None and not (ticket_reference or "").strip():
        ticket_reference = token.ticket.reference
    ticket = bound_ticket(ticket_reference, source=source)
    if not token_reaches(token, ticket):
        scope = (
            f"ticket {token.ticket.reference}"
            if token.ticket is not None
            else f"the tickets of customer {token.customer_id}"
        )
        raise SessionRefused(
            403,
            "out_of_scope",
            f"This MCP token reaches {scope}, not {ticket.reference}. Ask for a token for "
            f"{ticket.reference}.",
        )
    return SessionScope(
        user=token.user, role=role, ticket=ticket, customer=ticket.customer, token=token
    )


def token_reaches(token: McpToken, ticket: Ticket) -> bool:
    if token.ticket_id is not None:
        return ticket.pk == token.ticket_id
    return ticket.customer_id == token.customer_id
