"""POST /api/auth/token/: a username and password for an API token. Apart from the rest of the
API because it is the one route that asks for no authentication (desk.urls gives it the
anonymous throttle and the sign-in serializer that counts failures)."""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api_errors import error_responses
from ops.authentication import api_token_issue


class ObtainTokenView(ObtainAuthToken):
    """POST {username, password} -> {token}. Send it as `Authorization: Token <token>`. Each
    sign-in gets a new token, shown only in this answer (the desk keeps its digest), good for
    API_TOKEN_TTL_DAYS."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    # The desk's parsers (APIView's, from settings): DRF's view names DRF's JSON parser.
    parser_classes = APIView.parser_classes

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
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        issued = api_token_issue(user=serializer.validated_data["user"])
        return Response({"token": issued.key})
