"""/customers/<id>/: a customer, their tickets and their refunds."""

from dataclasses import dataclass

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render

from desk.views.shared import refund_words, require_staff
from orders.models import Customer
from tickets import selectors


@dataclass(frozen=True)
class RefundRow:
    refund: object  # a refunds.RefundRequest
    words: str


@login_required
def customer_detail(request, customer_id: int):
    require_staff(request.user)
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
                RefundRow(refund, refund_words(refund.status)) for refund in overview.refunds
            ],
        },
    )
