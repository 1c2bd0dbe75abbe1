from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api_errors import error_responses
from config.permissions import IsReviewer
from refunds import selectors, services
from refunds.models import RefundRequest
from refunds.serializers import (
    ApproveSerializer,
    RefundSerializer,
    RejectSerializer,
    WithdrawSerializer,
)


@extend_schema(
    parameters=[
        OpenApiParameter(
            "status", str, enum=["", *RefundRequest.Status.values], description="empty means any"
        ),
        OpenApiParameter(
            "reason", str, enum=["", *RefundRequest.Reason.values], description="empty means any"
        ),
        OpenApiParameter("q", str, description="search request id, order id, customer, ticket"),
    ],
    responses={
        200: RefundSerializer(many=True),
        **error_responses(400, 401, 403, 404, e404="No such page."),
    },
)
class RefundListApi(generics.ListAPIView):
    serializer_class = RefundSerializer

    def get_queryset(self):
        params = self.request.query_params
        status, reason = params.get("status", ""), params.get("reason", "")
        errors = {}
        if status and status not in RefundRequest.Status.values:
            errors["status"] = [f"Must be one of: {', '.join(RefundRequest.Status.values)}."]
        if reason and reason not in RefundRequest.Reason.values:
            errors["reason"] = [f"Must be one of: {', '.join(RefundRequest.Reason.values)}."]
        if errors:
            raise ValidationError(errors)
        return selectors.refund_list(status=status, reason=reason, query=params.get("q", ""))


class RefundDetailApi(APIView):
    @extend_schema(
        responses={
            200: RefundSerializer,
            **error_responses(401, 403, 404, e404="No such refund request."),
        }
    )
    def get(self, request, request_id: str):
        return Response(RefundSerializer(selectors.refund_get(request_id=request_id)).data)


class RefundApproveApi(APIView):
    """Approve exactly the version and fingerprint you reviewed; execution follows."""

    permission_classes = [IsAuthenticated, IsReviewer]

    @extend_schema(
        request=ApproveSerializer,
        responses={
            200: RefundSerializer,
            **error_responses(
                400,
                401,
                403,
                404,
                409,
                422,
                e403="Not a reviewer, or your own request.",
                e404="No such refund request.",
                e409="The version is not current, pending and unexpired, or the fingerprint "
                "does not match.",
                e422="Refused by the policy or by the order's refundable balance; "
                "extra.failing_clauses names the clauses.",
            ),
        },
    )
    def post(self, request, request_id: str):
        return _decide(request, request_id, ApproveSerializer, services.refund_approve)


class RefundRejectApi(APIView):
    """Reject the version you reviewed; the request ends as rejected."""

    permission_classes = [IsAuthenticated, IsReviewer]

    @extend_schema(
        request=RejectSerializer,
        responses={
            200: RefundSerializer,
            **error_responses(
                400,
                401,
                403,
                404,
                409,
                e403="Not a reviewer, or your own request.",
                e404="No such refund request.",
                e409="The version is not current, pending and unexpired.",
            ),
        },
    )
    def post(self, request, request_id: str):
        return _decide(request, request_id, RejectSerializer, services.refund_reject)


class RefundWithdrawApi(APIView):
    """Take back a proposal awaiting review: its requester, or a supervisor."""

    @extend_schema(
        request=WithdrawSerializer,
        responses={
            200: RefundSerializer,
            **error_responses(
                400,
                401,
                403,
                404,
                409,
                e403="Neither whoever proposed the request nor a supervisor.",
                e404="No such refund request.",
                e409="The request is not awaiting review; extra.status says what it is.",
            ),
        },
    )
    def post(self, request, request_id: str):
        refund = selectors.refund_get(request_id=request_id)
        body = WithdrawSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.refund_withdraw(refund=refund, by=request.user, **body.validated_data)
        return Response(RefundSerializer(selectors.refund_get(request_id=request_id)).data)


def _decide(request, request_id: str, body_class, decide) -> Response:
    """Validate the reviewer's decision, let the service make it, answer with the request as
    it is now."""
    refund = selectors.refund_get(request_id=request_id)
    body = body_class(data=request.data)
    body.is_valid(raise_exception=True)
    decide(refund=refund, reviewer=request.user, **body.validated_data)
    return Response(RefundSerializer(selectors.refund_get(request_id=request_id)).data)
