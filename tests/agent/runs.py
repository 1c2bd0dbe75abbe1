"""Helpers for driving assistant runs step by step in the test process."""

import json
import threading
import uuid
from contextlib import contextmanager

from django.contrib.auth import get_user_model

from agent import services
from agent.context import RunContext
from agent.executor.calls import execute_tool_call
from agent.mcp.auth import session_scope
from agent.mcp.sessions import mcp_session_start
from agent.mcp_tokens import mcp_token_issue
from agent.models import AgentMessage, AgentRun, McpSession
from agent.runtime import run_step
from agent.tools.registry import SUPPORT_ROLES, Tool, ToolKind, registered_tool
from config.roles import support_role
from tickets.models import Ticket


def start_run(
    message: str = "How much did the customer pay for the mug?",
    *,
    reference: str = "TCK-1001",
    username: str = "agent",
) -> AgentRun:
    ticket = Ticket.objects.get(reference=reference)
    user = get_user_model().objects.get(username=username)
    return services.run_start(ticket=ticket, user=user, message=message)


def run_context(username: str = "agent", reference: str = "TCK-1001") -> RunContext:
    """The scope a run by `username` on ticket `reference` binds (the run row is made, no step
    runs), for calling tools directly."""
    user = get_user_model().objects.get(username=username)
    role = support_role(user)
    assert role is not None, f"{username} has no support role"
    run = AgentRun.objects.create(
        ticket=Ticket.objects.get(reference=reference), started_by=user, actor_role=role
    )
    return RunContext.for_run(run)


def looked_up(ctx: RunContext, *order_ids: str, asked: str = "") -> RunContext:
    """`ctx` after get_order on each of `order_ids` (create_refund runs only on an order the
    run looked up, DESIGN §16); `asked`: the support agent's request, as run_start stores it."""
    if asked:
        services.run_message_append(run=ctx.run, role=AgentMessage.Role.USER, content=asked)
    for order_id in order_ids:
        assert call_tool(ctx, "get_order", {"order_id": order_id})["ok"] is True
    return ctx


def call_tool(
    ctx, name: str, arguments, *, call_id: str | None = None, position_in_reply: int = 0
) -> dict:
    """One tool call through the executor, as the model would send it (`arguments` as a dict,
    or as the raw text)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return execute_tool_call(
        ctx,
        tool_call_id=call_id or f"call_{uuid.uuid4().hex[:12]}",
        name=name,
        arguments_raw=raw,
        position_in_reply=position_in_reply,
    )


def drive(run: AgentRun, *, max_deliveries: int = 30) -> list[run_step.StepOutcome]:
    """Deliver steps synchronously, as the worker would, until the run ends: the first one as
    the step the run was handed to, if any, else taking it whatever its version; the next
    ones as the owner and with the version the previous step left."""
    outcomes: list[run_step.StepOutcome] = []
    run.refresh_from_db()
    owner = run.lease_owner or None
    version, attempt = (run.version if owner else None), 0
    for _ in range(max_deliveries):
        outcome = run_step.advance(
            run_id=run.pk, expected_version=version, attempt=attempt, owner=owner
        )
        outcomes.append(outcome)
        if outcome.kind in (run_step.StepKind.FINISHED, run_step.StepKind.SKIPPED):
            break
        attempt = attempt + 1 if outcome.kind == run_step.StepKind.RETRY else 0
        version, owner = outcome.version, outcome.owner
    run.refresh_from_db()
    return outcomes


def schema(name: str) -> dict:
    return {"type": "object", "properties": {}, "required": [], "additionalProperties": False}


@contextmanager
def probe_tool(name: str, body=None, *, quick: bool = False):
    """A read tool whose calls are counted; `body(calls)` runs inside the handler. `quick`:
    declared a quick lookup (Tool.quick)."""
    calls: list[dict] = []
    lock = threading.Lock()

    def handler(ctx, args):
        with lock:
            calls.append(args)
        if body is not None:
            body(calls)
        return {"probed": len(calls)}

    tool = Tool(
        name=name,
        description=f"Test probe {name}.",
        parameters=schema(name),
        handler=handler,
        kind=ToolKind.READ,
        roles=SUPPORT_ROLES,
        quick=quick,
    )
    with registered_tool(tool):
        yield calls


def open_mcp_session(
    username: str = "agent", reference: str = "TCK-1001", *, transport_session_id: str = ""
) -> McpSession:
    """An MCP session of `username` on ticket `reference`, opened with an MCP token made for
    that ticket, as the HTTP gate opens one."""
    user = get_user_model().objects.get(username=username)
    ticket = Ticket.objects.get(reference=reference)
    token = mcp_token_issue(user=user, ticket=ticket, days=1).token
    scope = session_scope(token=token, ticket_reference=reference, source="the test")
    return mcp_session_start(
        scope=scope,
        transport="http",
        transport_session_id=transport_session_id or f"sid-{uuid.uuid4().hex[:12]}",
    )
