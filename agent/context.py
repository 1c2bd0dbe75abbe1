from dataclasses import dataclass

from django.contrib.auth.models import User

from agent.models import AgentRun, McpSession
from config.roles import support_role
from orders.models import Customer
from tickets.models import Ticket


class _BoundScope:
    """What both kinds of context derive from the scope they were bound with."""

    ticket: Ticket
    customer: Customer

    @property
    def ticket_order_id(self) -> str | None:
        """The ticket's order, when it belongs to the bound customer."""
        order = self.ticket.order if self.ticket.order_id else None
        if order is None or order.customer_id != self.customer.pk:
            return None
        return order.order_id


@dataclass(frozen=True)
class RunContext(_BoundScope):
    """Who acts and on whose data, bound when a run starts (DESIGN §1, invariant 2).

    Tools take identity and scope from here, never from their arguments.
    """

    run: AgentRun
    actor: User
    role: str
    ticket: Ticket
    customer: Customer
    # A run's tool calls belong to the run, never to an MCP session.
    mcp_session: None = None

    @classmethod
    def for_run(cls, run: AgentRun) -> "RunContext":
        """The scope is the customer bound on the run, not the ticket's customer now: a
        ticket moved to another customer mid-run must not widen what the next step sees."""
        # A step loads its run with these (agent.services.run_held / run_acquire_lease), so
        # they are as of this step.
        ticket = run.ticket
        # Runs from before the customer was bound carry none: the ticket's is all there is.
        customer = run.customer or ticket.customer
        return cls(
            run=run, actor=run.started_by, role=run.actor_role, ticket=ticket, customer=customer
        )


@dataclass(frozen=True)
class McpContext(_BoundScope):
    """The same binding for an MCP host's session (DESIGN §12): user, role, ticket and
    customer as recorded when the session started."""

    mcp_session: McpSession
    actor: User
    role: str
    ticket: Ticket
    customer: Customer
    # An MCP session's tool calls belong to no run.
    run: None = None

    @classmethod
    def for_session(cls, session: McpSession) -> "McpContext":
        ticket = Ticket.objects.select_related("customer", "order").get(pk=session.ticket_id)
        customer = Customer.objects.get(pk=session.customer_id)
        return cls(
            mcp_session=session,
            actor=session.user,
            role=session.role,
            ticket=ticket,
            customer=customer,
        )

    def role_still_held(self) -> bool:
        """Whether the user still holds, today, the role the session started with.

        A session outlives the moment it was authorised, so every call asks again: a user
        who was deactivated, or whose role was removed or changed, may not go on with it.
        The user is read fresh because roles are cached on the instance.
        """
        user = User.objects.filter(pk=self.actor.pk).first()
        return user is not None and support_role(user) == self.role


# The scope a tool call runs in: a run's, or an MCP session's.
ToolContext = RunContext | McpContext
