"""The body of the `create_refund` tool: a proposal only, never an execution.

What the model gets back names the request and its version but never the fingerprint: only a
reviewer, who sees the fingerprint in the queue, can approve (DESIGN §1, invariant 1).
"""

from agent.context import RunContext
from agent.errors import ErrorCode, ToolError
from config.errors import ApplicationError
from config.money import money_str
from orders.models import Order
from refunds import services
from refunds.errors import RefundRefused
from refunds.models import RefundRequest

AUTHORITY_CLAUSE = "R-5"

PROPOSAL_MESSAGES = {
    "created": "Proposed a refund of {amount} {currency} (version {version})",
    "unchanged": "This refund of {amount} {currency} is already proposed (version {version}) "
                 "with these parameters; nothing changed",
    "new_version": "Updated the proposal to {amount} {currency} as version {version}; the "
                   "previous version can no longer be approved",
    "renewed": "The previous proposal lapsed; proposed {amount} {currency} again as version "
               "{version}",
}


def create_refund(ctx: RunContext, args: dict) -> dict:
    order = Order.objects.filter(order_id=args["order_id"], customer=ctx.customer).first()
    if order is None:
        # The same answer whether the order is absent or another customer's.
        raise ToolError(ErrorCode.NOT_FOUND,
                        f"No order {args['order_id']} was found for this ticket's customer.",
                        next_actions=["list_customer_orders"])
    try:
        proposal = services.refund_propose(
            ticket=ctx.ticket, order=order, amount=args["amount"], reason=args["reason"],
            explanation=args["explanation"], requested_by=ctx.actor, role=ctx.role,
            run=ctx.run,
        )
    except RefundRefused as refusal:
        raise _policy_error(refusal) from None
    except services.RefundAlreadyDecided as decided:
        raise ToolError(
            ErrorCode.REFUND_ALREADY_DECIDED, decided.message,
            next_actions=["get_refund_status"], extra=decided.extra,
        ) from None
    except ApplicationError as refusal:
        raise ToolError(ErrorCode.INVALID_ARGUMENTS, refusal.message) from None

    refund, confirmation = proposal.refund, proposal.confirmation
    figures = {"amount": money_str(refund.amount), "currency": refund.currency,
               "version": confirmation.version}
    message = PROPOSAL_MESSAGES[proposal.outcome].format(**figures)
    return {
        "status": refund.status,
        "request_id": refund.request_id,
        "version": confirmation.version,
        "amount": money_str(refund.amount),
        "currency": refund.currency,
        "policy": refund.policy_evaluation,
        "expires_at": confirmation.expires_at.isoformat(),
        "message": f"{message} — waiting for a reviewer. Not refunded yet.",
    }


def link_proposing_call(row) -> None:
    """Point a new request at the tool call that proposed it (its ToolCallLog row).

    Runs in the transaction that writes the row; a later call that only re-proposes or
    corrects the intent leaves the first link alone (every call stays in the run's trail).
    """
    request_id = row.result.get("request_id")
    if request_id:
        RefundRequest.objects.filter(request_id=request_id, tool_call=None,
                                     run_id=row.run_id).update(tool_call=row)


def _policy_error(refusal: RefundRefused) -> ToolError:
    failing = refusal.extra.get("verdicts", [])
    clauses = refusal.extra.get("failing_clauses", [])
    extra = {"clauses": clauses, "verdicts": failing}
    if clauses == [AUTHORITY_CLAUSE]:
        detail = failing[0]["detail"] if failing else ""
        return ToolError(
            ErrorCode.AMOUNT_OVER_ROLE_LIMIT,
            f"{AUTHORITY_CLAUSE}: {detail}. The amount is over what your role may propose; "
            "escalate to a supervisor.",
            next_actions=["escalate to a supervisor", "propose a smaller amount if justified"],
            extra=extra,
        )
    details = "; ".join(f"{v['clause']}: {v['detail']}" for v in failing)
    return ToolError(
        ErrorCode.POLICY_DENIED,
        f"The refund policy does not allow this refund ({details}).",
        next_actions=["search_policies", "explain the policy to the agent"],
        extra=extra,
    )
