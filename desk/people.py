"""A desk user's own name and signature (DESIGN §19): `GET`/`PATCH /api/me/` and the page
at /me/. What customers see is the effective name and signature (tickets/people.py): a
blank field falls back to the full name or username, and to the team's signature."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api_errors import error_responses
from config.permissions import IsStaffMember
from config.roles import is_staff_member
from config.serializers import StrictCharField
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


@login_required
def me_page(request):
    """The same as a form; what was typed stays on the page when it is refused."""
    if not is_staff_member(request.user):
        raise PermissionDenied("Only desk staff have a name and signature on replies.")
    incoming = None
    if request.method == "POST":
        incoming = MeSerializer(
            data={
                "display_name": request.POST.get("display_name", ""),
                "signature": request.POST.get("signature", ""),
            }
        )
        if incoming.is_valid():
            people.profile_update(user=request.user, **incoming.validated_data)
            messages.success(request, "Saved: your next replies are signed this way.")
            return redirect("me")
    profile = people.profile_of(request.user)
    typed = incoming.initial_data if incoming is not None else {}
    return render(
        request,
        "tickets/me.html",
        {
            "display_name": typed.get("display_name", profile.display_name),
            "signature": typed.get("signature", profile.signature),
            "errors": incoming.errors if incoming is not None else {},
            "fallback_name": request.user.get_full_name().strip() or request.user.get_username(),
            "team_signature": people.team_signature(),
            "sign_off": people.sign_off(request.user),
            "name_max": NAME_MAX,
            "signature_max": SIGNATURE_MAX,
        },
    )
