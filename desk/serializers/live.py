"""The live desk's shapes (DESIGN §14, desk.live.api): a ticket's changes, a user's
notifications, and the body that marks notifications read."""

from rest_framework import serializers

from tickets.models import Notification, TicketChange


class TicketChangeSerializer(serializers.ModelSerializer):
    class Meta:
        model = TicketChange
        fields = ["seq", "type", "data", "created_at"]


class NotificationSerializer(serializers.ModelSerializer):
    ticket = serializers.CharField(source="ticket.reference", read_only=True)
    actor: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    read = serializers.SerializerMethodField()

    class Meta:
        model = Notification
        fields = ["id", "kind", "ticket", "text", "actor", "data", "read", "read_at", "created_at"]

    def get_read(self, notification: Notification) -> bool:
        return notification.read_at is not None


class NotificationReadSerializer(serializers.Serializer):
    """Exactly one of `ids` (yours to mark read) and `all` (true)."""

    ids = serializers.ListField(
        # A notification's id is a bigint: a larger number names none (not a database error).
        child=serializers.IntegerField(min_value=1, max_value=2**63 - 1),
        max_length=1000,
        required=False,
    )
    all = serializers.BooleanField(required=False)

    def validate(self, attrs: dict) -> dict:
        if ("ids" in attrs) == ("all" in attrs):
            raise serializers.ValidationError('Send either "ids": [...] or "all": true.')
        if "all" in attrs and attrs["all"] is not True:
            raise serializers.ValidationError({"all": ['Only true: "all": true.']})
        return attrs

    def to_internal_value(self, data):
        # A JSON boolean only: DRF's BooleanField would take "yes" or 1 for true.
        if isinstance(data, dict) and "all" in data and not isinstance(data["all"], bool):
            raise serializers.ValidationError({"all": ["Must be true or false."]})
        return super().to_internal_value(data)


class NotificationReadResultSerializer(serializers.Serializer):
    read = serializers.IntegerField(help_text="how many were unread and are now read")
    unread = serializers.IntegerField(help_text="your unread notifications left")
