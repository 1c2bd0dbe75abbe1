"""/tickets/: the ticket list, its views, filters, sorts and pages, and the satisfaction
figures above it. What the list shows besides its rows (saved views, bulk actions, the
assignees' names) is desk.list_page's."""

from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlencode

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Exists, OuterRef
from django.shortcuts import render
from django.utils import timezone

from config.roles import support_role
from desk import list_page
from desk.views.shared import PAGE_SIZE, refund_words, require_staff
from refunds.selectors import with_latest_refund_status
from tickets import people, satisfaction, selectors, sla
from tickets.models import Ticket

LIST_VIEWS = [
    ("all", "All"),
    ("mine", "My tickets"),
    ("unassigned", "Unassigned"),
    ("escalated", "Escalated"),
]
LIST_SORTS = [("updated", "Last updated"), ("created", "Created"), ("due", "SLA due")]
# Left out of the list's links: a link with only the defaults is the plain list.
LIST_DEFAULTS = {"view": "all", "sort": "updated"}
# The list's satisfaction figures count the ratings of this many days.
SATISFACTION_DAYS = 30


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
    require_staff(request.user)
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
                refund_words(refund_status),
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
