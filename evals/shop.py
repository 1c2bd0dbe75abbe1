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
from datetime import timedelta
from decimal import Decimal
from itertools import pairwise
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection, connections, transaction
from django.test import override_settings
from django.utils import timezone

from agent.executor.pool import close_idle_threads
from agent.models import AgentMessage, AgentRun, RunEvent, ToolCallLog
from agent.runtime import run_step
from agent.services import run_start
from agent.tools.registry import get_tool
from config.money import money_str
from desk.demo import seed_demo
from orders.models import Customer, Order
from refunds.identity import derive_request_id, fingerprint, fingerprint_params
from refunds.models import RefundConfirmation, RefundEvent, RefundRequest
from tickets.models import Ticket, TicketMessage
from tickets.services import ticket_post_message

# Step deliveries before the harness gives up on a run: far more than AGENT_MAX_STEPS plus the
# model retries, so only a runtime bug reaches it.
MAX_DELIVERIES = 200
SETUP_REQUESTER = "supervisor"
SETUP_REVIEWER = "reviewer2"


class HarnessError(Exception):
    """The case could not be run as written (a setup step failed, the run never finished)."""


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


# --- Setup steps ----------------------------------------------------------------------------


def apply_setup(steps: list[dict], *, ticket: Ticket) -> None:
    with transaction.atomic():
        for number, step in enumerate(steps, start=1):
            try:
                SETUP_STEPS[step["kind"]](step, ticket)
            except HarnessError as exc:
                raise HarnessError(f"setup step {number} ({step['kind']}): {exc}") from None


def _customer_message(step: dict, ticket: Ticket) -> None:
    ticket_post_message(
        ticket=ticket,
        author_kind=TicketMessage.AuthorKind.CUSTOMER,
        body=step["body"],
        visibility=TicketMessage.Visibility.PUBLIC,
    )


def _order_note(step: dict, ticket: Ticket) -> None:
    if not Order.objects.filter(order_id=step["order_id"]).update(note=step["note"]):
        raise HarnessError(f"no order {step['order_id']}")


def _customer_name(step: dict, ticket: Ticket) -> None:
    if not Customer.objects.filter(email=step["customer_email"]).update(name=step["name"]):
        raise HarnessError(f"no customer with e-mail {step['customer_email']}")


def _refund(step: dict, ticket: Ticket) -> None:
    """An earlier refund request on the case's ticket, written as history (like the demo's
    blender refund): it is the situation the case starts from, not something the policy is
    asked about again."""
    users = get_user_model().objects
    order = Order.objects.filter(order_id=step["order_id"]).first()
    if order is None:
        raise HarnessError(f"no order {step['order_id']}")
    requester = users.get(username=step.get("requested_by", SETUP_REQUESTER))
    succeeded = step["status"] == RefundRequest.Status.SUCCEEDED
    open_intents = RefundRequest.objects.filter(ticket=ticket, order=order).exclude(
        status__in=RefundRequest.SETTLED_STATUSES
    )
    if not succeeded and open_intents.exists():
        raise HarnessError(
            f"{ticket.reference} already has an open refund request on order {order.order_id}"
        )
    settled = RefundRequest.objects.filter(
        ticket=ticket, order=order, status__in=RefundRequest.SETTLED_STATUSES
    ).count()
    refund = RefundRequest.objects.create(
        request_id=derive_request_id(
            ticket_reference=ticket.reference, order_id=order.order_id, n=settled
        ),
        ticket=ticket,
        order=order,
        amount=Decimal(str(step["amount"])),
        currency=order.currency,
        reason=step["reason"],
        explanation=step.get("explanation", "An earlier refund on this order."),
        status=step["status"],
        requested_by=requester,
        provider_refund_id=f"re_eval_{order.order_id}_{settled}" if succeeded else "",
    )
    params = fingerprint_params(refund)
    now = timezone.now()
    RefundConfirmation.objects.create(
        refund_request=refund,
        version=1,
        fingerprint=fingerprint(params),
        params=params,
        status=RefundConfirmation.Status.APPROVED
        if succeeded
        else RefundConfirmation.Status.PENDING,
        expires_at=now + timedelta(minutes=settings.CONFIRMATION_TTL_MINUTES),
        proposed_by=requester,
        decided_by=users.get(username=SETUP_REVIEWER) if succeeded else None,
        decided_at=now if succeeded else None,
    )
    history = ["", "pending_approval"]
    if succeeded:
        history += ["approved", "executing", "succeeded"]
    for from_status, to_status in pairwise(history):
        RefundEvent.objects.create(
            refund_request=refund,
            from_status=from_status,
            to_status=to_status,
            detail={"source": "eval setup"},
        )


SETUP_STEPS = {
    "customer_message": _customer_message,
    "order_note": _order_note,
    "customer_name": _customer_name,
    "refund": _refund,
}


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
    """Run `case` on the database this process points at; the record evals/metrics.py reads."""
    ticket = Ticket.objects.filter(reference=case["ticket"]).first()
    if ticket is None:
        raise HarnessError(f"no ticket {case['ticket']}")
    actor = get_user_model().objects.filter(username=case["actor"]).first()
    if actor is None:
        raise HarnessError(f"no user {case['actor']}")
    apply_setup(case.get("setup", []), ticket=ticket)
    refunds_before = set(RefundRequest.objects.values_list("pk", flat=True))
    run = run_start(ticket=ticket, user=actor, message=case["message"])
    drive(run)
    run.refresh_from_db()
    return record_of(run, refunds_before=refunds_before)


def record_of(run: AgentRun, *, refunds_before: set[int]) -> dict:
    return {
        "actor_role": run.actor_role,
        "status": run.status,
        "stop_reason": run.stop_reason,
        "run_error": run.error,
        "answer": run.final_answer,
        "calls": calls_of(run),
        "refunds": refunds_created(refunds_before),
        "model_latency_ms": model_latency_ms(run),
        "tokens_in": run.tokens_in,
        "tokens_out": run.tokens_out,
        "tokens_cached": tokens_cached(run),
        "steps": run.step_count,
        "untrusted_instructions": run.untrusted_instructions,
        # The product's own check of the answer against the refunds the run left.
        "answer_contradicts_state": run.answer_contradicts_state,
        "answer_check": run.answer_check,
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


def model_latency_ms(run: AgentRun) -> list[float]:
    """How long each answered model call took, as its model.completed event says (a call that
    failed has none and is not counted)."""
    completed = RunEvent.objects.filter(run=run, type="model.completed").order_by("seq")
    return [float(data.get("latency_ms", 0)) for data in completed.values_list("data", flat=True)]
