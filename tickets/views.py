"""The support desk's pages: the ticket list, a ticket (conversation, reply box, status,
assignment, escalation), a new ticket, a customer. Every change goes through tickets.services,
which checks the role; a refusal is shown on the page with what was typed kept."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.core.validators import validate_email
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from config.errors import ApplicationError
from config.roles import Role, is_staff_member, is_supervisor, support_role
from orders.models import Customer, Order
from orders.selectors import order_summary
from refunds.selectors import with_latest_refund_status
from tickets import selectors, services
from tickets.models import Ticket, TicketMessage
from tickets.services import TICKET_ALLOWED

PAGE_SIZE = 25


def _require_staff(user) -> None:
    if not is_staff_member(user):
        raise PermissionDenied("Only desk staff (support and reviewers) can see tickets.")


def _ticket(reference: str) -> Ticket:
    try:
        return selectors.ticket_detail(reference=reference)
    except Ticket.DoesNotExist:
        raise Http404(f"No ticket {reference}") from None


@login_required
def ticket_list(request):
    _require_staff(request.user)
    params = request.GET
    view = params.get("view", "all")
    view = view if view in selectors.VIEWS else "all"
    status = params.get("status", "")
    assignee = params.get("assignee", "")
    sort = params.get("sort", "updated")
    query = params.get("q", "").strip()
    tickets = selectors.ticket_list(
        view=view,
        user=request.user,
        status=status if status in Ticket.Status.values else "",
        assignee=request.user.username if assignee == "me" else assignee,
        query=query,
        sort=sort if sort in selectors.SORTS else "updated",
    )
    page = Paginator(with_latest_refund_status(tickets), PAGE_SIZE).get_page(params.get("page"))
    assignees = get_user_model().objects.filter(assigned_tickets__isnull=False).distinct()
    return render(
        request,
        "tickets/list.html",
        {
            "page": page,
            "views": [
                ("all", "All"),
                ("mine", "My tickets"),
                ("unassigned", "Unassigned"),
                ("escalated", "Escalated"),
            ],
            "statuses": Ticket.Status.choices,
            "assignees": assignees.order_by("username"),
            "filters": {
                "view": view,
                "status": status,
                "assignee": assignee,
                "q": query,
                "sort": sort,
            },
            "escalated_count": Ticket.objects.filter(escalated=True).count(),
        },
    )


def _render_ticket(request, ticket: Ticket, *, draft: dict | None = None, status: int = 200):
    role = support_role(request.user)
    return render(
        request,
        "tickets/detail.html",
        {
            "ticket": ticket,
            "events": selectors.ticket_events(ticket),
            "latest_run": ticket.runs.order_by("-created_at").first(),
            "refunds": ticket.refund_requests.select_related("order").order_by("-created_at"),
            "agent_model": settings.AGENT_MODEL,
            "order": order_summary(ticket.order) if ticket.order else None,
            "can_run_assistant": role is not None,
            "can_write": role is not None,
            "can_reply_publicly": role in (Role.AGENT, Role.SUPERVISOR),
            "can_change_status": role in (Role.AGENT, Role.SUPERVISOR),
            "can_assign": role in (Role.AGENT, Role.SUPERVISOR),
            "can_escalate": role in (Role.INTERN, Role.AGENT) and ticket.status != "closed",
            "can_clear_escalation": is_supervisor(request.user) and ticket.escalated,
            "next_statuses": [
                (value, label)
                for value, label in Ticket.Status.choices
                if value in TICKET_ALLOWED[ticket.status]
            ],
            "support_users": _support_users(),
            "draft": draft or {},
        },
        status=status,
    )


def _support_users():
    users = get_user_model().objects.filter(is_active=True).prefetch_related("groups")
    return [u for u in users.order_by("username") if support_role(u) is not None]


@login_required
def ticket_detail(request, reference: str):
    _require_staff(request.user)
    return _render_ticket(request, _ticket(reference))


def _act(request, reference: str, action, success: str, *, draft: dict | None = None):
    """Run one service call for a form on the ticket page: back to the ticket with a notice,
    or the page again with the refusal and what was typed."""
    _require_staff(request.user)
    ticket = _ticket(reference)
    try:
        action(ticket)
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return _render_ticket(request, _ticket(reference), draft=draft, status=exc.status_code)
    messages.success(request, success)
    return redirect("tickets:detail", reference=reference)


@login_required
@require_POST
def ticket_write(request, reference: str):
    body = request.POST.get("body", "")
    visibility = request.POST.get("visibility", TicketMessage.Visibility.INTERNAL)
    if visibility not in TicketMessage.Visibility.values:
        visibility = TicketMessage.Visibility.INTERNAL
    public = visibility == TicketMessage.Visibility.PUBLIC
    return _act(
        request,
        reference,
        lambda t: services.ticket_write(
            ticket=t, author=request.user, body=body, visibility=visibility
        ),
        "Reply queued for sending to the customer." if public else "Internal note added.",
        draft={"body": body, "visibility": visibility},
    )


@login_required
@require_POST
def ticket_retry_reply(request, reference: str, message_id: int):
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
def ticket_escalate(request, reference: str):
    note = request.POST.get("note", "")
    return _act(
        request,
        reference,
        lambda t: services.ticket_escalate(ticket=t, note=note, actor=request.user),
        "Escalated: supervisors see it in their Escalated view.",
        draft={"note": note},
    )


@login_required
@require_POST
def ticket_deescalate(request, reference: str):
    note = request.POST.get("note", "")
    return _act(
        request,
        reference,
        lambda t: services.ticket_clear_escalation(ticket=t, note=note, actor=request.user),
        "Escalation marked handled.",
    )


@login_required
def ticket_new(request):
    """An agent records a request that came by phone or chat: the customer (found by email,
    or created), a subject, their words, and optionally one of their orders."""
    _require_staff(request.user)
    if support_role(request.user) is None:
        raise PermissionDenied("Only interns, agents and supervisors open tickets.")
    form = {key: request.POST.get(key, "").strip() for key in FORM_FIELDS}
    errors: dict[str, str] = {}
    if request.method == "POST":
        errors = _new_ticket_errors(form)
        if not errors:
            try:
                ticket = _open_from_form(form, request.user)
            except ApplicationError as exc:
                errors["__all__"] = exc.message
            else:
                messages.success(request, f"{ticket.reference} opened.")
                return redirect("tickets:detail", reference=ticket.reference)
    return render(
        request,
        "tickets/new.html",
        {"form": form, "errors": errors},
        status=400 if errors else 200,
    )


FORM_FIELDS = ("email", "name", "subject", "body", "order_id")


def _new_ticket_errors(form: dict) -> dict[str, str]:
    errors = {}
    try:
        validate_email(form["email"])
    except ValidationError:
        errors["email"] = "Enter the customer's email address."
    if not form["subject"]:
        errors["subject"] = "Give the ticket a subject."
    if not form["body"]:
        errors["body"] = "Write down what the customer asked."
    return errors


def _open_from_form(form: dict, user) -> Ticket:
    customer = services.customer_for_email(email=form["email"], name=form["name"])
    order = None
    if form["order_id"]:
        order = Order.objects.filter(order_id=form["order_id"], customer=customer).first()
        if order is None:
            raise ApplicationError(
                f"{customer.name} has no order {form['order_id']}.", code="order_not_customers"
            )
    return services.ticket_open(
        customer=customer, subject=form["subject"], body=form["body"], order=order, opened_by=user
    )


@login_required
def customer_detail(request, customer_id: int):
    _require_staff(request.user)
    try:
        overview = selectors.customer_overview(customer_id=customer_id)
    except Customer.DoesNotExist:
        raise Http404(f"No customer {customer_id}") from None
    return render(request, "tickets/customer.html", {"overview": overview})
