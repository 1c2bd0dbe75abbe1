"""GET /api/customers/<id>/: a customer's orders with what is left to refund, their tickets and
their refund requests, for desk staff; never another customer's."""

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from orders.models import Customer, Order
from refunds.services import refund_propose
from tests.factories import (
    CustomerFactory,
    OrderFactory,
    RefundRequestFactory,
    TicketFactory,
    UserFactory,
)
from tickets.models import Ticket

pytestmark = pytest.mark.django_db


def api_as(username: str) -> APIClient:
    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(username=username))
    return client


def customer_named(name: str) -> Customer:
    return Customer.objects.get(name=name)


def overview(customer: Customer, *, by: str = "agent") -> dict:
    response = api_as(by).get(f"/api/customers/{customer.pk}/")
    assert response.status_code == 200, response.content
    return response.json()


def balances(body: dict) -> list[tuple]:
    return [
        (o["order_id"], o["amount_paid"], o["refunded"], o["refundable"]) for o in body["orders"]
    ]


def refunds(body: dict) -> list[tuple]:
    return [(r["ticket"], r["order_id"], r["amount"], r["status"]) for r in body["refund_requests"]]


def test_a_customer_with_no_refunds_can_have_everything_back(demo):
    li = customer_named("Li Wei")

    body = overview(li)

    assert (body["id"], body["name"], body["email"]) == (li.pk, "Li Wei", "li.wei@example.com")
    assert balances(body) == [
        ("202610110087", "129.00", "0.00", "129.00"),
        ("202610150012", "899.00", "0.00", "899.00"),
        ("202609020031", "459.00", "0.00", "459.00"),
    ]
    assert body["refund_requests"] == []


def test_what_was_refunded_is_no_longer_refundable(demo):
    body = overview(customer_named("Maria Garcia"))

    assert balances(body)[0] == ("202610180099", "599.00", "200.00", "399.00")
    assert refunds(body) == [(None, "202610180099", "200.00", "succeeded")]
    assert body["refund_requests"][0]["reason"] == "damaged"


def test_only_refunds_that_may_have_paid_out_count_against_the_balance(demo):
    headphones = Ticket.objects.get(reference="TCK-1004")
    RefundRequestFactory(ticket=headphones, amount=Decimal("99.00"), status="succeeded")
    RefundRequestFactory(ticket=headphones, amount=Decimal("50.00"), status="rejected")
    RefundRequestFactory(ticket=headphones, amount=Decimal("25.50"), status="outcome_unknown")
    mug = Ticket.objects.get(reference="TCK-1001")
    refund_propose(
        ticket=mug,
        order=mug.order,
        amount=Decimal("129.00"),
        reason="damaged",
        explanation="Arrived in pieces.",
        requested_by=get_user_model().objects.get(username="agent"),
        role="agent",
    )

    body = overview(customer_named("Li Wei"))

    assert balances(body)[:2] == [
        ("202610110087", "129.00", "0.00", "129.00"),
        ("202610150012", "899.00", "124.50", "774.50"),
    ]
    assert refunds(body) == [
        ("TCK-1001", "202610110087", "129.00", "pending_approval"),
        ("TCK-1004", "202610150012", "25.50", "outcome_unknown"),
        ("TCK-1004", "202610150012", "50.00", "rejected"),
        ("TCK-1004", "202610150012", "99.00", "succeeded"),
    ]


def test_it_lists_the_customer_s_tickets_and_no_one_else_s(demo):
    li = customer_named("Li Wei")
    # Another customer's ticket, even about Li Wei's order, is not hers.
    TicketFactory(
        subject="About someone else's mug", order=Order.objects.get(order_id="202610110087")
    )
    RefundRequestFactory(ticket=Ticket.objects.get(reference="TCK-1002"))

    body = overview(li)

    assert sorted(t["reference"] for t in body["tickets"]) == ["TCK-1001", "TCK-1004"]
    assert {t["reference"]: t["order_id"] for t in body["tickets"]} == {
        "TCK-1001": "202610110087",
        "TCK-1004": "202610150012",
    }
    assert body["refund_requests"] == []


def test_an_unknown_customer_is_a_404_json(demo):
    response = api_as("agent").get("/api/customers/999999/")

    assert response.status_code == 404
    assert response.json() == {"message": "Not found.", "code": "not_found", "extra": {}}


@pytest.mark.parametrize("role", ["intern", "agent", "agent2", "supervisor", "reviewer"])
def test_any_desk_role_sees_a_customer(demo, role):
    assert overview(customer_named("Li Wei"), by=role)["name"] == "Li Wei"


def test_a_user_with_no_desk_role_is_refused(demo):
    client = APIClient()
    client.force_authenticate(UserFactory(username="stranger"))

    response = client.get(f"/api/customers/{customer_named('Li Wei').pk}/")

    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"


def test_an_anonymous_caller_is_asked_to_authenticate(demo):
    response = APIClient().get(f"/api/customers/{customer_named('Li Wei').pk}/")

    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"


def customer_with_orders(count: int) -> Customer:
    """Each order with a ticket and a succeeded refund on it."""
    customer = CustomerFactory()
    for order in OrderFactory.create_batch(count, customer=customer):
        ticket = TicketFactory(customer=customer, order=order)
        RefundRequestFactory(ticket=ticket, amount=Decimal("10.00"), status="succeeded")
    return customer


def queries_for(customer: Customer) -> int:
    client = api_as("agent")  # a fresh user: its roles are looked up again
    with CaptureQueriesContext(connection) as queries:
        body = client.get(f"/api/customers/{customer.pk}/").json()
    assert {o["refunded"] for o in body["orders"]} == {"10.00"}
    return len(queries)


def test_the_queries_do_not_grow_with_the_orders(demo):
    few = queries_for(customer_with_orders(2))
    many = queries_for(customer_with_orders(12))

    assert many == few
    assert few <= 8
