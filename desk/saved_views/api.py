"""GET/POST /api/views/ and DELETE /api/views/<id>/ (DESIGN §19): tickets.saved_views decides."""

from typing import cast

from django.contrib.auth.models import User
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api_errors import error_responses
from config.permissions import IsStaffMember
from config.serializers import StrictCharField
from desk.serializers.fields import StrictBooleanField
from ops.parsers import JSONParser
from tickets import saved_views
from tickets.models import SavedView


class SavedViewSerializer(serializers.ModelSerializer):
    name = StrictCharField(max_length=80)
    query = StrictCharField(
        max_length=500,
        allow_blank=True,
        help_text="The ticket list's query string: "
        f"{', '.join(saved_views.FILTERS)} (as GET /api/tickets/ takes them); "
        'assignee "me" is whoever opens the view',
    )
    shared = StrictBooleanField(
        default=False, help_text="Listed for the whole team (agents and supervisors share)"
    )
    owner = serializers.SerializerMethodField(help_text="A username; null: the team's own view")
    url = serializers.SerializerMethodField(help_text="The ticket list with this view")
    can_delete = serializers.SerializerMethodField(help_text="You may delete it")

    class Meta:
        model = SavedView
        fields = ["id", "name", "query", "shared", "owner", "url", "can_delete"]

    def get_owner(self, view: SavedView) -> str | None:
        return view.owner.get_username() if view.owner else None

    def get_url(self, view: SavedView) -> str:
        list_url = reverse("tickets:list")
        return f"{list_url}?{view.query}" if view.query else list_url

    def get_can_delete(self, view: SavedView) -> bool:
        return saved_views.may_change(view, self.context["request"].user)


class SavedViewListApi(APIView):
    """Your saved views of the ticket list and the team's shared ones (the team's first); POST
    saves one: its query is checked against the list's filters."""

    permission_classes = [IsStaffMember]
    parser_classes = [JSONParser]

    @extend_schema(responses={200: SavedViewSerializer(many=True), **error_responses(401, 403)})
    def get(self, request):
        views = saved_views.views_for(cast(User, request.user)).select_related("owner")
        return Response(SavedViewSerializer(views, many=True, context={"request": request}).data)

    @extend_schema(
        request=SavedViewSerializer,
        responses={
            201: SavedViewSerializer,
            **error_responses(
                400,
                401,
                403,
                e400="A blank name, one you already have, or a query with a filter the list "
                "does not have or a value it does not take (extra.fields.query says which).",
                e403="Not desk staff; or an intern or reviewer sharing with the team.",
            ),
        },
    )
    def post(self, request):
        body = SavedViewSerializer(data=request.data, context={"request": request})
        body.is_valid(raise_exception=True)
        view = saved_views.saved_view_create(owner=cast(User, request.user), **body.validated_data)
        return Response(
            SavedViewSerializer(view, context={"request": request}).data,
            status=status.HTTP_201_CREATED,
        )


class SavedViewDetailApi(APIView):
    """Change (PATCH: name, query, shared) or delete a view: your own, or (supervisors) a
    shared one."""

    permission_classes = [IsStaffMember]
    parser_classes = [JSONParser]

    def _view(self, request, pk: int) -> SavedView:
        return get_object_or_404(saved_views.views_for(cast(User, request.user)), pk=pk)

    @extend_schema(
        request=SavedViewSerializer(partial=True),
        responses={
            200: SavedViewSerializer,
            **error_responses(
                400,
                401,
                403,
                404,
                e400="A blank name, one taken, a query the list cannot open, or a team view "
                "unshared.",
                e403="Someone else's shared view and you are not a supervisor; or sharing as "
                "an intern or reviewer.",
                e404="No such view among yours and the shared ones.",
            ),
        },
    )
    def patch(self, request, pk: int):
        view = self._view(request, pk)
        body = SavedViewSerializer(view, data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        view = saved_views.saved_view_update(
            view=view, actor=cast(User, request.user), **body.validated_data
        )
        return Response(SavedViewSerializer(view, context={"request": request}).data)

    @extend_schema(
        responses={
            204: None,
            **error_responses(
                401,
                403,
                404,
                e403="Someone else's shared view, and you are not a supervisor.",
                e404="No such view among yours and the shared ones.",
            ),
        },
    )
    def delete(self, request, pk: int):
        view = self._view(request, pk)
        saved_views.saved_view_delete(view=view, actor=cast(User, request.user))
        return Response(status=status.HTTP_204_NO_CONTENT)
