from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser

from agent.models import AgentRun
from orders.models import Customer
from tickets.models import Ticket


@dataclass(frozen=True)
class RunContext:
    """Who acts and on whose data, bound when a run starts (DESIGN §1, invariant 2).

    Tools take identity and scope from here, never from their arguments.
    """

    run: AgentRun
    actor: AbstractBaseUser
    role: str
    ticket: Ticket
    customer: Customer

    @classmethod
    def for_run(cls, run: AgentRun) -> "RunContext":
        ticket = Ticket.objects.select_related("customer", "order").get(pk=run.ticket_id)
        return cls(run=run, actor=run.started_by, role=run.actor_role, ticket=ticket,
                   customer=ticket.customer)
