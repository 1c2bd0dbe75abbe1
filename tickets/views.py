from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render

from config.roles import is_staff_member, support_role
from orders.selectors import order_summary
from tickets import selectors
from tickets.models import Ticket


def _require_staff(user) -> None:
    if not is_staff_member(user):
        raise PermissionDenied


@login_required
def ticket_list(request):
    _require_staff(request.user)
    status = request.GET.get("status", "")
    assignee = request.GET.get("assignee", "")
    query = request.GET.get("q", "").strip()
    tickets = selectors.ticket_list(
        status=status if status in Ticket.Status.values else "",
        assignee=request.user.username if assignee == "me" else assignee,
        query=query,
    )
    page = Paginator(tickets, 25).get_page(request.GET.get("page"))
    assignees = get_user_model().objects.filter(assigned_tickets__isnull=False).distinct()
    return render(
        request,
        "tickets/list.html",
        {
            "page": page,
            "statuses": Ticket.Status.choices,
            "assignees": assignees.order_by("username"),
            "filters": {"status": status, "assignee": assignee, "q": query},
        },
    )


@login_required
def ticket_detail(request, reference: str):
    _require_staff(request.user)
    try:
        ticket = selectors.ticket_detail(reference=reference)
    except Ticket.DoesNotExist:
        raise Http404(f"No ticket {reference}") from None
    return render(
        request,
        "tickets/detail.html",
        {
            "ticket": ticket,
            "latest_run": ticket.runs.order_by("-created_at").first(),
            "refunds": ticket.refund_requests.select_related("order").order_by("-created_at"),
            "agent_model": settings.AGENT_MODEL,
            "order": order_summary(ticket.order) if ticket.order else None,
            "can_run_assistant": support_role(request.user) is not None,
        },
    )
