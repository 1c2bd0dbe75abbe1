"""Reads for the reviewer queue, the refund API and admin."""

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db.models import Count, Model, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.http import Http404
from django.utils import timezone

from orders.models import Order
from orders.selectors import OrderSummary, order_summary
from policies.models import Clause
from refunds.models import RefundConfirmation, RefundEvent, RefundRequest
from tickets.models import Attachment, TicketMessage

# The customer's latest messages a reviewer reads before deciding; the ticket holds the rest.
CUSTOMER_WORDS_SHOWN = 5
# Past this many files the ticket page lists them all; the review shows the latest.
CUSTOMER_FILES_SHOWN = 12
# Raster images the browser shows as they are (never SVG: it can carry script).
THUMBNAIL_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def refund_list(*, status: str = "", reason: str = "", query: str = "") -> QuerySet[RefundRequest]:
    """Refund requests, oldest first: the order in which reviewers should work them."""
    refunds = RefundRequest.objects.select_related(
        "order__customer", "ticket", "requested_by", "run"
    ).prefetch_related(
        Prefetch(
            "confirmations",
            queryset=RefundConfirmation.objects.select_related("decided_by", "proposed_by"),
        )
    )
    if status:
        refunds = refunds.filter(status=status)
    if reason:
        refunds = refunds.filter(reason=reason)
    if query:
        refunds = refunds.filter(
            Q(request_id__icontains=query)
            | Q(order__order_id__icontains=query)
            | Q(order__customer__name__icontains=query)
            | Q(order__customer__email__icontains=query)
            | Q(ticket__reference__icontains=query)
        )
    return refunds.order_by("created_at", "id")


def order_refund_requests(*, order: Order) -> QuerySet[RefundRequest]:
    """Every request on `order`, oldest first, with its confirmations."""
    return (
        RefundRequest.objects.filter(order=order)
        .prefetch_related("confirmations")
        .order_by("created_at", "id")
    )


def refund_status_counts() -> dict[str, int]:
    """How many requests are in each status, every status present (zero when none)."""
    counts = dict(RefundRequest.objects.values_list("status").annotate(n=Count("id")))
    return {status: counts.get(status, 0) for status in RefundRequest.Status.values}


def refund_get(*, request_id: str) -> RefundRequest:
    """One request with what its page or API body needs. Raises Http404 when there is none:
    its callers are views, which answer that as 404."""
    try:
        return refund_list().get(request_id=request_id)
    except RefundRequest.DoesNotExist:
        raise Http404(f"No refund request {request_id}") from None


def current_confirmation(refund: RefundRequest) -> RefundConfirmation | None:
    """The pending version a reviewer may decide, if any (reads the prefetched rows)."""
    return next(
        (c for c in refund.confirmations.all() if c.status == RefundConfirmation.Status.PENDING),
        None,
    )


@dataclass(frozen=True)
class Verdict:
    clause: str
    outcome: str
    detail: str
    title: str
    text: str


@dataclass(frozen=True)
class ReviewView:
    """Everything a reviewer needs to decide one request (DESIGN §8)."""

    refund: RefundRequest
    order: OrderSummary
    confirmation: RefundConfirmation | None
    confirmation_expired: bool
    confirmations: list[RefundConfirmation]
    events: list[RefundEvent]
    verdicts: list[Verdict]
    tool_calls: Sequence[Model]  # the proposing run's agent ToolCallLog rows, oldest first
    untrusted_warning: bool
    # The agent McpSession the calls came from when an MCP host proposed it, not a run.
    mcp_session: Model | None = None
    # What the customer wrote on the request's ticket (untrusted text), oldest of them first.
    customer_messages: Sequence[TicketMessage] = ()
    # What the proposer's own words said for the version under review: {"words", "flags"}.
    requester_note: dict = field(default_factory=dict)
    # The files the customer sent on the request's ticket (photos of the damage, receipts).
    customer_files: Sequence[Attachment] = ()


def refund_review(*, refund: RefundRequest) -> ReviewView:
    clauses = {}
    if refund.policy_version_id is not None:
        clauses = {c.ref: c for c in Clause.objects.filter(policy_version=refund.policy_version_id)}
    verdicts = []
    for verdict in refund.policy_evaluation or []:
        clause = clauses.get(verdict.get("clause"))
        verdicts.append(
            Verdict(
                clause=verdict.get("clause", ""),
                outcome=verdict.get("outcome", ""),
                detail=verdict.get("detail", ""),
                title=clause.title if clause else "",
                text=clause.text if clause else "",
            )
        )
    run = refund.run
    # A version proposed outside a run, by an MCP host, shows the trail of the request's first
    # proposing call: that call's MCP session, or the run it came from.
    call = refund.tool_call
    mcp_session = call.mcp_session if run is None and call is not None else None
    trail = run or mcp_session or (call.run if call is not None else None)
    tool_calls = list(trail.tool_calls.order_by("created_at", "id")) if trail is not None else []
    confirmation = current_confirmation(refund)
    confirmations = list(refund.confirmations.all())
    return ReviewView(
        refund=refund,
        order=order_summary(refund.order),
        confirmation=confirmation,
        confirmation_expired=bool(confirmation and confirmation.expires_at <= timezone.now()),
        confirmations=confirmations,
        events=list(refund.events.select_related("actor").order_by("created_at", "id")),
        verdicts=verdicts,
        tool_calls=tool_calls,
        untrusted_warning=bool(run is not None and run.untrusted_instructions),
        mcp_session=mcp_session,
        customer_messages=customer_words(refund=refund),
        customer_files=customer_files(refund=refund),
        requester_note=_note_of(confirmation, confirmations),
    )


def _note_of(current: RefundConfirmation | None, confirmations: list[RefundConfirmation]) -> dict:
    """The requester's note of the version under review: the pending one, else the latest."""
    shown = current or (confirmations[-1] if confirmations else None)
    return (shown.requester_note if shown is not None else None) or {}


def customer_words(*, refund: RefundRequest) -> list[TicketMessage]:
    """The latest messages the customer wrote on the request's ticket, oldest first: what they
    actually asked for, to hold the proposal against."""
    if refund.ticket_id is None:
        return []
    latest = TicketMessage.objects.filter(
        ticket_id=refund.ticket_id, author_kind=TicketMessage.AuthorKind.CUSTOMER
    ).order_by("-created_at", "-id")[:CUSTOMER_WORDS_SHOWN]
    return list(reversed(latest))


def customer_files(*, refund: RefundRequest) -> list[Attachment]:
    """The files the customer sent on the request's ticket, oldest first: the evidence beside
    their words."""
    if refund.ticket_id is None:
        return []
    latest = Attachment.objects.filter(
        message__ticket_id=refund.ticket_id,
        message__author_kind=TicketMessage.AuthorKind.CUSTOMER,
    ).order_by("-created_at", "-id")[:CUSTOMER_FILES_SHOWN]
    return list(reversed(latest))


def with_latest_refund_status(tickets: QuerySet) -> QuerySet:
    """Annotate each ticket with its newest refund request's status (`latest_refund_status`,
    None when it has none): one subquery, however long the list."""
    newest = RefundRequest.objects.filter(ticket=OuterRef("pk")).order_by("-created_at", "-id")
    return tickets.annotate(latest_refund_status=Subquery(newest.values("status")[:1]))
