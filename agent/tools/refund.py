"""The create_refund handler: it proposes a refund through the refunds services; a human
reviewer approves or rejects it.
"""

from agent.context import ToolContext
from agent.errors import ErrorCode, NextAction, ToolError
from agent.models import ToolCallLog
from agent.tools.guards import requester_note, require_agent_request, require_lookup
from agent.tools.reads import _scoped_order
from config.errors import ApplicationError
from config.money import money_str
from refunds import services as refund_services
from refunds.errors import AmountNotExpressible, CurrencyNotSupported, RefundRefused
from refunds.services import ProposalOutcome, RefundAlreadyDecided

AUTHORITY_CLAUSE = "R-5"

PROPOSAL_MESSAGES = {
    ProposalOutcome.CREATED: "Proposed a refund of {amount} {currency} (version {version})",
    ProposalOutcome.UNCHANGED: "This refund of {amount} {currency} is already proposed "
    "(version {version}) with these parameters; nothing changed",
    ProposalOutcome.NEW_VERSION: "Updated the proposal to {amount} {currency} as version "
    "{version}; the previous version can no longer be approved",
    ProposalOutcome.RENEWED: "The previous proposal lapsed; proposed {amount} {currency} "
    "again as version {version}",
}


def guarded_create_refund(ctx: ToolContext, args: dict) -> dict:
    """The create_refund tool's handler: the guards of DESIGN §16 (look before you act; in
    small-model mode, only what the agent asked for: agent/tools/guards.py), then the proposal
    with what the agent's words said for its reviewer."""
    order = _scoped_order(ctx, args["order_id"])
    require_lookup(ctx, order)
    require_agent_request(ctx, order, args)
    return create_refund(ctx, args, note=requester_note(ctx, order, args))


def create_refund(ctx: ToolContext, args: dict, *, note: dict | None = None) -> dict:
    """The proposal itself, for arguments the guards let through."""
    order = _scoped_order(ctx, args["order_id"])
    try:
        proposal = refund_services.refund_propose(
            ticket=ctx.ticket,
            order=order,
            amount=args["amount"],
            reason=args["reason"],
            explanation=args["explanation"],
            requested_by=ctx.actor,
            role=ctx.role,
            run=ctx.run,
            requester_note=note,
        )
    except CurrencyNotSupported as refusal:
        raise _currency_error(refusal, currency=order.currency) from None
    except RefundRefused as refusal:
        raise _policy_error(refusal) from None
    except RefundAlreadyDecided as decided:
        raise ToolError(
            ErrorCode.REFUND_ALREADY_DECIDED,
            decided.message,
            next_actions=["get_refund_status"],
            extra=decided.extra,
        ) from None
    except AmountNotExpressible as refusal:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENTS,
            refusal.message,
            next_actions=["create_refund"],
            extra={**refusal.extra, "field_errors": {"amount": refusal.message}},
        ) from None
    except ApplicationError as refusal:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENTS, refusal.message, next_actions=["create_refund"]
        ) from None

    refund, confirmation = proposal.refund, proposal.confirmation
    figures = {
        "amount": money_str(refund.amount),
        "currency": refund.currency,
        "version": confirmation.version,
    }
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


def link_proposing_call(row: ToolCallLog) -> None:
    """create_refund's after_logged hook: the request it proposed points at its log row."""
    request_id = row.result.get("request_id")
    if request_id:
        refund_services.refund_link_tool_call(request_id=request_id, tool_call=row, run=row.run)


def _policy_error(refusal: RefundRefused) -> ToolError:
    failing = refusal.extra.get("verdicts", [])
    clauses = refusal.extra.get("failing_clauses", [])
    extra = {"clauses": clauses, "verdicts": failing}
    if clauses == [AUTHORITY_CLAUSE]:
        detail = failing[0]["detail"] if failing else ""
        return ToolError(
            ErrorCode.AMOUNT_OVER_ROLE_LIMIT,
            # The clause's detail already says what to do ("escalate to a supervisor"): once.
            f"{AUTHORITY_CLAUSE}: {detail}. The amount is over what your role may propose.",
            next_actions=[NextAction.ESCALATE_TO_SUPERVISOR, NextAction.PROPOSE_SMALLER_AMOUNT],
            extra=extra,
        )
    details = "; ".join(f"{v['clause']}: {v['detail']}" for v in failing)
    return ToolError(
        ErrorCode.POLICY_DENIED,
        f"The refund policy does not allow this refund ({details}).",
        next_actions=[NextAction.EXPLAIN_POLICY, "search_policies"],
        extra=extra,
    )


def _currency_error(refusal: CurrencyNotSupported, *, currency: str) -> ToolError:
    failing = refusal.extra.get("verdicts", [])
    details = "; ".join(f"{v['clause']}: {v['detail']}" for v in failing)
    return ToolError(
        ErrorCode.CURRENCY_NOT_SUPPORTED,
        f"The refund policy sets no limits for {currency}, so the desk cannot refund this "
        f"order ({details}).",
        # No smaller amount and no other role helps: only a policy naming the currency does.
        next_actions=[NextAction.EXPLAIN_POLICY, NextAction.ASK_AGENT],
        extra={
            "currency": currency,
            "clauses": refusal.extra.get("failing_clauses", []),
            "verdicts": failing,
        },
    )


# read_tool_result: pages through a result the executor cut at MAX_RESULT_CHARS and kept whole
# in its log row. The ref names the row; the lookup is scoped to the caller's own run or MCP
# session and ticket, so a ref from anywhere else reads exactly like one that never existed.
