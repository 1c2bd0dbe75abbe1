"""The run's second output, the customer draft (DESIGN §13), and the draft of a ticket now.

A run that completes writes `draft_reply` just before it ends: from templates with the offline
planner (or with AGENT_DRAFT_WITH_MODEL off), otherwise by one more model call with no tools
and read-only context (agent/drafts.py: model_prompt), falling back to templates when the call
fails or what it wrote cannot be sent. `ticket_draft` is what "Use as reply" gets: the latest
run's draft while the refunds it describes are as they were, else a new one.
"""

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

from agent import drafts
from agent.answer_check import check_text
from agent.models import AgentRun
from agent.providers.llm import ModelError, ModelReply, Provider
from refunds.models import RefundRequest
from tickets.models import Ticket

logger = logging.getLogger(__name__)

# Runs a model call (a callable returning its reply) and returns the reply: the step waits on
# it renewing its lease; a request just calls it.
Ask = Callable[[Callable[[], ModelReply]], ModelReply]


def _call(call: Callable[[], ModelReply]) -> ModelReply:
    return call()


def write_draft(*, ticket: Ticket, provider: Provider, ask: Ask = _call) -> drafts.Draft:
    """The customer draft for `ticket` as it is now, by `provider`."""
    language = drafts.customer_language(ticket)
    fallback = drafts.template_draft(ticket, language=language)
    if getattr(provider, "drafts_from_templates", False) or not settings.AGENT_DRAFT_WITH_MODEL:
        return fallback
    messages = drafts.model_prompt(ticket, fallback.state, language)
    try:
        reply = ask(
            functools.partial(provider.complete, messages=messages, tools=[], tool_choice="none")
        )
    except (ModelError, TimeoutError) as exc:
        logger.info("%s: the model wrote no draft (%s); using the templates", ticket.reference, exc)
        return fallback
    body = (reply.content or "").strip()
    refusal = (
        "tool calls" if reply.tool_calls else drafts.model_body_refusal(body, ticket, language)
    )
    if refusal is not None:
        logger.info("%s: the model's draft is not used (%s)", ticket.reference, refusal)
        return fallback
    return drafts.Draft(
        body=drafts.assemble(language, ticket.customer.name, body),
        language=language,
        state=fallback.state,
    )


@dataclass(frozen=True)
class TicketDraft:
    draft: drafts.Draft
    # "run": the latest run's draft; "template": written now (DESIGN §13 names no third source:
    # by the model when one is configured and its draft could be used, else from templates).
    source: str
    run: AgentRun | None

    def as_dict(self, ticket: Ticket) -> dict:
        return {
            "body": self.draft.body,
            "language": self.draft.language,
            "state": {"refunds": self.draft.state},
            "check": check_text(text=self.draft.body, ticket=ticket).public(),
            "source": self.source,
            "run": str(self.run.pk) if self.run else None,
        }


def _still_current(run: AgentRun, ticket: Ticket, state: list[dict]) -> bool:
    """No refund of the ticket changed since the run wrote its draft, and the customer has
    not written since in another language."""
    if run.draft_state != state:
        return False
    changed = RefundRequest.objects.filter(ticket=ticket, updated_at__gt=run.updated_at)
    if changed.exists():
        return False
    return drafts.customer_language(ticket) == run.draft_language


def ticket_draft(*, ticket: Ticket, provider: Provider) -> TicketDraft:
    """The draft "Use as reply" fills the reply box with (DESIGN §13)."""
    run = ticket.runs.exclude(draft_reply="").order_by("-created_at").first()
    state = drafts.refund_state(ticket)
    if run is not None and _still_current(run, ticket, state):
        draft = drafts.Draft(body=run.draft_reply, language=run.draft_language, state=state)
        return TicketDraft(draft=draft, source="run", run=run)
    written = write_draft(ticket=ticket, provider=provider)
    return TicketDraft(draft=written, source="template", run=None)
