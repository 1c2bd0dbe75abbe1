from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import generics, serializers
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import AllowAny

from config.api_errors import error_responses
from tickets import selectors
from tickets.models import Ticket
from tickets.serializers import TicketSerializer


class ObtainTokenView(ObtainAuthToken):
    """POST {username, password} -> {token}. Send it as `Authorization: Token <token>`."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(
        request=inline_serializer(
            "TokenRequest",
            {"username": serializers.CharField(), "password": serializers.CharField()},
        ),
        responses={
            200: inline_serializer("TokenResponse", {"token": serializers.CharField()}),
            **error_responses(400, e400="Missing fields or wrong credentials."),
        },
    )
    def post(self, request, *args, **kwargs):
        return super().post(request, *args, **kwargs)


@extend_schema(
    parameters=[
        OpenApiParameter(
            "status", str, enum=["", *Ticket.Status.values], description="empty means any"
        ),
        OpenApiParameter("assignee", str, description='a username, or "none" for unassigned'),
        OpenApiParameter("q", str, description="search reference, subject, customer, order id"),
    ],
    responses={
        200: TicketSerializer(many=True),
        **error_responses(400, 401, 403, 404, e404="No such page."),
    },
)
class TicketListApi(generics.ListAPIView):
    serializer_class = TicketSerializer

    def get_queryset(self):
        params = self.request.query_params
        status = params.get("status", "")
        if status and status not in Ticket.Status.values:
            raise ValidationError(
                {"status": [f"Must be one of: {', '.join(Ticket.Status.values)}."]}
            )
        return selectors.ticket_list(
            status=status,
            assignee=params.get("assignee", ""),
            query=params.get("q", ""),
        ).prefetch_related("messages__author")


@extend_schema(responses={200: TicketSerializer, **error_responses(401, 403, 404)})
class TicketDetailApi(generics.RetrieveAPIView):
    serializer_class = TicketSerializer

    def get_object(self):
        return get_object_or_404(
            Ticket.objects.select_related("customer", "assignee", "order").prefetch_related(
                "messages__author"
            ),
            reference=self.kwargs["reference"],
        )
