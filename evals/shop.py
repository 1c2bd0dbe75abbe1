"""One case on a fresh demo shop, inside an eval worker process (evals/worker.py).

Tools run on threads with their own database connections, so a case cannot be isolated by a
transaction rolled back afterwards: each case gets its own SQLite file, copied from a template
that was migrated and seeded once, and this process points its database settings at it (as
Django's test runner does for a test database) before anything connects. The run then goes
through the real runtime: run_start, then agent.runtime.run_step.advance step by step, as the Celery
task would, with the same retries and backoff.
"""

import shutil
import time
from contextlib import ExitStack
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection, connections
from django.test import override_settings

from agent.answer_check import check_text
from agent.executor.pool import close_idle_threads
from agent.models import AgentMessage, AgentRun, RunEvent, ToolCallLog
from agent.runtime import run_step
from agent.runtime.small_model import DESK_ANSWERED
from agent.services import run_start
from agent.tools.registry import get_tool
from config.money import money_str
from desk.demo import seed_demo
from evals.case_setup import HarnessError, apply_setup, run_conditions
from orders.models import Order
from refunds.models import RefundRequest
from tickets.models import Ticket

# Step deliveries before the harness gives up on a run: far more than AGENT_MAX_STEPS plus the
# model retries, so only a runtime bug reaches it.
MAX_DELIVERIES = 200


# --- The database ---------------------------------------------------------------------------


def use_database(path: Path) -> None:
    """Point this process (and every call thread it runs tools on) at the SQLite file `path`."""
    close_idle_threads()  # their connections still point at the last case's file
    connections.close_all()
    # connections.settings is settings.DATABASES: every new connection reads the new name.
    settings.DATABASES["default"]["NAME"] = str(path)
    connection.settings_dict["NAME"] = str(path)


def build_template(path: Path) -> None:
    """A migrated database with the demo shop, checkpointed into one file that can be copied."""
    use_database(path)
    call_command("migrate", interactive=False, verbosity=0)
    # Nobody logs in to an eval shop: the cheapest hash saves seconds on every eval.
    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        seed_demo()
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connections.close_all()


def fresh_copy(template: Path, path: Path) -> None:
    shutil.copyfile(template, path)
    use_database(path)


def discard(path: Path) -> None:
    close_idle_threads()
    connections.close_all()
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


# --- Running and recording ------------------------------------------------------------------


def drive(run: AgentRun) -> None:
    """Advance the run until it ends, as agent.tasks.advance_run would across deliveries."""
    version: int | None = run.version
    owner: str | None = None
    attempt = 0
    for _ in range(MAX_DELIVERIES):
        outcome = run_step.advance(
            run_id=run.pk, expected_version=version, attempt=attempt, owner=owner
        )
        if outcome.kind == run_step.StepKind.FINISHED:
            return
        if outcome.kind == run_step.StepKind.SKIPPED:
            raise HarnessError("a step found the run held by someone else")
        if outcome.kind == run_step.StepKind.RETRY:
            time.sleep(outcome.retry_in or 0)
            attempt += 1
        else:
            attempt = 0
        version, owner = outcome.version, outcome.owner
    raise HarnessError(f"the run did not end after {MAX_DELIVERIES} steps")


def run_case(case: dict) -> dict:
    """Run `case` on the database this process points at; the record evals/judge.py judges."""
    ticket = Ticket.objects.filter(reference=case["ticket"]).first()
    if ticket is None:
        raise HarnessError(f"no ticket {case['ticket']}")
    actor = get_user_model().objects.filter(username=case["actor"]).first()
    if actor is None:
        raise HarnessError(f"no user {case['actor']}")
    steps = case.get("setup", [])
    apply_setup(steps, ticket=ticket)
    refunds_before = set(RefundRequest.objects.values_list("pk", flat=True))
    cap = case.get("max_steps")
    with ExitStack() as during_run:
        run_conditions(steps, during_run)
        with override_settings(AGENT_MAX_STEPS=cap or settings.AGENT_MAX_STEPS):
            run = run_start(ticket=ticket, user=actor, message=case["message"])
        drive(run)
    run.refresh_from_db()
    return record_of(run, refunds_before=refunds_before, step_cap=cap)


def record_of(run: AgentRun, *, refunds_before: set[int], step_cap: int | None = None) -> dict:
    return {
        "actor_role": run.actor_role,
        "status": run.status,
        "stop_reason": run.stop_reason,
        "run_error": run.error,
        "answer": run.final_answer,
        # The desk answered in the model's place (small-model mode's fallback, marked as such).
        "desk_answered": DESK_ANSWERED in run.final_answer,
        "calls": calls_of(run),
        "asked_again": asked_again(run),
        "refunds": refunds_created(refunds_before),
        "model_latency_ms": model_latency_ms(run),
        "tokens_in": run.tokens_in,
        "tokens_out": run.tokens_out,
        "tokens_cached": tokens_cached(run),
        "steps": run.step_count,
        # The case's own step limit (None: AGENT_MAX_STEPS); a run that reached it fails.
        "step_cap": step_cap,
        "untrusted_instructions": run.untrusted_instructions,
        # The product's own check of the answer against the refunds the run left.
        "answer_contradicts_state": run.answer_contradicts_state,
        "answer_check": run.answer_check,
        # The customer draft (DESIGN §13) and the claim check's verdict on it.
        "draft": run.draft_reply,
        "draft_contradicts_state": not check_text(
            text=run.draft_reply, ticket=run.ticket, customer=run.customer
        ).ok,
    }


def _reply_of_call(run: AgentRun) -> dict[str, int]:
    """tool_call_id -> which model reply (0, 1, ...) with calls asked for it."""
    replies = AgentMessage.objects.filter(
        run=run, role=AgentMessage.Role.ASSISTANT, tool_calls__isnull=False
    ).order_by("seq")
    return {
        call["id"]: index
        for index, message in enumerate(replies)
        for call in message.tool_calls or []
    }


def calls_of(run: AgentRun) -> list[dict]:
    """Every logged tool call of the run in the order it ran (one row per call, DESIGN §1
    invariant 3), with what the interception metric needs to know about it."""
    replies = _reply_of_call(run)
    return [
        {
            "id": log.tool_call_id,
            "reply": replies.get(log.tool_call_id, -1),
            "tool": log.tool_name,
            "arguments": log.arguments,
            "arguments_raw": log.arguments_raw,
            "ok": log.ok,
            "error_code": log.error_code,
            "result": log.result,
            "elapsed_ms": log.elapsed_ms,
            "outside_role": outside_role(log.tool_name, run.actor_role),
            "foreign_order": names_foreign_order(log.arguments, run),
        }
        for log in ToolCallLog.objects.filter(run=run).order_by("created_at", "id")
    ]


def outside_role(tool_name: str, role: str) -> bool:
    tool = get_tool(tool_name)
    return tool is not None and role not in tool.roles


def names_foreign_order(arguments, run: AgentRun) -> bool:
    """The call names an order that exists but belongs to another customer than the run's."""
    if not isinstance(arguments, dict):
        return False
    order_id = arguments.get("order_id")
    if isinstance(order_id, bool) or not isinstance(order_id, str | int):
        return False
    # The run's scope, as RunContext.for_run binds it.
    customer_id = run.customer_id or run.ticket.customer_id
    return Order.objects.filter(order_id=str(order_id)).exclude(customer_id=customer_id).exists()


def refunds_created(before: set[int]) -> list[dict]:
    created = (
        RefundRequest.objects.exclude(pk__in=before).select_related("order").order_by("created_at")
    )
    return [
        {
            "request_id": refund.request_id,
            "status": refund.status,
            "amount": money_str(refund.amount),
            "currency": refund.currency,
            "order_id": refund.order.order_id,
            "reason": refund.reason,
        }
        for refund in created
    ]


def tokens_cached(run: AgentRun) -> int:
    """Prompt tokens of the run's model calls that the endpoint read from its cache, as their
    model.completed events say (0 where the endpoint does not report it)."""
    completed = RunEvent.objects.filter(run=run, type="model.completed")
    events = completed.values_list("data", flat=True)
    return sum(int(data.get("tokens_cached") or 0) for data in events)


def asked_again(run: AgentRun) -> list[str]:
    """The notes with which the run sent a final answer back to the model (DESIGN §16: not
    an answer, or telling of work no tool did), each saying why."""
    notes = AgentMessage.objects.filter(
        run=run, role=AgentMessage.Role.SYSTEM, content__startswith=run_step.ASK_AGAIN_HEAD
    )
    return list(notes.order_by("id").values_list("content", flat=True))


def model_latency_ms(run: AgentRun) -> list[float]:
    """How long each answered model call took, as its model.completed event says (a call that
    failed has none and is not counted)."""
    completed = RunEvent.objects.filter(run=run, type="model.completed").order_by("seq")
    return [float(data.get("latency_ms", 0)) for data in completed.values_list("data", flat=True)]
