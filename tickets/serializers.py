from rest_framework import serializers

from tickets.models import Ticket, TicketMessage


class TicketMessageSerializer(serializers.ModelSerializer):
    author: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = TicketMessage
        fields = ["id", "author_kind", "author", "body", "created_at"]


class TicketSerializer(serializers.ModelSerializer):
    customer = serializers.CharField(source="customer.name", read_only=True)
    customer_email = serializers.CharField(source="customer.email", read_only=True)
    assignee: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    order_id = serializers.CharField(
        source="order.order_id", read_only=True, allow_null=True, default=None
    )
    messages = TicketMessageSerializer(many=True, read_only=True)

    class Meta:
        model = Ticket
        fields = [
            "reference",
            "subject",
            "status",
            "customer",
            "customer_email",
            "assignee",
            "order_id",
            "created_at",
            "updated_at",
            "messages",
        ]
