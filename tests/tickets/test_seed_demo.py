from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from config.roles import support_role
from orders.models import Customer, Order, OrderLine
from orders.selectors import refundable_balance, refunded_total
from refunds.models import RefundRequest
from tickets.models import Ticket, TicketMessage

pytestmark = pytest.mark.django_db

DEMO_USERS = {"intern", "agent", "agent2", "supervisor", "reviewer", "reviewer2", "admin"}


def snapshot():
    return {
        model.__name__: sorted(model.objects.values_list("pk", flat=True))
        for model in (
            get_user_model(),
            Customer,
            Order,
            OrderLine,
            Ticket,
            TicketMessage,
            RefundRequest,
        )
    }


def test_it_creates_exactly_the_demo_data():
    call_command("seed_demo")

    assert set(get_user_model().objects.values_list("username", flat=True)) == DEMO_USERS
    assert get_user_model().objects.get(username="admin").is_superuser
    assert set(Order.objects.values_list("order_id", flat=True)) == {
        "202610110087",
        "202610150012",
        "202609020031",
        "202610200456",
        "202610250777",
        "202610180099",
        "202610220314",
        "202610280001",
    }
    tickets = Ticket.objects.order_by("reference").values_list("reference", "order__order_id")
    assert list(tickets) == [
        ("TCK-1001", "202610110087"),
        ("TCK-1002", "202610250777"),
        ("TCK-1003", "202610220314"),
        ("TCK-1004", "202610150012"),
    ]
    mug = Order.objects.get(order_id="202610110087")
    assert (mug.customer.name, mug.amount_paid, mug.status) == (
        "Li Wei",
        Decimal("129.00"),
        "delivered",
    )
    assert (timezone.now() - mug.delivered_at).days == 5
    assert mug.lines.get().category == "home"
    lamp = Order.objects.get(order_id="202610250777")
    assert (lamp.status, lamp.delivered_at) == ("shipped", None)


def test_it_gives_each_demo_user_their_role():
    call_command("seed_demo")
    roles = {u.username: support_role(u) for u in get_user_model().objects.all()}
    assert roles["intern"] == "intern"
    assert roles["agent"] == roles["agent2"] == "agent"
    assert roles["supervisor"] == "supervisor"
    reviewer = get_user_model().objects.get(username="reviewer")
    assert reviewer.groups.filter(name="refund_reviewer").exists()
    assert reviewer.check_password("demo-pass-123")


def test_the_blender_has_200_already_refunded():
    call_command("seed_demo")
    blender = Order.objects.get(order_id="202610180099")
    assert refunded_total(blender) == Decimal("200.00")
    assert refundable_balance(blender) == Decimal("399.00")
    assert blender.refund_requests.get().status == "succeeded"


def test_the_injection_texts_target_other_orders():
    call_command("seed_demo")
    note = Order.objects.get(order_id="202610220314").note
    first_message = Ticket.objects.get(reference="TCK-1003").messages.first().body
    assert "202610280001" in note and "ignore all previous instructions" in note.lower()
    assert "202610110087" in first_message and "ignore all previous rules" in first_message


def test_running_it_twice_changes_nothing():
    call_command("seed_demo")
    before = snapshot()
    call_command("seed_demo")
    assert snapshot() == before


def test_reset_rebuilds_the_demo_data():
    call_command("seed_demo")
    Ticket.objects.filter(reference="TCK-1001").update(subject="edited")
    call_command("seed_demo", reset=True)
    assert Ticket.objects.get(reference="TCK-1001").subject == "My mug arrived broken"
    assert Ticket.objects.count() == 4
