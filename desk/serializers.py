from django.core.validators import RegexValidator
from rest_framework import serializers

from config.serializers import StrictCharField
from orders.addresses import BadAddress, email_key
from tickets.models import Notification, Ticket, TicketChange, TicketEvent, TicketMessage


class TicketMessageSerializer(serializers.ModelSerializer):
    author: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = TicketMessage
        fields = [
            "id",
            "author_kind",
            "author",
            "body",
            "visibility",
            "delivery",
            "delivery_error",
            "sent_at",
            "created_at",
        ]


class TicketEventSerializer(serializers.ModelSerializer):
    actor: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    description = serializers.CharField(source="get_type_display", read_only=True)

    class Meta:
        model = TicketEvent
        fields = ["type", "description", "actor", "data", "created_at"]


class TicketSummarySerializer(serializers.ModelSerializer):
    """A ticket without its conversation: for lists of a customer's tickets."""

    assignee: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    order_id = serializers.CharField(
        source="order.order_id", read_only=True, allow_null=True, default=None
    )

    class Meta:
        model = Ticket
        fields = [
            "reference",
            "subject",
            "status",
            "assignee",
            "escalated",
            "order_id",
            "created_at",
            "updated_at",
        ]


class TicketSerializer(TicketSummarySerializer):
    customer = serializers.CharField(source="customer.name", read_only=True)
    customer_id = serializers.IntegerField(source="customer.pk", read_only=True)
    customer_email = serializers.CharField(source="customer.email", read_only=True)
    messages = TicketMessageSerializer(many=True, read_only=True)
    events = TicketEventSerializer(many=True, read_only=True)

    class Meta:
        model = Ticket
        fields = [
            "reference",
            "subject",
            "status",
            "assignee",
            "escalated",
            "customer",
            "customer_id",
            "customer_email",
            "order_id",
            "created_at",
            "updated_at",
            "messages",
            "events",
        ]


# --- requests ---------------------------------------------------------------------------------


class MessageWriteSerializer(serializers.Serializer):
    body = StrictCharField(max_length=20000, trim_whitespace=True)
    visibility = serializers.ChoiceField(choices=TicketMessage.Visibility.choices)


class StatusWriteSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=Ticket.Status.choices)


class AssignWriteSerializer(serializers.Serializer):
    assignee = StrictCharField(
        allow_null=True, max_length=150, help_text="a username, or null to unassign"
    )


class NoteWriteSerializer(serializers.Serializer):
    note = StrictCharField(max_length=4000, trim_whitespace=True)


class OptionalNoteSerializer(serializers.Serializer):
    note = StrictCharField(max_length=4000, required=False, allow_blank=True, default="")


class InboundEmailSerializer(serializers.Serializer):
    # `from` is a Python keyword: the field is declared under its JSON name below.
    name = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    subject = StrictCharField(max_length=998, required=False, allow_blank=True, default="")
    body = StrictCharField(max_length=100000, trim_whitespace=False)
    # It threads our replies (In-Reply-To, References): nothing that could break a header.
    message_id = StrictCharField(
        max_length=255,
        validators=[RegexValidator(r"^[!-~]+$", "Not a Message-ID: visible ASCII, no spaces.")],
    )

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.EmailField(max_length=254)
        return fields

    def validate_from(self, address: str) -> str:
        # Django's validator takes any domain Python's IDNA 2003 codec can fold into ASCII;
        # the sender is matched on its IDNA 2008 form, which a folded look-alike lacks.
        try:
            email_key(address)
        except BadAddress as exc:
            raise serializers.ValidationError(exc.message) from None
        return address


class InboundResultSerializer(serializers.Serializer):
    ticket = serializers.CharField(help_text="the ticket reference, e.g. TCK-1005")
    created = serializers.BooleanField(help_text="a new ticket was opened")
    duplicate = serializers.BooleanField(help_text="this message_id was received before")


# --- customers --------------------------------------------------------------------------------


class CustomerOrderSerializer(serializers.Serializer):
    order_id = serializers.CharField(source="order.order_id")
    status = serializers.CharField(source="order.status")
    currency = serializers.CharField(source="order.currency")
    amount_paid = serializers.DecimalField(
        source="order.amount_paid", max_digits=12, decimal_places=2
    )
    refunded = serializers.DecimalField(max_digits=12, decimal_places=2)
    refundable = serializers.DecimalField(max_digits=12, decimal_places=2)
    placed_at = serializers.DateTimeField(source="order.placed_at")
    delivered_at = serializers.DateTimeField(source="order.delivered_at", allow_null=True)


class CustomerRefundSerializer(serializers.Serializer):
    request_id = serializers.CharField()
    ticket = serializers.CharField(source="ticket.reference", allow_null=True, default=None)
    order_id = serializers.CharField(source="order.order_id")
    amount = serializers.DecimalField(max_digits=12, decimal_places=2)
    currency = serializers.CharField()
    reason = serializers.CharField()
    status = serializers.CharField()
    created_at = serializers.DateTimeField()


class CustomerSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="customer.pk")
    name = serializers.CharField(source="customer.name")
    email = serializers.CharField(source="customer.email")
    orders = CustomerOrderSerializer(many=True)
    tickets = TicketSummarySerializer(many=True)
    refund_requests = CustomerRefundSerializer(many=True, source="refunds")


# --- the live desk ----------------------------------------------------------------------------


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
