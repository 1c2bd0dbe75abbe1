"""What an MCP session's call is answered before it runs (DESIGN §17): past its user's
MCP_CALLS_PER_MINUTE it is refused RATE_LIMITED; the same call (tool and canonical arguments)
made again within REPEAT_WINDOW is answered with the logged result of the one that ran, and
runs nothing. A host runs its own loop, which the desk cannot stop; this keeps one stuck in a
loop from hammering the desk. Both answers are logged like any other call.
"""

from datetime import timedelta
from math import ceil

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from agent.context import McpContext
from agent.errors import ErrorCode
from agent.executor.outcome import Outcome, _failure
from agent.models import ToolCallLog

RATE_WINDOW = timedelta(minutes=1)
# Long enough for a host stuck in a loop, short enough that an order's refund status asked
# again later is looked up again.
REPEAT_WINDOW = timedelta(minutes=5)


def rate_limited(ctx: McpContext, *, tool_name: str) -> Outcome | None:
    """RATE_LIMITED when the session's desk user made MCP_CALLS_PER_MINUTE calls in the last
    minute (refused ones do not count).

    Counted per user, over all their sessions and tokens: a budget per session let a host
    multiply it by opening more sessions. A token belongs to one user, so its sessions share
    the budget too."""
    limit = settings.MCP_CALLS_PER_MINUTE
    if limit <= 0:
        return None
    since = timezone.now() - RATE_WINDOW
    made = ToolCallLog.objects.filter(
        mcp_session__user_id=ctx.mcp_session.user_id, created_at__gte=since
    ).exclude(error_code=ErrorCode.RATE_LIMITED)
    times = list(made.order_by("-created_at").values_list("created_at", flat=True)[:limit])
    if len(times) < limit:
        return None
    wait = max(ceil((times[-1] + RATE_WINDOW - timezone.now()).total_seconds()), 1)
    return _failure(
        ErrorCode.RATE_LIMITED,
        f"This desk user's MCP sessions made {limit} tool calls in the last minute, as many "
        f"as are run per minute for one user; nothing was run. Call again in {wait} seconds.",
        retryable=True,
        next_actions=[tool_name] if tool_name else [],
        retry_after_s=wait,
    )


def answered_before(ctx: McpContext, *, tool_name: str, args_digest: str) -> Outcome | None:
    """The logged answer of the same call, run in this session within REPEAT_WINDOW and not
    worth running again (a success, or a refusal that says so)."""
    row = (
        ToolCallLog.objects.filter(
            mcp_session=ctx.mcp_session,
            tool_name=tool_name,
            args_digest=args_digest,
            answered_from__isnull=True,
            created_at__gte=timezone.now() - REPEAT_WINDOW,
        )
        .filter(Q(ok=True) | Q(retryable=False))
        .order_by("-created_at", "-id")
        .first()
    )
    if row is None:
        return None
    return Outcome(
        result=row.result,
        retryable=row.retryable,
        error_code=row.error_code,
        answered_from=row.pk,
    )
