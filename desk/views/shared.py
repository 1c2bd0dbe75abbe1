"""What every desk page here shares, and the merge and saved-view pages with them: the staff
gate, a textarea's text as typed, a refund status in words, the size of a page of rows."""

from django.core.exceptions import PermissionDenied

from config.refund_statuses import RefundStatus
from config.roles import is_staff_member

PAGE_SIZE = 25


def require_staff(user) -> None:
    if not is_staff_member(user):
        raise PermissionDenied("Only desk staff (support and reviewers) can see tickets.")


def typed(request, name: str) -> str:
    """A textarea's text as typed: browsers send its line breaks as CRLF."""
    return request.POST.get(name, "").replace("\r\n", "\n")


def refund_words(status: str) -> str:
    """The status as every page says it: its label in config/refund_statuses.py."""
    return RefundStatus(status).label if status else ""
