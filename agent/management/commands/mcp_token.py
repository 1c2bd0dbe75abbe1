"""manage.py mcp_token --user U (--ticket REF | --customer ID) [--days N]: make an MCP token
and print it, once. manage.py mcp_token --revoke KEY|ID: revoke one (DESIGN §17)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from agent.mcp_tokens import (
    McpTokenRefused,
    is_mcp_key,
    mcp_token_for_key,
    mcp_token_issue,
    mcp_token_revoke,
)
from agent.models import McpToken
from orders.models import Customer
from tickets.models import Ticket

DEFAULT_DAYS = 30


class Command(BaseCommand):
    help = (
        "Make an MCP token for a desk user, bound to one ticket or one customer, printed once; "
        "or revoke one with --revoke."
    )

    def add_arguments(self, parser):
        parser.add_argument("--user", help="username of the desk user the token acts as")
        scope = parser.add_mutually_exclusive_group()
        scope.add_argument("--ticket", help="the one ticket the token reaches, e.g. TCK-1001")
        scope.add_argument("--customer", type=int, help="the customer id whose tickets it reaches")
        parser.add_argument(
            "--days", type=int, default=DEFAULT_DAYS, help=f"days it is good for ({DEFAULT_DAYS})"
        )
        parser.add_argument("--label", default="", help="a note: which host, whose machine")
        parser.add_argument(
            "--revoke", metavar="KEY_OR_ID", help="revoke the token with this key (or id)"
        )

    def handle(self, *args, **options):
        if options["revoke"]:
            self._revoke(options["revoke"])
            return
        if not options["user"] or not (options["ticket"] or options["customer"]):
            raise CommandError("Give --user and one of --ticket or --customer (or --revoke).")
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"There is no user {options['user']!r}.")
        ticket = customer = None
        if options["ticket"]:
            ticket = Ticket.objects.filter(reference=options["ticket"].strip().upper()).first()
            if ticket is None:
                raise CommandError(f"There is no ticket {options['ticket']!r}.")
        else:
            customer = Customer.objects.filter(pk=options["customer"]).first()
            if customer is None:
                raise CommandError(f"There is no customer {options['customer']}.")
        try:
            issued = mcp_token_issue(
                user=user,
                ticket=ticket,
                customer=customer,
                days=options["days"],
                label=options["label"],
            )
        except McpTokenRefused as refused:
            raise CommandError(str(refused)) from None
        token = issued.token
        scope = f"ticket {ticket.reference}" if ticket else f"customer {token.customer_id}"
        self.stderr.write(
            f"MCP token {token.pk} for {user.get_username()} on {scope}, expires "
            f"{token.expires_at.isoformat(timespec='seconds')}. It is shown only now:"
        )
        self.stdout.write(issued.key)

    def _revoke(self, value: str) -> None:
        value = value.strip()
        if is_mcp_key(value):
            token = mcp_token_for_key(value)
        elif value.isdigit():
            token = McpToken.objects.filter(pk=int(value)).first()
        else:
            token = None
        if token is None:
            raise CommandError("No MCP token has that key or id.")
        if mcp_token_revoke(token=token):
            self.stdout.write(f"MCP token {token.pk} ({token.key_hint}…) revoked.")
        else:
            self.stdout.write(f"MCP token {token.pk} ({token.key_hint}…) was revoked already.")
