"""One case on a fresh demo shop, inside an eval worker process (evals/worker.py).

Tools run on threads with their own database connections, so a case cannot be isolated by a
transaction rolled back afterwards: each case gets its own SQLite file, copied from a template
that was migrated and seeded once, and this process points its database settings at it (as
Django's test runner does for a test database) before anything connects. The run then goes
through the real runtime: run_start, then agent.runtime.run_step.advance step by step, as the Celery
task would, with the same retries and backoff.
"""

import copy
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
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

from agent.answer_check import check_text
from agent.executor.pool import close_idle_threads
from agent.models import AgentMessage, AgentRun, RunEvent, ToolCallLog
from agent.runtime import run_step
from agent.runtime.small_model import DESK_ANSWERED
from agent.services import run_start
from agent.tools.registry import get_tool, replaced_handler
from config.errors import ApplicationError
from config.money import money_str
from config.roles import support_role
from desk.demo import seed_demo
from evals.case_files import TOOL_TIMEOUT_S_DEFAULT
from orders.models import Customer, Order, OrderLine
from policies.selectors import published_version
from policies.services import policy_version_draft_from, policy_version_publish
from refunds.adapters import SimulatedMode
from refunds.execution import refund_execute
from refunds.identity import derive_request_id, fingerprint, fingerprint_params
from refunds.models import RefundConfirmation, RefundEvent, RefundRequest
from refunds.services import refund_approve, refund_propose, refund_reject, refund_withdraw
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
    """The shop's state before the run, step by step. Not one transaction: a refund set up as
    executed calls the (simulated) provider, which the services do only outside one."""
    for number, step in enumerate(steps, start=1):
        if step["kind"] in RUN_CONDITIONS:
            continue
        try:
            SETUP_STEPS[step["kind"]](step, ticket)
        except (HarnessError, ApplicationError) as exc:
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
    if step["status"] in HISTORY_STATUSES:
        _refund_history(step, ticket)
    else:
        _refund_through_services(step, ticket)


# Set up as rows written as history; every other status is reached through the services.
HISTORY_STATUSES = (RefundRequest.Status.SUCCEEDED, RefundRequest.Status.PENDING_APPROVAL)
# How the simulated provider answers an approved refund set up in these statuses.
PROVIDER_MODE_FOR = {
    # The provider makes the refund but its answer never arrives: whether money moved is not
    # known until reconciliation asks.
    RefundRequest.Status.OUTCOME_UNKNOWN: SimulatedMode.TIMEOUT,
    # The provider accepted the refund and has not settled it.
    RefundRequest.Status.PROVIDER_PENDING: SimulatedMode.PENDING,
}


@transaction.atomic
def _refund_history(step: dict, ticket: Ticket) -> None:
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


def _refund_through_services(step: dict, ticket: Ticket) -> None:
    """An earlier refund the desk's own services took to `step["status"]`: proposed by its
    requester (the policy checks it), then rejected or approved by SETUP_REVIEWER, or withdrawn
    by its requester; an approved one is executed against the simulated provider, answering so
    that the refund ends in that status. The ticket gets the notes the desk writes."""
    users = get_user_model().objects
    order = Order.objects.filter(order_id=step["order_id"]).first()
    if order is None:
        raise HarnessError(f"no order {step['order_id']}")
    requester = users.get(username=step.get("requested_by", SETUP_REQUESTER))
    reviewer = users.get(username=SETUP_REVIEWER)
    proposal = refund_propose(
        ticket=ticket,
        order=order,
        amount=Decimal(str(step["amount"])),
        reason=step["reason"],
        explanation=step.get("explanation", "An earlier refund on this order."),
        requested_by=requester,
        role=support_role(requester) or "",
    )
    refund, confirmation = proposal.refund, proposal.confirmation
    status = step["status"]
    if status == RefundRequest.Status.REJECTED:
        refund_reject(
            refund=refund,
            reviewer=reviewer,
            version=confirmation.version,
            note=step.get("note", ""),
        )
        return
    if status == RefundRequest.Status.WITHDRAWN:
        refund_withdraw(refund=refund, by=requester, note=step.get("note", ""))
        return
    refund_approve(
        refund=refund,
        reviewer=reviewer,
        version=confirmation.version,
        fingerprint=confirmation.fingerprint,
    )
    # The eval's broker is a throwaway folder: the execute task the approval enqueued never
    # runs, so the refund is executed here, once, against the simulated provider.
    with override_settings(
        REFUND_ADAPTER="simulated",
        SIMULATED_PROVIDER_MODE=PROVIDER_MODE_FOR[status],
        SIMULATED_PROVIDER_LATENCY_S=0.0,
    ):
        reached = refund_execute(refund_pk=refund.pk)
    if reached != status:
        raise HarnessError(f"the refund ended {reached}, not {status}")


@transaction.atomic
def _order_currency(step: dict, ticket: Ticket) -> None:
    """The order as if it had been paid in another currency: the amount paid and its one line's
    price in that currency."""
    order = Order.objects.select_for_update().filter(order_id=step["order_id"]).first()
    if order is None:
        raise HarnessError(f"no order {step['order_id']}")
    if order.refund_requests.exists():
        raise HarnessError(
            f"order {order.order_id} already has refunds in {order.currency}; pick another"
        )
    lines = list(order.lines.all())
    if len(lines) != 1:
        raise HarnessError(f"order {order.order_id} has {len(lines)} lines, not one")
    amount = Decimal(step["amount_paid"])
    Order.objects.filter(pk=order.pk).update(currency=step["currency"], amount_paid=amount)
    OrderLine.objects.filter(pk=lines[0].pk).update(unit_price=amount / lines[0].quantity)


def _role_limits(step: dict, ticket: Ticket) -> None:
    """A new version of the refund policy, published as admin publishes one, that sets the
    role limits of `step["currency"]`; R-5 states them."""
    published = published_version()
    currency, limits = step["currency"], step["limits"]
    rules = copy.deepcopy(published.rules)
    rules["role_limits"][currency] = limits
    stated = "; ".join(f"{role}s up to {limit} {currency}" for role, limit in limits.items())
    clauses = [
        {
            "ref": clause.ref,
            "title": clause.title,
            "text": clause.text + (f" In {currency}: {stated}." if clause.ref == "R-5" else ""),
        }
        for clause in published.clauses.order_by("ref")
    ]
    draft = policy_version_draft_from(version=published, rules=rules, clauses=clauses)
    policy_version_publish(version=draft)


SETUP_STEPS = {
    "customer_message": _customer_message,
    "order_note": _order_note,
    "customer_name": _customer_name,
    "refund": _refund,
    "order_currency": _order_currency,
    "role_limits": _role_limits,
}


# --- Conditions that hold while the run goes -------------------------------------------------

# A stuck handler is let go this long after it was called at the latest, even if the case
# somehow never ends (the harness gives up on a run long before).
STUCK_AT_MOST_S = 300.0


@contextmanager
def tool_not_answering(name: str, *, timeout_s: float) -> Iterator[None]:
    """While the block runs, the tool `name` does not answer: its handler waits until the block
    ends. The executor gives up on it after TOOL_TIMEOUT_S, set to `timeout_s` for the block,
    and answers the model TOOL_TIMEOUT exactly as for a provider or database that hangs. When
    the block ends the stuck handlers are let go without doing anything, so their call threads
    are free before the next case's database replaces this one."""
    released = threading.Event()

    def stuck(ctx, args: dict) -> dict:
        released.wait(STUCK_AT_MOST_S)
        return {"released_after_the_run": True}

    try:
        with (
            override_settings(TOOL_TIMEOUT_S=timeout_s),
            replaced_handler(name, handler=stuck),
        ):
            yield
    finally:
        released.set()


def _tool_timeout(step: dict) -> AbstractContextManager[None]:
    return tool_not_answering(step["tool"], timeout_s=step.get("timeout_s", TOOL_TIMEOUT_S_DEFAULT))


RUN_CONDITIONS = {"tool_timeout": _tool_timeout}


def run_conditions(steps: list[dict], stack: ExitStack) -> None:
    for step in steps:
        if step["kind"] in RUN_CONDITIONS:
            stack.enter_context(RUN_CONDITIONS[step["kind"]](step))


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
