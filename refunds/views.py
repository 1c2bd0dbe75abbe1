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


def _require_reviewer(user) -> None:
    if not is_reviewer(user):
        raise PermissionDenied


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
    confirmation = review.confirmation
    can_decide = (
        refund.status == RefundRequest.Status.PENDING_APPROVAL
        and confirmation is not None
        and not review.confirmation_expired
        and not own_request
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
            "can_decide": can_decide,
            "approve_form": ApproveForm(initial=initial),
            "reject_form": RejectForm(initial=initial),
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
    return _decide(request, request_id, RejectForm, services.refund_reject, "rejected")
