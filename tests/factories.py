import hashlib
from datetime import timedelta
from decimal import Decimal

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone

from config.roles import GROUP_FOR_ROLE
from ops.authentication import api_key_digest
from ops.models import ApiToken
from orders.models import Customer, Order, OrderLine
from refunds.identity import derive_request_id, fingerprint, fingerprint_params
from tickets.models import Ticket, TicketMessage


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ["username"]
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@desk.example.com")
    password = factory.django.Password("test-pass-123")

    @factory.post_generation
    def role(user, create, extracted, **kwargs):
        if create and extracted:
            user.groups.add(Group.objects.get(name=GROUP_FOR_ROLE[extracted]))


class CustomerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Customer

    name = factory.Faker("name")
    email = factory.Sequence(lambda n: f"customer{n}@example.com")


class OrderFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Order

    order_id = factory.Sequence(lambda n: f"2026{n:08d}")
    customer = factory.SubFactory(CustomerFactory)
    status = Order.Status.DELIVERED
    currency = "CNY"
    amount_paid = Decimal("129.00")
    placed_at = factory.LazyFunction(lambda: timezone.now() - timedelta(days=8))
    shipped_at = factory.LazyFunction(lambda: timezone.now() - timedelta(days=7))
    delivered_at = factory.LazyFunction(lambda: timezone.now() - timedelta(days=5))
    payment_reference = factory.LazyAttribute(lambda o: f"pi_{o.order_id}")


class OrderLineFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = OrderLine

    order = factory.SubFactory(OrderFactory)
    sku = factory.Sequence(lambda n: f"SKU-{n}")
    name = "Ceramic mug"
    category = "home"
    quantity = 1
    unit_price = Decimal("129.00")


class TicketFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Ticket

    reference = factory.Sequence(lambda n: f"TCK-{5000 + n}")
    customer = factory.SubFactory(CustomerFactory)
    subject = "Something is wrong with my order"
    order = factory.SubFactory(OrderFactory, customer=factory.SelfAttribute("..customer"))


class TicketMessageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TicketMessage

    ticket = factory.SubFactory(TicketFactory)
    author_kind = TicketMessage.AuthorKind.CUSTOMER
    body = "Hello, my order has a problem."


class AgentRunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "agent.AgentRun"

    ticket = factory.SubFactory(TicketFactory)
    started_by = factory.SubFactory(UserFactory)
    actor_role = "agent"


class RefundProposalFactory(factory.Factory):
    """A refund proposed through refunds.services.refund_propose, as the create_refund tool
    does: a RefundRequest with its pending version 1 and its first event."""

    class Meta:
        model = "refunds.RefundRequest"

    ticket = factory.SubFactory(TicketFactory)
    order = factory.SelfAttribute("ticket.order")
    amount = Decimal("129.00")
    reason = "damaged"
    explanation = "The mug arrived in pieces."
    requested_by = factory.SubFactory(UserFactory, role="agent")
    role = "agent"
    run = None

    @classmethod
    def _create(cls, model_class, **kwargs):
        from refunds.services import refund_propose

        return refund_propose(**kwargs).refund


class RefundRequestFactory(factory.django.DjangoModelFactory):
    """A refund intent on its ticket's order; `request_id` derived the way the server does."""

    class Meta:
        model = "refunds.RefundRequest"

    ticket = factory.SubFactory(TicketFactory)
    order = factory.SelfAttribute("ticket.order")
    amount = Decimal("129.00")
    currency = "CNY"
    reason = "damaged"
    explanation = "Arrived broken."
    requested_by = factory.SubFactory(UserFactory)
    # A distinct n per row: a test may settle one intent and open the next on the same order.
    request_id = factory.LazyAttributeSequence(
        lambda r, n: derive_request_id(
            ticket_reference=r.ticket.reference if r.ticket else "", order_id=r.order.order_id, n=n
        )
    )


class RefundConfirmationFactory(factory.django.DjangoModelFactory):
    """A confirmation version bound to the request row as it is when the factory runs."""

    class Meta:
        model = "refunds.RefundConfirmation"

    refund_request = factory.SubFactory(RefundRequestFactory)
    version = 1
    params = factory.LazyAttribute(lambda c: fingerprint_params(c.refund_request))
    proposed_by = factory.SelfAttribute("refund_request.requested_by")
    fingerprint = factory.LazyAttribute(lambda c: fingerprint(c.params))
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=1))


def propose_new_version(refund, *, requested_by, amount=Decimal("100.00")):
    """A correction of `refund`'s amount, proposed as refund_propose does: the intent's next
    version supersedes the pending one."""
    from refunds.services import refund_propose

    return refund_propose(
        ticket=refund.ticket,
        order=refund.order,
        amount=amount,
        reason=refund.reason,
        explanation=refund.explanation,
        requested_by=requested_by,
        role="agent",
    ).refund


def publish_role_limits(role_limits: dict):
    """Publish the refund policy's next version with these per-currency role limits, e.g.
    {"CNY": {"agent": "500.00"}, "KWD": {"agent": "20.00"}}; returns the new version."""
    from policies.selectors import published_version
    from policies.services import policy_version_draft_from, policy_version_publish

    current = published_version()
    draft = policy_version_draft_from(
        version=current, rules={**current.rules, "role_limits": role_limits}
    )
    return policy_version_publish(version=draft)


def demo_refund(ticket, order_id: str, status: str, amount: str):
    """A refund request in `status` on the demo shop's order `order_id`, on `ticket`."""
    from orders.models import Order

    return RefundRequestFactory(
        ticket=ticket,
        order=Order.objects.get(order_id=order_id),
        amount=Decimal(amount),
        status=status,
    )


def api_token_key(user) -> str:
    """A REST API token's key for `user`, the same one on every call while the user keeps it
    (the desk stores only digests, so it is made from the user rather than drawn at random)."""
    key = hashlib.sha256(f"test-api-token:{user.pk}:{user.username}".encode()).hexdigest()[:40]
    ApiToken.objects.get_or_create(
        key_digest=api_key_digest(key), defaults={"user": user, "key_hint": key[:6]}
    )
    return key
