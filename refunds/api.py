from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from config.errors import error_responses
from config.permissions import IsReviewer
from refunds import selectors, services
from refunds.models import RefundRequest
from refunds.serializers import ApproveSerializer, RefundSerializer, RejectSerializer


def _get_refund(request_id: str) -> RefundRequest:
    try:
        return selectors.refund_get(request_id=request_id)
    except RefundRequest.DoesNotExist:
        raise Http404(f"No refund request {request_id}") from None


@extend_schema(
    parameters=[
        OpenApiParameter("status", str, enum=["", *RefundRequest.Status.values],
                         description="empty means any"),
        OpenApiParameter("reason", str, enum=["", *RefundRequest.Reason.values],
                         description="empty means any"),
        OpenApiParameter("q", str, description="search request id, order id, customer, ticket"),
    ],
    responses={200: RefundSerializer(many=True),
               **error_responses(400, 401, 403, 404, e404="No such page.")},
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
    @extend_schema(responses={200: RefundSerializer, **error_responses(
        401, 403, 404, e404="No such refund request.")})
    def get(self, request, request_id: str):
        return Response(RefundSerializer(_get_refund(request_id)).data)


class RefundApproveApi(APIView):
    """Approve exactly the version and fingerprint you reviewed; execution follows."""

    permission_classes = [IsAuthenticated, IsReviewer]

    @extend_schema(
        request=ApproveSerializer,
        responses={200: RefundSerializer, **error_responses(
            400, 401, 403, 404, 409, 422,
            e403="Not a reviewer, or your own request.",
            e404="No such refund request.",
            e409="The version is not current, pending and unexpired, or the fingerprint "
                 "does not match.",
            e422="Refused by the policy or by the order's refundable balance; "
                 "extra.failing_clauses names the clauses.",
        )},
    )
    def post(self, request, request_id: str):
        refund = _get_refund(request_id)
        body = ApproveSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.refund_approve(refund=refund, reviewer=request.user, **body.validated_data)
        return Response(RefundSerializer(_get_refund(request_id)).data)


class RefundRejectApi(APIView):
    """Reject the version you reviewed; the request ends as rejected."""

    permission_classes = [IsAuthenticated, IsReviewer]

    @extend_schema(
        request=RejectSerializer,
        responses={200: RefundSerializer, **error_responses(
            400, 401, 403, 404, 409,
            e403="Not a reviewer, or your own request.",
            e404="No such refund request.",
            e409="The version is not current, pending and unexpired.",
        )},
    )
    def post(self, request, request_id: str):
        refund = _get_refund(request_id)
        body = RejectSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.refund_reject(refund=refund, reviewer=request.user, **body.validated_data)
        return Response(RefundSerializer(_get_refund(request_id)).data)
