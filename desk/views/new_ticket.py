"""/tickets/new/: an agent opens a ticket for a request that came by phone or chat, the
customer found by email or created."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.shortcuts import redirect, render

from config.errors import ApplicationError
from config.roles import support_role
from desk.views.shared import require_staff, typed
from orders.addresses import BadAddress, email_key
from orders.models import Order
from tickets import services
from tickets.models import Ticket

FORM_FIELDS = ("email", "name", "subject", "body", "order_id")


class NotTheCustomersOrder(ApplicationError):
    code = "order_not_customers"


@login_required
def ticket_new(request):
    """An agent records a request that came by phone or chat: the customer (found by email,
    or created), a subject, their words, and optionally one of their orders."""
    require_staff(request.user)
    if support_role(request.user) is None:
        raise PermissionDenied("Only interns, agents and supervisors open tickets.")
    form = {key: typed(request, key).strip() for key in FORM_FIELDS}
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
