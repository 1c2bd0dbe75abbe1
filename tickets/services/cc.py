"""Who is copied on a ticket's public replies (DESIGN §15): which addresses may be (valid,
distinct as DESIGN invariant 11 says, never the customer's own, at most CC_MAX), an agent
replacing the list, and inbound mail's CC joining it."""

from django.contrib.auth.models import User
from django.db import transaction

from config.errors import ApplicationError
from config.roles import Role, support_role
from orders.addresses import BadAddress, at_a_host_not_a_domain, email_key, host_refusal
from orders.models import Customer
from tickets.models import Ticket, TicketEvent
from tickets.services.shared import _event, _require, _touch

CC_MAX = 10


def clean_cc(
    addresses: list[str], *, customer: Customer | None = None, truncate: bool = False
) -> list[str]:
    """Valid, distinct addresses (equal as DESIGN invariant 11 says), the customer's own left
    out (they get the reply anyway). ApplicationError naming the first bad one, or for more
    than CC_MAX unless `truncate` (inbound mail: the first CC_MAX are kept). An address at an
    IP or a bare host name is refused, or with `truncate` left out: a sender's CC line is not
    a reason to refuse their email."""
    from django.core.exceptions import ValidationError
    from django.core.validators import validate_email

    kept: dict[str, str] = {}
    for address in addresses:
        address = address.strip()
        if at_a_host_not_a_domain(address):
            if truncate:
                continue
            raise ApplicationError(
                host_refusal(address),
                code="invalid_address",
                extra={"fields": {"cc": [host_refusal(address)]}},
            )
        try:
            validate_email(address)
            key = email_key(address)
        except (ValidationError, BadAddress):
            raise ApplicationError(
                f"{address[:100]!r} is not an email address.",
                code="invalid_address",
                extra={"fields": {"cc": [f"Not an email address: {address[:100]}"]}},
            ) from None
        if customer is not None and key == customer.email_key:
            continue
        kept.setdefault(key, address)
    if len(kept) > CC_MAX and not truncate:
        raise ApplicationError(
            f"At most {CC_MAX} addresses in CC.",
            code="invalid",
            extra={"fields": {"cc": [f"At most {CC_MAX} addresses."]}},
        )
    return list(kept.values())[:CC_MAX]


@transaction.atomic
def ticket_set_cc(*, ticket: Ticket, cc: list[str], actor: User) -> Ticket:
    """Replace the CC list: who is copied on the public replies from now on."""
    _require(
        support_role(actor) in (Role.AGENT, Role.SUPERVISOR),
        "Only agents and supervisors change who is copied on replies.",
    )
    current = Ticket.objects.select_for_update().select_related("customer").get(pk=ticket.pk)
    cc = clean_cc(cc, customer=current.customer)
    if cc == list(current.cc):
        return ticket
    _touch(ticket, cc=cc)
    _event(ticket, TicketEvent.Type.CC_CHANGED, actor, **{"from": current.cc, "to": cc})
    return ticket


def _add_cc(ticket: Ticket, addresses: list[str]) -> None:
    """Inbound mail's CC joins the ticket's (nobody is dropped by a later email)."""
    if not addresses:
        return
    current = Ticket.objects.select_related("customer").get(pk=ticket.pk)
    merged = clean_cc([*current.cc, *addresses], customer=current.customer, truncate=True)
    if merged != list(current.cc):
        _touch(ticket, cc=merged)
