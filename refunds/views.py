import json
from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from config.errors import ApplicationError
from config.roles import is_reviewer
from refunds import selectors, services
from refunds.forms import ApproveForm, RejectForm
from refunds.models import RefundRequest

ALL = "all"
# The reject form's checkbox: a rejection ends the request for good, so it is never one click.
REJECT_CONFIRMATION = "confirm_reject"
STATUS_LABELS = dict(RefundRequest.Status.choices)
REASON_LABELS = dict(RefundRequest.Reason.choices)


def _require_reviewer(user) -> None:
    if not is_reviewer(user):
        raise PermissionDenied(
            "Only refund reviewers can open the review queue and decide refunds."
        )


def as_json(value) -> str:
    """A JSON value as a reviewer reads it: indented, never a Python repr."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def status_label(status: str) -> str:
    # A request's first event comes from no status: it was just proposed.
    return STATUS_LABELS.get(status, status) if status else "New request"


@dataclass(frozen=True)
class ToolCallRow:
    call: object  # an agent ToolCallLog row
    arguments: str
    result: str


@dataclass(frozen=True)
class EventRow:
    event: object  # a RefundEvent
    change: str  # "Pending approval → Approved"


def _tool_call_rows(calls) -> list[ToolCallRow]:
    # Arguments that were not JSON are kept as the model sent them (arguments_raw).
    return [
        ToolCallRow(
            call=call,
            arguments=as_json(call.arguments) if call.arguments is not None else call.arguments_raw,
            result=as_json(call.result),
        )
        for call in calls
    ]


def _event_rows(events) -> list[EventRow]:
    return [EventRow(event=event, change=_change(event)) for event in events]


def _change(event) -> str:
    edited = event.detail.get("order_edited")
    if edited:
        # No status changed: the order under the proposal did (services.order_edit).
        return (
            f"Order edited: {services.order_edit_words(edited)}; version "
            f"{event.detail['version']} replaces version {event.detail['superseded_version']}"
        )
    return f"{status_label(event.from_status)} → {status_label(event.to_status)}"


@login_required
def review_queue(request):
    _require_reviewer(request.user)
    # Without a status filter the queue shows what needs a decision.
    status = request.GET.get("status", RefundRequest.Status.PENDING_APPROVAL)
    reason = request.GET.get("reason", "")
    query = request.GET.get("q", "").strip()
    refunds = selectors.refund_list(
        status=status if status in RefundRequest.Status.values else "",
        reason=reason if reason in RefundRequest.Reason.values else "",
        query=query,
    )
    page = Paginator(refunds, 25).get_page(request.GET.get("page"))
    counts = selectors.refund_status_counts()
    return render(
        request,
        "refunds/queue.html",
        {
            "page": page,
            "rows": [(refund, selectors.current_confirmation(refund)) for refund in page],
            "counts": [
                (value, label, counts[value]) for value, label in RefundRequest.Status.choices
            ],
            "statuses": RefundRequest.Status.choices,
            "reasons": RefundRequest.Reason.choices,
            "filters": {"status": status, "reason": reason, "q": query},
        },
    )


@login_required
def review_detail(request, request_id: str):
    _require_reviewer(request.user)
    refund = selectors.refund_get(request_id=request_id)
    review = selectors.refund_review(refund=refund)
    own_request = refund.requested_by_id == request.user.pk
    # Four eyes as refund_approve holds them: no proposer of any version, no editor of the
    # order into one, is offered a decision the service would refuse.
    chose_it = request.user.pk in services.proposers_of(refund)
    confirmation = review.confirmation
    can_decide = (
        refund.status == RefundRequest.Status.PENDING_APPROVAL
        and confirmation is not None
        and not review.confirmation_expired
        and not chose_it
    )
    initial = (
        {"version": confirmation.version, "fingerprint": confirmation.fingerprint}
        if confirmation
        else {}
    )
    return render(
        request,
        "refunds/detail.html",
        {
            "review": review,
            "refund": refund,
            "own_request": own_request,
            "chose_it": chose_it,
            "pending_approval": refund.status == RefundRequest.Status.PENDING_APPROVAL,
            "can_decide": can_decide,
            "approve_form": ApproveForm(initial=initial),
            "reject_form": RejectForm(initial=initial),
            "tool_calls": _tool_call_rows(review.tool_calls),
            "events": _event_rows(review.events),
            "versions": [
                (c, REASON_LABELS.get(c.params.get("reason"), c.params.get("reason")))
                for c in review.confirmations
            ],
            "reject_confirmation": REJECT_CONFIRMATION,
            "thumbnail_types": selectors.THUMBNAIL_TYPES,
        },
    )


def _decide(request, request_id: str, form_class, decide, done: str):
    _require_reviewer(request.user)
    refund = selectors.refund_get(request_id=request_id)
    form = form_class(request.POST)
    if not form.is_valid():
        messages.error(
            request,
            "The decision was not recorded: the form was incomplete. "
            "Reload the page and try again.",
        )
        return redirect("refunds:detail", request_id=request_id)
    try:
        decide(refund=refund, reviewer=request.user, **form.cleaned_data)
    except ApplicationError as refusal:
        messages.error(request, f"Not {done}: {refusal.message}")
        return redirect("refunds:detail", request_id=request_id)
    messages.success(request, f"Refund {request_id} {done}.")
    return redirect("refunds:detail", request_id=request_id)


@require_POST
@login_required
def review_approve(request, request_id: str):
    return _decide(request, request_id, ApproveForm, services.refund_approve, "approved")


@require_POST
@login_required
def review_reject(request, request_id: str):
    _require_reviewer(request.user)
    if request.POST.get(REJECT_CONFIRMATION) != "yes":
        messages.error(
            request,
            "Not rejected: tick “I want to reject this request” to confirm. "
            "A rejected request cannot be approved later.",
        )
        return redirect("refunds:detail", request_id=request_id)
    return _decide(request, request_id, RejectForm, services.refund_reject, "rejected")
