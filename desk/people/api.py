"""`GET`/`PATCH /api/me/`: a desk user's own name and signature (DESIGN §19). What customers see
is the effective name and signature (tickets/people.py): a blank field falls back to the full
name or username, and to the team's signature."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api_errors import error_responses
from config.permissions import IsStaffMember
from config.serializers import StrictCharField
from ops.parsers import JSONParser
from tickets import people
from tickets.models import StaffProfile

NAME_MAX = StaffProfile._meta.get_field("display_name").max_length
SIGNATURE_MAX = StaffProfile._meta.get_field("signature").max_length


class MeSerializer(serializers.Serializer):
    username = serializers.CharField(read_only=True)
    display_name = StrictCharField(max_length=NAME_MAX, allow_blank=True, required=False)
    signature = StrictCharField(
        max_length=SIGNATURE_MAX, allow_blank=True, required=False, trim_whitespace=False
    )

    def validate_display_name(self, value: str) -> str:
        if any(char in value for char in "\r\n"):
            raise serializers.ValidationError("A name is one line.")
        return value


def _me(user) -> dict:
    profile = people.profile_of(user)
    return {
        "username": user.get_username(),
        "display_name": people.display_name(user),
        "signature": profile.signature,
    }


class MeApi(APIView):
    """Your name as customers see it and your signature (Markdown, under every public reply
    you send; blank: the team's). A blank display name falls back to your full name, then
    your username."""

    permission_classes = [IsStaffMember]
    parser_classes = [JSONParser]

    @extend_schema(responses={200: MeSerializer, **error_responses(401, 403)})
    def get(self, request):
        return Response(MeSerializer(_me(request.user)).data)

    @extend_schema(
        request=MeSerializer, responses={200: MeSerializer, **error_responses(400, 401, 403)}
    )
    def patch(self, request):
        incoming = MeSerializer(data=request.data, partial=True)
        incoming.is_valid(raise_exception=True)
        people.profile_update(user=request.user, **incoming.validated_data)
        return Response(MeSerializer(_me(request.user)).data)
