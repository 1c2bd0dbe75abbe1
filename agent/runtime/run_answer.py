"""A run's answer as the support agent reads it, rendered when it is read (DESIGN §13, §18).

* `run_did`: what the run did, from its tool log (agent/runtime/records.py), in the language
  of the agent's own request, without the lines the answer already says (its records block).
* `since_answer`: what happened to the refunds the answer spoke of after it was written, from
  the refunds' own history ("Since this answer: the refund rf_… was approved by Rita at …"),
  so an answer made stale by a later decision says so wherever it is shown. The refunds it
  spoke of are found by state, never by reading its prose: those the run proposed or whose
  status it read, and those of the orders it looked up or names by number.
"""

from dataclasses import dataclass, field
from datetime import datetime

from agent.answer_check import ORDER_ID
from agent.models import AgentMessage, AgentRun, RunEvent, ToolCallLog
from agent.runtime.record_words import words_for
from agent.runtime.records import record_language, run_record, said_in
from config.times import when
from refunds.models import RefundEvent, RefundRequest
from tickets.people import display_names

# The changes an answer's reader must hear of: a decision, or the money's last word.
CHANGES_TOLD = ("approved", "rejected", "withdrawn", "succeeded", "failed", "expired")
# Tool calls whose results name refund requests the run spoke of.
REFUND_TOOLS = ("create_refund", "get_refund_status")
ORDER_TOOLS = ("get_order", "list_customer_orders", "create_refund", "get_refund_status")


def agent_request(run: AgentRun) -> str:
    """What the support agent typed into the run."""
    return "\n".join(
        AgentMessage.objects.filter(run=run, role=AgentMessage.Role.USER)
        .order_by("seq")
        .values_list("content", flat=True)
    )


def run_language(run: AgentRun) -> str:
    """The language the desk speaks to the agent in about this run: their request's."""
    return record_language(agent_request(run))


def _logged_calls(run: AgentRun) -> list[dict]:
    calls = run.tool_calls.order_by("created_at", "id")
    return [
        dict(row)
        for row in calls.values("tool_name", "ok", "error_code", "result", "arguments_raw")
    ]


def run_did(run: AgentRun) -> list[str]:
    """What the run did, from its tool log, in the agent's language; lines the answer shown
    beside it already says (the records block under a small model's answer) are left out."""
    lines = run_record(_logged_calls(run), language=run_language(run))
    return [line for line in lines if not said_in(line, run.final_answer)]


def answered_at(run: AgentRun) -> datetime | None:
    """When the run's answer was written: when the run completed (None: it has no answer)."""
    if run.status != AgentRun.Status.COMPLETED or not run.final_answer:
        return None
    completed = (
        RunEvent.objects.filter(run=run, type="run.completed")
        .order_by("seq")
        .values_list("created_at", flat=True)
        .first()
    )
    return completed or run.updated_at


def since_answer(run: AgentRun, *, at: datetime | None = None) -> str:
    """ "Since this answer: …", one clause per later decision or outcome of a refund the answer
    spoke of, in the agent's language; "" when none changed. `at`: when the answer was written
    (default: when the run completed)."""
    at = at or answered_at(run)
    if at is None:
        return ""
    return _since(_RunRead.of([run])[run.pk], at, _TicketRefunds.of(run.ticket_id, since=at))


@dataclass
class _RunRead:
    """What the desk reads of a run to tell what became of its answer's refunds."""

    run: AgentRun
    calls: list[dict] = field(default_factory=list)
    request: str = ""

    @classmethod
    def of(cls, runs: list[AgentRun]) -> dict:
        """Each run's calls and the agent's request, in two queries for all of them."""
        read = {run.pk: cls(run) for run in runs}
        calls = ToolCallLog.objects.filter(run__in=runs).order_by("created_at", "id")
        fields = ("tool_name", "ok", "error_code", "result", "arguments_raw")
        for run_id, *values in calls.values_list("run_id", *fields):
            read[run_id].calls.append(dict(zip(fields, values, strict=True)))
        requests = AgentMessage.objects.filter(run__in=runs, role=AgentMessage.Role.USER)
        for run_id, content in requests.order_by("run_id", "seq").values_list("run_id", "content"):
            read[run_id].request = "\n".join(filter(None, (read[run_id].request, content)))
        return read


@dataclass
class _TicketRefunds:
    """A ticket's refund requests and the changes told of them after a moment."""

    requests: list[tuple[int, str, str, object, datetime]]
    changes: list[RefundEvent]
    actors: dict[int, str]  # the display names of the changes' actors, by user id

    @classmethod
    def of(cls, ticket_id: int, *, since: datetime) -> "_TicketRefunds":
        """In three queries, whatever the number of answers asking or changes told."""
        requests = RefundRequest.objects.filter(ticket_id=ticket_id).values_list(
            "pk", "request_id", "order__order_id", "run_id", "created_at"
        )
        changes = list(
            RefundEvent.objects.filter(
                refund_request__ticket_id=ticket_id,
                created_at__gt=since,
                to_status__in=CHANGES_TOLD,
            )
            .select_related("refund_request", "actor")
            .order_by("created_at", "id")
        )
        return cls(list(requests), changes, display_names(c.actor for c in changes))


def _since(read: _RunRead, at: datetime, refunds: _TicketRefunds) -> str:
    spoken = spoken_of(read, refunds, before=at)
    words = words_for(record_language(read.request))
    told = [
        _change_words(change, words, refunds.actors)
        for change in refunds.changes
        if change.refund_request_id in spoken and change.created_at > at
    ]
    if not told:
        return ""
    return words["since"].format(events=words["since_join"].join(told))


def spoken_of(read: _RunRead, refunds: _TicketRefunds, *, before: datetime) -> set[int]:
    """The ids of the ticket's refund requests, made before `before`, that the run's answer
    spoke of: proposed by the run, read by it, on an order it looked up or named."""
    run = read.run
    request_ids: set[str] = set()
    order_ids: set[str] = set(ORDER_ID.findall(run.final_answer))
    for call in read.calls:
        result = call["result"]
        if not call["ok"] or not isinstance(result, dict):
            continue
        refund = result.get("refund")
        body: dict = refund if isinstance(refund, dict) else result
        if call["tool_name"] in REFUND_TOOLS:
            request_ids |= _request_ids(body)
        if call["tool_name"] in ORDER_TOOLS:
            order_ids |= _order_ids(body)
    return {
        pk
        for pk, request_id, order_id, run_id, created_at in refunds.requests
        if created_at < before
        and (
            run_id == run.pk
            or request_id in request_ids
            or request_id in run.final_answer
            or order_id in order_ids
        )
    }


def _request_ids(body: dict) -> set[str]:
    found = {str(body["request_id"])} if body.get("request_id") else set()
    for entry in body.get("refund_requests") or []:
        if isinstance(entry, dict) and entry.get("request_id"):
            found.add(str(entry["request_id"]))
    return found


def _order_ids(body: dict) -> set[str]:
    found = {str(body["order_id"])} if body.get("order_id") else set()
    for order in body.get("orders") or []:
        if isinstance(order, dict) and order.get("order_id"):
            found.add(str(order["order_id"]))
    return found


def _change_words(change: RefundEvent, words: dict, actors: dict[int, str]) -> str:
    status = change.to_status
    template = words["changes"].get(status, words["changes"]["other"])
    actor = actors.get(change.actor_id or 0, words["someone"])
    return template.format(
        request_id=change.refund_request.request_id,
        actor=actor,
        time=when(change.created_at),
        status=RefundRequest.Status(status).label if status in RefundRequest.Status else status,
    )


def answers_since(ticket_id: int, messages: list) -> dict[int, str]:
    """For each of the assistant's answers among the ticket's `messages` (TicketMessage rows)
    that a later refund change made stale, its "Since this answer: …" line, by message id. A
    fixed number of queries, however many answers the ticket has."""
    answers = [m for m in messages if m.author_kind == "assistant"]
    if not answers:
        return {}
    runs = list(
        AgentRun.objects.filter(
            ticket_id=ticket_id,
            status=AgentRun.Status.COMPLETED,
            final_answer__in=[m.body for m in answers],
        ).order_by("created_at")
    )
    if not runs:
        return {}
    # The run that posted each answer: the latest with its text, started before it was posted.
    posted = {}
    for message in answers:
        by = [
            r for r in runs if r.final_answer == message.body and r.created_at <= message.created_at
        ]
        if by:
            posted[message] = by[-1]
    if not posted:
        return {}
    read = _RunRead.of(list({run.pk: run for run in posted.values()}.values()))
    refunds = _TicketRefunds.of(ticket_id, since=min(m.created_at for m in posted))
    told = {
        message.pk: _since(read[run.pk], message.created_at, refunds)
        for message, run in posted.items()
    }
    return {pk: line for pk, line in told.items() if line}
