import json
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache

from django.contrib.auth.models import User
from django.db import connection
from django.db.models import (
    BooleanField,
    Case,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)

from config import refund_statuses
from config.db import column, table
from orders.models import Customer, Order
from orders.selectors import refundable_after
from tickets import sla
from tickets.attachments import describe_file
from tickets.models import (
    Attachment,
    Notification,
    Ticket,
    TicketChange,
    TicketEvent,
    TicketMessage,
)

# The desk list's views (tabs). "mine" needs the user asking.
VIEWS = ("all", "mine", "unassigned", "escalated")
# "due": the earliest running SLA target first, tickets with none running last.
SORTS = {"updated": "-updated_at", "created": "-created_at", "due": "due_at"}


def ticket_list(
    *,
    status: str = "",
    assignee: str = "",
    query: str = "",
    view: str = "all",
    user: User | None = None,
    sort: str = "updated",
    priority: str = "",
    sla_state: str = "",
    tag: str = "",
) -> QuerySet[Ticket]:
    """Tickets for the desk list. `assignee` is a username, "me" is resolved by the caller,
    "none" means unassigned. `query` matches the reference, subject, customer, order id, or
    words in any message (full-text search on PostgreSQL). `sla_state` is "breached" or
    "due_soon" (tickets/sla.py); `tag` a tag's name in any case."""
    tickets = Ticket.objects.select_related("customer", "assignee", "order", "merged_into")
    if view == "mine":
        tickets = tickets.filter(assignee=user)
    elif view == "unassigned":
        tickets = tickets.filter(assignee__isnull=True)
    elif view == "escalated":
        tickets = tickets.filter(escalated=True)
    if status:
        tickets = tickets.filter(status=status)
    if assignee == "none":
        tickets = tickets.filter(assignee__isnull=True)
    elif assignee:
        tickets = tickets.filter(assignee__username=assignee)
    if query:
        tickets = tickets.filter(pk__in=_tickets_matching(query))
    if priority:
        tickets = tickets.filter(priority=priority)
    if tag:
        tickets = tickets.filter(tags__name__iexact=tag)
    tickets = sla.filter_state(tickets, sla_state) if sla_state else sla.with_due(tickets)
    if sort == "due":
        return tickets.order_by(F("due_at").asc(nulls_last=True), "id")
    return tickets.order_by(SORTS.get(sort, SORTS["updated"]), "-id")


def _tickets_matching(query: str) -> QuerySet:
    """The ids of the tickets `query` finds, one lookup per place it may be found.

    A union rather than one OR across the joined tables: each part is answered from its own
    index on PostgreSQL (trigram indexes for the substrings, the full-text index for the
    messages; tickets/migrations/0005), so a search reads the matches, never every ticket.
    """
    by_ticket = Ticket.objects.filter(Q(reference__icontains=query) | Q(subject__icontains=query))
    customers = Customer.objects.filter(Q(name__icontains=query) | Q(email__icontains=query))
    by_customer = Ticket.objects.filter(customer__in=customers.values("pk"))
    by_order = Ticket.objects.filter(order__order_id__icontains=query)
    # Unordered: a union's parts may not be ordered (SQLite refuses), and need not be.
    return (
        by_ticket.values("pk")
        .order_by()
        .union(
            by_customer.values("pk").order_by(),
            by_order.values("pk").order_by(),
            _messages_matching(query).values("ticket_id").order_by(),
        )
    )


def _messages_matching(query: str) -> QuerySet[TicketMessage]:
    """Messages whose body matches `query`: PostgreSQL's full-text search (stemmed, so
    "crushing" finds "crushed"; web-search syntax: quotes, or, -not), a substring elsewhere.
    The search vector is the expression ticket_message_body_search_idx indexes."""
    if connection.vendor == "postgresql":
        from django.contrib.postgres.search import SearchQuery, SearchVector

        return TicketMessage.objects.annotate(
            document=SearchVector("body", config="english")
        ).filter(document=SearchQuery(query, config="english", search_type="websearch"))
    return TicketMessage.objects.filter(body__icontains=query)


def ticket_detail(*, reference: str) -> Ticket:
    return (
        Ticket.objects.select_related("customer", "assignee", "order", "merged_into")
        .prefetch_related(
            "messages__author", "messages__attachments", "order__lines", "events__actor", "tags"
        )
        .get(reference=reference)
    )


def ticket_events(ticket: Ticket) -> QuerySet[TicketEvent]:
    return ticket.events.select_related("actor").order_by("created_at", "id")


# --- one customer, everything the desk knows --------------------------------------------------


@dataclass(frozen=True)
class OrderBalance:
    order: Order
    refunded: Decimal
    refundable: Decimal


@dataclass(frozen=True)
class CustomerOverview:
    customer: Customer
    orders: list[OrderBalance]
    tickets: list[Ticket]
    refunds: list  # RefundRequest rows, newest first (the model lives in a higher layer)


def customer_overview(*, customer_id: int) -> CustomerOverview:
    """A customer's orders with what can still be refunded, their tickets and refund requests.
    A fixed number of queries however many orders: balances come from prefetched requests."""
    customer = Customer.objects.get(pk=customer_id)
    orders = list(
        customer.orders.prefetch_related("refund_requests__ticket").order_by("-placed_at", "-id")
    )
    balances, refunds = [], []
    for order in orders:
        requests = list(order.refund_requests.all())
        refunds.extend(requests)
        refunded = sum(
            (r.amount for r in requests if r.status in refund_statuses.COMMITTED), Decimal("0.00")
        )
        balances.append(OrderBalance(order, refunded, refundable_after(order, refunded)))
    refunds.sort(key=lambda r: r.created_at, reverse=True)
    tickets = list(
        customer.tickets.select_related("assignee", "order")
        .prefetch_related("tags")
        .order_by("-updated_at", "-id")
    )
    return CustomerOverview(customer, balances, tickets, refunds)


# A message of a ticket's thread as the assistant reads it: (author_kind, created_at, body).
ThreadMessage = tuple[str, datetime, str]


def ticket_thread(*, ticket_id: int) -> list[ThreadMessage]:
    """The ticket's messages, oldest first; each body followed by a line per file it carries
    (name, type and size: never the bytes, DESIGN §15). One query: ticket_thread_sql's."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {ticket_thread_sql('%s')}", [ticket_id])
        (value,) = cursor.fetchone()
    return ticket_thread_from_json(value)


@cache
def ticket_thread_sql(ticket_id: str) -> str:
    """An SQL expression for a query that reads a ticket anyway: its messages as one JSON
    array (in no order), which `ticket_thread_from_json` turns into `ticket_thread`'s list.
    `ticket_id` is the query's quoted column holding the ticket's id."""
    names = ("created_at", "id", "author_kind", "body")
    columns = ", ".join(column(TicketMessage, name, "m") for name in names)
    array, aggregate = (
        ("json_build_array", "json_agg")
        if connection.vendor == "postgresql"
        else ("json_array", "json_group_array")
    )
    file_columns = ", ".join(
        column(Attachment, name, "a") for name in ("id", "filename", "content_type", "size")
    )
    files = (
        f"(SELECT {aggregate}({array}({file_columns})) FROM {table(Attachment)} a"  # noqa: S608
        f" WHERE {column(Attachment, 'message', 'a')} = {column(TicketMessage, 'id', 'm')})"
    )
    # Names from the models' metadata, quoted; no values.
    return (
        f"(SELECT {aggregate}({array}({columns}, {files})) FROM {table(TicketMessage)} m"  # noqa: S608
        f" WHERE {column(TicketMessage, 'ticket', 'm')} = {ticket_id})"
    )


def ticket_thread_from_json(value: str | list | None) -> list[ThreadMessage]:
    """`ticket_thread`'s list from what `ticket_thread_sql` selected (PostgreSQL's driver
    decodes the JSON; SQLite's gives its text, with times in UTC without an offset, and each
    message's files as text of their own)."""
    rows = json.loads(value) if isinstance(value, str) else value or []
    ordered = sorted(
        (_utc(created_at), pk, kind, _with_files(body, files))
        for created_at, pk, kind, body, files in rows
    )
    return [(kind, created_at, body) for created_at, _, kind, body in ordered]


def _with_files(body: str, files: str | list | None) -> str:
    rows = json.loads(files) if isinstance(files, str) else files or []
    lines = [describe_file(name, kind, size) for _, name, kind, size in sorted(rows)]
    return "\n".join([body, *lines]) if lines else body


def _utc(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


# --- the live desk (DESIGN §14) ---------------------------------------------------------------


def ticket_changes(
    *, ticket_id: int, after: int = 0, limit: int | None = None
) -> list[TicketChange]:
    """The ticket's changes with a seq above `after`, in order (at most `limit`)."""
    changes = TicketChange.objects.filter(ticket_id=ticket_id, seq__gt=after).order_by("seq")
    return list(changes[:limit] if limit else changes)


def with_customer_waiting(tickets: QuerySet[Ticket]) -> QuerySet[Ticket]:
    """`tickets` annotated with `customer_waiting`: the ticket has an assignee, its latest
    public message is the customer's, and the assignee has not opened the ticket since
    ("customer replied" on the lists)."""
    latest_public = TicketMessage.objects.filter(
        ticket=OuterRef("pk"), visibility=TicketMessage.Visibility.PUBLIC
    ).order_by("-created_at", "-id")
    unseen = Q(assignee_seen_at__isnull=True) | Q(assignee_seen_at__lt=F("latest_public_at"))
    return tickets.annotate(
        latest_public_kind=Subquery(latest_public.values("author_kind")[:1]),
        latest_public_at=Subquery(latest_public.values("created_at")[:1]),
    ).annotate(
        customer_waiting=Case(
            When(
                Q(assignee__isnull=False, latest_public_kind=TicketMessage.AuthorKind.CUSTOMER)
                & unseen,
                then=Value(True),
            ),
            default=Value(False),
            output_field=BooleanField(),
        )
    )


def notifications_of(*, user: User, unread_only: bool = False) -> QuerySet[Notification]:
    """`user`'s notifications, newest first."""
    notifications = Notification.objects.filter(recipient=user).select_related("ticket", "actor")
    if unread_only:
        notifications = notifications.filter(read_at__isnull=True)
    return notifications.order_by("-created_at", "-id")


def unread_notification_count(*, user: User) -> int:
    return Notification.objects.filter(recipient=user, read_at__isnull=True).count()
