from dataclasses import dataclass

from django.contrib.auth.models import User

from agent.models import AgentRun
from orders.models import Customer
from tickets.models import Ticket


@dataclass(frozen=True)
class RunContext:
    """Who acts and on whose data, bound when a run starts (DESIGN §1, invariant 2).

    Tools take identity and scope from here, never from their arguments.
    """

    run: AgentRun
    actor: User
    role: str
    ticket: Ticket
    customer: Customer

    @classmethod
    def for_run(cls, run: AgentRun) -> "RunContext":
        """The scope is the customer bound on the run, not the ticket's customer now: a
        ticket moved to another customer mid-run must not widen what the next step sees."""
        ticket = Ticket.objects.select_related("customer", "order").get(pk=run.ticket_id)
        # Runs from before the customer was bound carry none: the ticket's is all there is.
        customer = Customer.objects.get(pk=run.customer_id) if run.customer_id else ticket.customer
        return cls(
            run=run, actor=run.started_by, role=run.actor_role, ticket=ticket, customer=customer
        )

    @property
    def ticket_order_id(self) -> str | None:
        """The ticket's order, when it belongs to the bound customer."""
        order = self.ticket.order if self.ticket.order_id else None
        if order is None or order.customer_id != self.customer.pk:
            return None
        return order.order_id
