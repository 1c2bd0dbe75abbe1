from django.db.models import Q, QuerySet

from tickets.models import Ticket


def ticket_list(*, status: str = "", assignee: str = "", query: str = "") -> QuerySet[Ticket]:
    """Tickets for the desk list. `assignee` is a username, "me" is resolved by the caller,
    "none" means unassigned."""
    tickets = Ticket.objects.select_related("customer", "assignee", "order")
    if status:
        tickets = tickets.filter(status=status)
    if assignee == "none":
        tickets = tickets.filter(assignee__isnull=True)
    elif assignee:
        tickets = tickets.filter(assignee__username=assignee)
    if query:
        tickets = tickets.filter(
            Q(reference__icontains=query)
            | Q(subject__icontains=query)
            | Q(customer__name__icontains=query)
            | Q(customer__email__icontains=query)
            | Q(order__order_id__icontains=query)
        )
    return tickets.order_by("-updated_at")


def ticket_detail(*, reference: str) -> Ticket:
    return (
        Ticket.objects.select_related("customer", "assignee", "order")
        .prefetch_related("messages__author", "order__lines")
        .get(reference=reference)
    )
