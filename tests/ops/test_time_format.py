"""One time format on every page: "4 Dec 2026, 14:05" in the desk's time zone, from one place
(config/times.py, the `when` and `day` template filters)."""

import re
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth import get_user_model
from django.template import Context, Template
from django.utils import timezone

from config import times
from orders.models import Order
from refunds.services import refund_propose
from tickets.models import Ticket, TicketMessage

ROOT = Path(__file__).resolve().parent.parent.parent
MOMENT = datetime(2026, 12, 4, 14, 5, tzinfo=UTC)
# A date or time in any other shape a page might print: 2026-12-04, 12/04/2026, 14:05:09, PM.
OTHER_SHAPES = re.compile(
    r"\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}|\d{2}:\d{2}:\d{2}|\d\s?[ap]\.?m\.?(?!\w)", re.I
)


def test_it_writes_a_moment_and_a_day_one_way():
    assert times.when(MOMENT) == "4 Dec 2026, 14:05"
    assert times.day(MOMENT) == "4 Dec 2026"
    assert times.day(date(2026, 1, 9)) == "9 Jan 2026"
    assert times.when(None) == times.day(None) == ""


def test_a_moment_near_now_is_written_short_for_the_lists_due_column():
    now = datetime(2026, 12, 4, 9, 0, tzinfo=UTC)
    assert times.when_short(MOMENT, now) == "Today 14:05"
    assert times.when_short(datetime(2026, 12, 5, 8, 30, tzinfo=UTC), now) == "Tomorrow 08:30"
    assert times.when_short(datetime(2026, 12, 3, 23, 59, tzinfo=UTC), now) == "Yesterday 23:59"
    assert times.when_short(datetime(2026, 12, 8, 9, 0, tzinfo=UTC), now) == "8 Dec 09:00"
    assert times.when_short(datetime(2027, 1, 2, 9, 0, tzinfo=UTC), now) == "2 Jan 2027, 09:00"
    assert times.when_short(None) == ""


def test_today_is_the_desks_today():
    """Past midnight in Shanghai while it is still the day before in UTC."""
    now = datetime(2026, 12, 4, 17, 0, tzinfo=UTC)  # 5 Dec, 01:00 in Shanghai
    with timezone.override(ZoneInfo("Asia/Shanghai")):
        assert times.when_short(datetime(2026, 12, 4, 20, 0, tzinfo=UTC), now) == "Today 04:00"
        assert times.when_short(MOMENT, now) == "Yesterday 22:05"


def test_it_writes_a_moment_in_the_desks_time_zone():
    with timezone.override(ZoneInfo("Asia/Shanghai")):
        assert times.when(MOMENT) == "4 Dec 2026, 22:05"
        assert times.day(datetime(2026, 12, 4, 20, 0, tzinfo=UTC)) == "5 Dec 2026"


def test_every_template_has_the_filters_without_loading_them():
    rendered = Template("{{ at|when }} / {{ at|day }}").render(Context({"at": MOMENT}))

    assert rendered == "4 Dec 2026, 14:05 / 4 Dec 2026"


def test_no_template_writes_a_time_its_own_way():
    # Only the machine-readable ISO 8601 of datetime="" and title="" attributes may use |date.
    for template in sorted((ROOT / "templates").rglob("*.html")):
        for fmt in re.findall(r"\|date:[\"']([^\"']*)[\"']", template.read_text()):
            assert fmt == "c", f"{template.relative_to(ROOT)} formats a time as {fmt!r}"


def _visible_text(page: str) -> str:
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    return re.sub(r"<[^>]+>", " ", page)  # attributes (datetime="", title="") go with the tags


def _proposal(ticket: Ticket):
    return refund_propose(
        ticket=ticket,
        order=Order.objects.get(order_id="202610110087"),
        amount=Decimal("129.00"),
        reason="damaged",
        explanation="Arrived in pieces.",
        requested_by=get_user_model().objects.get(username="agent"),
        role="agent",
    ).refund


@pytest.mark.django_db
def test_the_pages_show_times_in_the_one_format(client, demo):
    ticket = Ticket.objects.get(reference="TCK-1001")
    TicketMessage.objects.filter(ticket=ticket).update(created_at=MOMENT)
    refund = _proposal(ticket)
    client.force_login(get_user_model().objects.get(username="supervisor"))
    reviewer = get_user_model().objects.get(username="reviewer")

    pages = [
        client.get("/tickets/"),
        client.get("/tickets/TCK-1001/"),
        client.get(f"/customers/{ticket.customer_id}/"),
    ]
    client.force_login(reviewer)
    pages += [client.get("/review/"), client.get(f"/review/{refund.request_id}/")]

    for response in pages:
        assert response.status_code == 200
        text = _visible_text(response.content.decode())
        assert not OTHER_SHAPES.search(text), OTHER_SHAPES.search(text).group(0)
    assert "4 Dec 2026, 14:05" in _visible_text(pages[1].content.decode())


# Django's own month abbreviations ("Dec.", "Sept.") and its 12-hour clock ("2:05 p.m.", "noon").
DJANGO_SHAPES = re.compile(r"\b[A-Z][a-z]{2,3}\.\s\d{1,2},|\b(?:a|p)\.m\.|\bnoon\b|\bmidnight\b")


@pytest.mark.django_db
def test_the_admin_shows_times_in_the_one_format(client, demo):
    ticket = Ticket.objects.get(reference="TCK-1001")
    refund = _proposal(ticket)
    type(refund).objects.filter(pk=refund.pk).update(created_at=MOMENT, updated_at=MOMENT)
    TicketMessage.objects.filter(ticket=ticket).update(created_at=MOMENT)
    client.force_login(get_user_model().objects.get(username="admin"))

    pages = [
        client.get("/admin/refunds/refundrequest/"),
        client.get(f"/admin/refunds/refundrequest/{refund.pk}/change/"),
        client.get("/admin/tickets/ticketmessage/"),
        client.get(f"/admin/tickets/ticket/{ticket.pk}/change/"),
    ]

    for response in pages:
        assert response.status_code == 200, response
        text = _visible_text(response.content.decode())
        assert not DJANGO_SHAPES.search(text), DJANGO_SHAPES.search(text).group(0)
    assert "4 Dec 2026, 14:05" in _visible_text(pages[1].content.decode())
