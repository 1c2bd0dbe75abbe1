"""The support desk's pages: the ticket list, a ticket (conversation, reply box, status,
assignment, escalation), a new ticket, a customer. Every change goes through tickets.services,
which checks the role; a refusal is shown on the page with what was typed kept."""

from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from agent.answer_check import contradicted_claims
from agent.runtime.run_answer import answers_since
from config.errors import ApplicationError
from config.refund_statuses import RefundStatus
from config.roles import Role, is_staff_member, is_supervisor, support_role, support_users
from desk import list_page, macros
from orders.addresses import BadAddress, email_key
from orders.models import Customer, Order
from orders.selectors import order_summary
from refunds import services as refund_services
from refunds.models import RefundRequest
from refunds.selectors import with_latest_refund_status
from tickets import attachments, changes, people, satisfaction, selectors, services, sla
from tickets.models import Macro, Ticket, TicketEvent, TicketMessage
from tickets.services import TICKET_ALLOWED, ClaimsContradictState

PAGE_SIZE = 25

LIST_VIEWS = [
    ("all", "All"),
    ("mine", "My tickets"),
    ("unassigned", "Unassigned"),
    ("escalated", "Escalated"),
]
LIST_SORTS = [("updated", "Last updated"), ("created", "Created"), ("due", "SLA due")]
# Left out of the list's links: a link with only the defaults is the plain list.
LIST_DEFAULTS = {"view": "all", "sort": "updated"}

AGENT_ROLES = (Role.AGENT, Role.SUPERVISOR)
# The list's satisfaction figures count the ratings of this many days.
SATISFACTION_DAYS = 30


def _require_staff(user) -> None:
    if not is_staff_member(user):
        raise PermissionDenied("Only desk staff (support and reviewers) can see tickets.")


def _ticket(reference: str) -> Ticket:
    try:
        return selectors.ticket_detail(reference=reference)
    except Ticket.DoesNotExist:
        raise Http404(f"No ticket {reference}") from None


# --- the list ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ListRow:
    ticket: Ticket
    refund_status: str  # the newest refund request's status, "" when there is none
    refund_words: str
    sla: str | None  # tickets/sla.py sla_state: the badge
    assignee_name: str = ""  # the assignee's display name (tickets/people.py)


def _list_filters(params) -> dict[str, str]:
    """The list's filters from the query string, anything unknown replaced by its default."""
    view = params.get("view", "all")
    status = params.get("status", "")
    sort = params.get("sort", "updated")
    return {
        "view": view if view in selectors.VIEWS else "all",
        "status": status if status in Ticket.Status.values else "",
        "assignee": params.get("assignee", "").strip(),
        "q": params.get("q", "").strip(),
        "sort": sort if sort in selectors.SORTS else "updated",
        "priority": _one_of(params, "priority", Ticket.Priority.values),
        "sla": _one_of(params, "sla", sla.SLA_STATES),
        "tag": params.get("tag", "").strip(),
    }


def _one_of(params, name: str, allowed) -> str:
    value = params.get(name, "")
    return value if value in allowed else ""


def _list_query(filters: dict[str, str], **changes: str) -> str:
    """The list's query string for these filters (defaults and blanks left out)."""
    merged = {**filters, **changes}
    return urlencode(
        {key: value for key, value in merged.items() if value and value != LIST_DEFAULTS.get(key)}
    )


@login_required
def ticket_list(request):
    _require_staff(request.user)
    filters = _list_filters(request.GET)
    assignee = filters["assignee"]
    tickets = selectors.ticket_list(
        view=filters["view"],
        user=request.user,
        status=filters["status"],
        assignee=request.user.username if assignee == "me" else assignee,
        query=filters["q"],
        sort=filters["sort"],
        priority=filters["priority"],
        sla_state=filters["sla"],
        tag=filters["tag"],
    )
    paginator = Paginator(
        selectors.with_customer_waiting(with_latest_refund_status(tickets)).prefetch_related(
            "tags"
        ),
        PAGE_SIZE,
    )
    page = paginator.get_page(request.GET.get("page"))
    rows = []
    tickets_here = list(page.object_list)
    names = people.display_names(ticket.assignee for ticket in tickets_here)
    for ticket in tickets_here:
        refund_status = getattr(ticket, "latest_refund_status", None) or ""
        rows.append(
            ListRow(
                ticket,
                refund_status,
                _refund_words(refund_status),
                sla.sla_state(ticket),
                names.get(ticket.assignee_id or 0, ""),
            )
        )
    query = _list_query(filters)
    escalated_count = Ticket.objects.filter(escalated=True).count()
    # Exists, not a join: a join would read every assigned ticket to find a handful of users.
    assignees = get_user_model().objects.filter(
        Exists(Ticket.objects.filter(assignee=OuterRef("pk")))
    )
    return render(
        request,
        "tickets/list.html",
        {
            "page": page,
            "rows": rows,
            "tabs": [
                {
                    "view": view,
                    "label": label,
                    # A tab keeps the search, status, assignee and sort; it starts at page one.
                    "query": _list_query(filters, view=view),
                    "current": view == filters["view"],
                    "count": escalated_count if view == "escalated" else None,
                }
                for view, label in LIST_VIEWS
            ],
            "sorts": LIST_SORTS,
            "statuses": Ticket.Status.choices,
            "assignees": list_page.by_name(assignees.order_by("username")),
            "filters": filters,
            "priorities": Ticket.Priority.choices,
            "sla_states": [("breached", "Breached"), ("due_soon", "Due soon")],
            "filtered": any(
                filters[key] for key in ("status", "assignee", "q", "priority", "sla", "tag")
            ),
            # Pagination links are this prefix plus page=N: every filter is kept.
            "page_link_prefix": f"?{query}&" if query else "?",
            "can_open_tickets": support_role(request.user) is not None,
            "satisfaction": _satisfaction_figures(request.user),
            "bulk": list_page.bulk_actions(request.user),
            "saved": list_page.saved_view_links(request.user, query),
        },
    )


def _satisfaction_figures(user) -> dict:
    """The ratings of the last SATISFACTION_DAYS: of the user's solves, and of the team's."""
    since = timezone.now() - timedelta(days=SATISFACTION_DAYS)
    return {
        "days": SATISFACTION_DAYS,
        "mine": satisfaction.score(since=since, agent=user),
        "team": satisfaction.score(since=since),
    }


def _refund_words(status: str) -> str:
    """The status as every page says it: its label in config/refund_statuses.py."""
    return RefundStatus(status).label if status else ""


# --- one ticket ----------------------------------------------------------------------------


def _status_actions(ticket: Ticket) -> list[tuple[str, str]]:
    """The buttons for the statuses the ticket may move to next, in the state machine's order."""
    labels: dict[str, str] = {
        Ticket.Status.OPEN: "Reopen" if ticket.status == Ticket.Status.SOLVED else "Mark open",
        Ticket.Status.PENDING: "Mark pending",
        Ticket.Status.SOLVED: "Mark solved",
        Ticket.Status.CLOSED: "Close",
    }
    allowed = TICKET_ALLOWED[ticket.status]
    return [(value, labels[value]) for value in Ticket.Status.values if value in allowed]


def _public_reply_refusal(role: str | None, ticket: Ticket) -> str:
    """Why this user may not write to the customer on this ticket ("" when they may)."""
    if role == Role.INTERN:
        return "Interns write internal notes; an agent or supervisor sends replies to the customer."
    if role not in AGENT_ROLES:
        return "Only agents and supervisors write to the customer."
    if ticket.status == Ticket.Status.CLOSED:
        return "This ticket is closed: open a new ticket to write to the customer."
    return ""


@dataclass(frozen=True)
class HistoryRow:
    event: TicketEvent
    detail: str
    who: str  # a desk user, the customer, or the desk itself


def _who(event: TicketEvent, customer_name: str) -> str:
    """Who made the change: the user, or the customer whose email did it."""
    data = event.data or {}
    if event.actor is not None:
        return event.actor.username
    by_customer = (
        event.type in (TicketEvent.Type.CUSTOMER_REPLIED, *SATISFACTION_EVENTS)
        or (event.type == TicketEvent.Type.CREATED and data.get("via") == "email")
        or data.get("reason") == "customer replied"
    )
    return customer_name if by_customer else "the desk"


def _history(ticket: Ticket) -> list[HistoryRow]:
    status_labels: dict[str, str] = dict(Ticket.Status.choices)
    rows = []
    for event in selectors.ticket_events(ticket):
        data = event.data or {}
        detail = ""
        if event.type == TicketEvent.Type.STATUS_CHANGED:
            before = status_labels.get(str(data.get("from")), data.get("from"))
            after = status_labels.get(str(data.get("to")), data.get("to"))
            detail = f"{before} → {after}"
            if data.get("reason"):
                detail += f" ({data['reason']})"
        elif event.type == TicketEvent.Type.ASSIGNED:
            detail = f"{data.get('from') or 'unassigned'} → {data.get('to') or 'unassigned'}"
        elif event.type in (TicketEvent.Type.ESCALATED, TicketEvent.Type.ESCALATION_CLEARED):
            detail = data.get("note", "")
        elif event.type == TicketEvent.Type.REPLY_FAILED:
            detail = data.get("error", "")
        elif event.type == TicketEvent.Type.CREATED:
            detail = "from the customer's email" if data.get("via") == "email" else "by the desk"
        elif event.type in (TicketEvent.Type.MERGED_INTO, TicketEvent.Type.MERGED_FROM):
            detail = data.get("reference", "")
        elif event.type == TicketEvent.Type.CLAIMS_CONFIRMED:
            detail = "; ".join(f"“{claim.get('text', '')}”" for claim in data.get("claims", []))
        elif event.type in SATISFACTION_EVENTS:
            detail = _satisfaction_words(data)
        rows.append(HistoryRow(event, detail, _who(event, ticket.customer.name)))
    return rows


SATISFACTION_EVENTS = (
    TicketEvent.Type.SATISFACTION_RATED,
    TicketEvent.Type.SATISFACTION_COMMENTED,
)


def _satisfaction_words(data: dict) -> str:
    """The customer's rating and comment as the history says them."""
    rating = str(data.get("rating", "")).capitalize()
    comment = f"“{data['comment']}”" if data.get("comment") else ""
    return " ".join(part for part in (rating, comment) if part)


def _panel_answer_message_id(ticket: Ticket, run) -> int | None:
    """The conversation's note that holds the answer the assistant panel shows in full (the
    latest run's): the conversation folds it, so the page says the answer once."""
    if run is None or not run.final_answer:
        return None
    return (
        ticket.messages.filter(
            author_kind=TicketMessage.AuthorKind.ASSISTANT,
            body=run.final_answer,
            created_at__gte=run.created_at,
        )
        .order_by("-created_at", "-id")
        .values_list("pk", flat=True)
        .first()
    )


def _render_ticket(
    request,
    ticket: Ticket,
    *,
    draft: dict | None = None,
    error_for: str = "",
    error: str = "",
    status: int = 200,
    applied_macro: Macro | None = None,
):
    """The ticket page. After a refused form, `draft` holds what was typed, `error_for` names
    the form ("reply", "escalate", "deescalate", "merge", "actions") and `error` says why."""
    role = support_role(request.user)
    public_reply_refusal = _public_reply_refusal(role, ticket)
    draft = dict(draft or {})
    draft.setdefault("visibility", "internal" if public_reply_refusal else "public")
    refunds = list(ticket.refund_requests.select_related("order").order_by("-created_at"))
    latest_run = ticket.runs.order_by("-created_at").first()
    conversation = list(ticket.messages.all())
    since = answers_since(ticket.pk, conversation)
    for message in conversation:
        # Read by the page under an answer a later refund change made stale (not a field).
        message.since_answer = since.get(message.pk, "")  # type: ignore[attr-defined]
    return render(
        request,
        "tickets/detail.html",
        {
            "ticket": ticket,
            "history": _history(ticket),
            "latest_run": latest_run,
            "conversation": conversation,
            "panel_answer_message_id": _panel_answer_message_id(ticket, latest_run),
            "refunds": refunds,
            "withdrawable": _withdrawable(refunds, request.user),
            "agent_model": settings.AGENT_MODEL,
            "order": order_summary(ticket.order) if ticket.order else None,
            "can_run_assistant": role is not None,
            "can_write": role is not None,
            "can_reply_publicly": not public_reply_refusal,
            "public_reply_refusal": public_reply_refusal,
            "can_retry": role in AGENT_ROLES,
            "can_change_status": role in AGENT_ROLES,
            "can_assign": role in AGENT_ROLES,
            "can_escalate": role in (Role.INTERN, Role.AGENT)
            and ticket.status != Ticket.Status.CLOSED,
            "can_clear_escalation": is_supervisor(request.user) and ticket.escalated,
            "can_merge": role in AGENT_ROLES and ticket.merged_into_id is None,
            "next_statuses": _status_actions(ticket),
            "priorities": Ticket.Priority.choices,
            "sla_state": sla.sla_state(ticket),
            "sla_due": sla.next_due(ticket),
            "rating": satisfaction.latest_rating(ticket),
            "survey": satisfaction.latest_survey(ticket),
            "can_tag": role is not None,
            "macros": macros.macros_for(request.user) if role is not None else [],
            "applied_macro": applied_macro,
            # attachments
            "attachment_max_mb": f"{settings.ATTACHMENT_MAX_BYTES / (1024 * 1024):g}",
            "support_users": support_users(),
            "draft": draft,
            "error_for": error_for,
            "error": error,
        },
        status=status,
    )


def _withdrawable(refunds: list[RefundRequest], user) -> set[int]:
    """The proposals `user` may take back (refunds.services.refund_withdraw decides; this only
    offers the button): their own awaiting review, or any awaiting review for a supervisor."""
    supervisor = is_supervisor(user)
    return {
        refund.pk
        for refund in refunds
        if refund.status == RefundStatus.PENDING_APPROVAL
        and (supervisor or refund.requested_by_id == user.pk)
    }


@login_required
def ticket_detail(request, reference: str):
    _require_staff(request.user)
    ticket = _ticket(reference)
    changes.ticket_mark_seen(ticket=ticket, user=request.user)
    if request.GET.get("macro", "").isdigit():
        return _render_with_macro(request, ticket, int(request.GET["macro"]))
    # A reply written from a macro was sent: its actions stay offered until applied or
    # dismissed, and the reply box is empty again.
    return _render_ticket(request, ticket, applied_macro=_macro_with_actions(request, "GET"))


def _macro_with_actions(request, method: str) -> Macro | None:
    """The user's macro named by `macro` (the reply form) or `pending_macro` (the page after
    sending), when it has actions to offer."""
    data = request.POST if method == "POST" else request.GET
    raw = data.get("macro" if method == "POST" else "pending_macro", "")
    if not raw.isdigit():
        return None
    macro = macros.macros_for(request.user).filter(pk=int(raw)).first()
    return macro if macro is not None and macro.actions else None


def _render_with_macro(request, ticket: Ticket, macro_id: int):
    """The ticket page with the macro's text in the reply box and its actions offered for
    confirmation; nothing is sent or changed (DESIGN §15)."""
    macro = get_object_or_404(macros.macros_for(request.user), pk=macro_id)
    try:
        applied = macros.macro_apply(macro=macro, ticket=ticket, agent=request.user)
    except ApplicationError as exc:
        return _render_ticket(request, ticket, error_for="reply", error=exc.message, status=409)
    return _render_ticket(
        request,
        ticket,
        draft={"body": applied.body, "visibility": applied.visibility},
        applied_macro=macro if applied.actions else None,
    )


def _act(
    request,
    reference: str,
    action,
    success: str,
    *,
    form: str = "actions",
    draft: dict | None = None,
    applied_macro: Macro | None = None,
):
    """Run one service call for a form on the ticket page: back to the ticket with a notice,
    or the page again with the refusal and what was typed. A refusal of a form with text
    (`form` "reply", "escalate", "deescalate") is shown next to it; the others on top.
    `applied_macro`: the macro the text came from, whose actions stay offered either way."""
    _require_staff(request.user)
    ticket = _ticket(reference)
    try:
        action(ticket)
    except ApplicationError as exc:
        if form == "actions":
            messages.error(request, exc.message)
            error = ""
        else:
            # Shown next to the form with the text kept, where the browser scrolls to.
            error = exc.message
        if exc.code == ClaimsContradictState.code:
            # The reply box lists them, once, with a button to send the reply as it is: the
            # list says what the error would, so there is no error line above it.
            draft = {**(draft or {}), "claims": services.claims_in_words(exc.extra["claims"])}
            error = ""
        return _render_ticket(
            request,
            _ticket(reference),
            draft=draft,
            error_for=form,
            error=error,
            status=exc.status_code,
            applied_macro=applied_macro,
        )
    messages.success(request, success)
    if applied_macro is not None:
        url = reverse("tickets:detail", kwargs={"reference": reference})
        return redirect(f"{url}?{urlencode({'pending_macro': applied_macro.pk})}#reply")
    return redirect("tickets:detail", reference=reference)


def _typed(request, name: str) -> str:
    """A textarea's text as typed: browsers send its line breaks as CRLF."""
    return request.POST.get(name, "").replace("\r\n", "\n")


@login_required
@require_POST
def ticket_write(request, reference: str):
    if attachments.body_too_large(request.META.get("CONTENT_LENGTH")):
        # Not read at all (reading the text would read the files too): the page again.
        return _act(request, reference, _refuse_too_large, "", form="reply")
    body = _typed(request, "body")
    visibility = request.POST.get("visibility", TicketMessage.Visibility.INTERNAL)
    if visibility not in TicketMessage.Visibility.values:
        visibility = TicketMessage.Visibility.INTERNAL
    public = visibility == TicketMessage.Visibility.PUBLIC
    files = request.FILES.getlist("files")
    return _act(
        request,
        reference,
        lambda t: services.ticket_write(
            ticket=t,
            author=request.user,
            body=body,
            visibility=visibility,
            claims_check=lambda text: contradicted_claims(text=text, ticket=t),
            confirm_claims=request.POST.get("confirm_claims") == "1",
            files=attachments.uploads_from(files),
        ),
        "Reply queued for sending to the customer." if public else "Internal note added.",
        form="reply",
        draft={"body": body, "visibility": visibility},
        applied_macro=_macro_with_actions(request, "POST"),
    )


def _refuse_too_large(ticket: Ticket) -> None:
    raise attachments.TooLarge("The files are too large to attach: send fewer or smaller ones.")


@login_required
@require_POST
def ticket_retry_reply(request, reference: str, message_id: int):
    _require_staff(request.user)
    message = get_object_or_404(TicketMessage, pk=message_id, ticket__reference=reference)
    return _act(
        request,
        reference,
        lambda t: services.reply_retry(message=message, actor=request.user),
        "Sending the reply again.",
    )


@login_required
@require_POST
def ticket_status(request, reference: str):
    to_status = request.POST.get("status", "")
    label = dict(Ticket.Status.choices).get(to_status, to_status)
    return _act(
        request,
        reference,
        lambda t: services.ticket_set_status(ticket=t, to_status=to_status, actor=request.user),
        f"Ticket marked {label.lower()}.",
    )


@login_required
@require_POST
def ticket_priority(request, reference: str):
    priority = request.POST.get("priority", "")
    label = dict(Ticket.Priority.choices).get(priority, priority)
    return _act(
        request,
        reference,
        lambda t: services.ticket_set_priority(ticket=t, priority=priority, actor=request.user),
        f"Priority set to {label.lower()}.",
    )


def _split_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


@login_required
@require_POST
def ticket_tags(request, reference: str):
    add = _split_list(request.POST.get("add", ""))
    remove = request.POST.getlist("remove")
    return _act(
        request,
        reference,
        lambda t: services.ticket_change_tags(ticket=t, actor=request.user, add=add, remove=remove),
        "Tags updated.",
    )


@login_required
@require_POST
def ticket_cc(request, reference: str):
    cc = _split_list(request.POST.get("cc", ""))
    return _act(
        request,
        reference,
        lambda t: services.ticket_set_cc(ticket=t, cc=cc, actor=request.user),
        "CC updated.",
        draft={"cc": cc},
    )


@login_required
@require_POST
def ticket_macro_actions(request, reference: str, macro_id: int):
    """The agent confirms the actions of the macro they applied (status, priority, tags). The
    reply box's text comes along and is shown again, unsent, as it was."""
    _require_staff(request.user)
    macro = get_object_or_404(macros.macros_for(request.user), pk=macro_id)
    draft = {"body": _typed(request, "body")}
    if request.POST.get("visibility") in TicketMessage.Visibility.values:
        draft["visibility"] = request.POST["visibility"]
    try:
        done = macros.macro_confirm_actions(
            macro=macro, ticket=_ticket(reference), agent=request.user
        )
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return _render_ticket(request, _ticket(reference), draft=draft, status=exc.status_code)
    messages.success(request, f"{macro.name}: {'; '.join(done) or 'nothing to change'}.")
    return _render_ticket(request, _ticket(reference), draft=draft)


@login_required
@require_POST
def ticket_assign(request, reference: str):
    username = request.POST.get("assignee", "").strip()
    if username == "me":
        username = request.user.username

    def assign(ticket: Ticket) -> None:
        assignee = services.support_member(username) if username else None
        services.ticket_assign(ticket=ticket, assignee=assignee, actor=request.user)

    return _act(
        request,
        reference,
        assign,
        f"Assigned to {username}." if username else "Ticket unassigned.",
    )


@login_required
@require_POST
def ticket_refund_withdraw(request, reference: str, request_id: str):
    note = _typed(request, "note")

    def withdraw(ticket: Ticket) -> None:
        refund = get_object_or_404(RefundRequest, ticket=ticket, request_id=request_id)
        refund_services.refund_withdraw(refund=refund, by=request.user, note=note)

    return _act(request, reference, withdraw, f"Refund {request_id} withdrawn.")


@login_required
@require_POST
def ticket_escalate(request, reference: str):
    note = _typed(request, "note")
    return _act(
        request,
        reference,
        lambda t: services.ticket_escalate(ticket=t, note=note, actor=request.user),
        "Escalated: supervisors see it in their Escalated view.",
        form="escalate",
        draft={"note": note},
    )


@login_required
@require_POST
def ticket_deescalate(request, reference: str):
    note = _typed(request, "note")
    return _act(
        request,
        reference,
        lambda t: services.ticket_clear_escalation(ticket=t, note=note, actor=request.user),
        "Escalation marked handled.",
        form="deescalate",
        draft={"deescalate_note": note},
    )


# --- a new ticket --------------------------------------------------------------------------

FORM_FIELDS = ("email", "name", "subject", "body", "order_id")


class NotTheCustomersOrder(ApplicationError):
    code = "order_not_customers"


@login_required
def ticket_new(request):
    """An agent records a request that came by phone or chat: the customer (found by email,
    or created), a subject, their words, and optionally one of their orders."""
    _require_staff(request.user)
    if support_role(request.user) is None:
        raise PermissionDenied("Only interns, agents and supervisors open tickets.")
    form = {key: _typed(request, key).strip() for key in FORM_FIELDS}
    errors: dict[str, str] = {}
    if request.method == "POST":
        errors = _new_ticket_errors(form)
        if not errors:
            try:
                ticket = _open_from_form(form, request.user)
            except NotTheCustomersOrder as exc:
                errors["order_id"] = exc.message
            except ApplicationError as exc:
                errors["general"] = exc.message
            else:
                messages.success(request, f"{ticket.reference} opened.")
                return redirect("tickets:detail", reference=ticket.reference)
    return render(
        request,
        "tickets/new.html",
        {"form": form, "errors": errors},
        status=400 if errors else 200,
    )


def _new_ticket_errors(form: dict) -> dict[str, str]:
    errors = {}
    try:
        validate_email(form["email"])
        email_key(form["email"])
    except ValidationError:
        errors["email"] = "Enter the customer's email address."
    except BadAddress as exc:
        errors["email"] = exc.message
    if not form["subject"]:
        errors["subject"] = "Give the ticket a subject."
    if not form["body"]:
        errors["body"] = "Write down what the customer asked."
    if form["order_id"] and "email" not in errors and not _is_customers_order(form):
        errors["order_id"] = _not_their_order(form)
    return errors


def _is_customers_order(form: dict) -> bool:
    return Order.objects.filter(
        order_id=form["order_id"], customer__email_key=email_key(form["email"])
    ).exists()


def _not_their_order(form: dict) -> str:
    return f"{form['email']} has no order {form['order_id']}."


def _open_from_form(form: dict, user) -> Ticket:
    # One transaction: a customer created for this form does not outlive a refused order id.
    with transaction.atomic():
        customer = services.customer_for_email(email=form["email"], name=form["name"])
        order = None
        if form["order_id"]:
            order = Order.objects.filter(order_id=form["order_id"], customer=customer).first()
            if order is None:
                raise NotTheCustomersOrder(_not_their_order(form))
        return services.ticket_open(
            customer=customer,
            subject=form["subject"],
            body=form["body"],
            order=order,
            opened_by=user,
        )


# --- a customer ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RefundRow:
    refund: object  # a refunds.RefundRequest
    words: str


@login_required
def customer_detail(request, customer_id: int):
    _require_staff(request.user)
    try:
        overview = selectors.customer_overview(customer_id=customer_id)
    except Customer.DoesNotExist:
        raise Http404(f"No customer {customer_id}") from None
    return render(
        request,
        "tickets/customer.html",
        {
            "overview": overview,
            "refund_rows": [
                RefundRow(refund, _refund_words(refund.status)) for refund in overview.refunds
            ],
        },
    )


# --- notifications -------------------------------------------------------------------------


@login_required
def notification_list(request):
    """The user's notifications, newest first; opening one marks it read."""
    _require_staff(request.user)
    page = Paginator(selectors.notifications_of(user=request.user), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    return render(request, "tickets/notifications.html", {"page": page})


@login_required
@require_POST
def notification_read(request):
    """Mark one notification read (`id`) and go to its ticket, or all of them (no `id`)."""
    _require_staff(request.user)
    raw = request.POST.get("id", "")
    if raw.isdigit():
        notification = get_object_or_404(selectors.notifications_of(user=request.user), pk=int(raw))
        changes.notifications_mark_read(user=request.user, ids=[notification.pk])
        return redirect("tickets:detail", reference=notification.ticket.reference)
    changes.notifications_mark_read(user=request.user)
    return redirect("notifications")
