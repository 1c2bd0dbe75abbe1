"""A ticket as the API answers it (with its conversation, events and satisfaction rating, or
in summary for lists), and the small bodies that change one: status, priority, tags, CC,
assignee, an escalation's note."""

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.serializers import StrictCharField
from desk.serializers.fields import CcAddressField, check_domain
from desk.serializers.messages import TicketMessageSerializer
from tickets import sla
from tickets.models import SatisfactionSurvey, Ticket, TicketEvent
from tickets.satisfaction import latest_rating
from tickets.services.cc import CC_MAX
from tickets.services.tags import TAG_MAX_LENGTH, TAG_NAME


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
    sla = serializers.SerializerMethodField(
        help_text="breached, due_soon or on_track; null when no SLA target is running"
    )
    tags: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="name", many=True, read_only=True
    )
    merged_into: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="reference",
        read_only=True,
        allow_null=True,
        help_text="The reference of the ticket this one was merged into; null if not merged",
    )

    class Meta:
        model = Ticket
        fields = [
            "reference",
            "subject",
            "status",
            "priority",
            "assignee",
            "escalated",
            "order_id",
            "tags",
            "cc",
            "first_response_due_at",
            "resolution_due_at",
            "first_responded_at",
            "sla",
            "merged_into",
            "created_at",
            "updated_at",
        ]

    def get_sla(self, ticket: Ticket) -> str | None:
        return sla.sla_state(ticket)


class SatisfactionSerializer(serializers.Serializer):
    """The customer's answer to the ticket's latest answered satisfaction survey."""

    rating = serializers.ChoiceField(choices=SatisfactionSurvey.Rating.choices)
    comment = serializers.CharField(help_text="empty when the customer wrote none")
    at = serializers.DateTimeField(source="rated_at")


class TicketSerializer(TicketSummarySerializer):
    customer = serializers.CharField(source="customer.name", read_only=True)
    customer_id = serializers.IntegerField(source="customer.pk", read_only=True)
    customer_email = serializers.CharField(source="customer.email", read_only=True)
    messages = TicketMessageSerializer(many=True, read_only=True)
    events = TicketEventSerializer(many=True, read_only=True)
    satisfaction = serializers.SerializerMethodField(
        help_text="the customer's satisfaction rating; null until they answer a survey"
    )

    class Meta:
        model = Ticket
        fields = [
            "reference",
            "subject",
            "status",
            "priority",
            "assignee",
            "escalated",
            "customer",
            "customer_id",
            "customer_email",
            "order_id",
            "tags",
            "cc",
            "first_response_due_at",
            "resolution_due_at",
            "first_responded_at",
            "sla",
            "merged_into",
            "created_at",
            "updated_at",
            "messages",
            "events",
            "satisfaction",
        ]

    @extend_schema_field(SatisfactionSerializer(allow_null=True))
    def get_satisfaction(self, ticket: Ticket) -> dict | None:
        survey = latest_rating(ticket)
        return None if survey is None else SatisfactionSerializer(survey).data


class StatusWriteSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=Ticket.Status.choices)


class PriorityWriteSerializer(serializers.Serializer):
    priority = serializers.ChoiceField(choices=Ticket.Priority.choices)


def _tag_name_field() -> StrictCharField:
    return StrictCharField(
        max_length=TAG_MAX_LENGTH,
        validators=[RegexValidator(TAG_NAME, "Not a tag name.")],
        help_text="letters, digits, spaces or . : / + - _, starting and ending with a letter "
        "or digit",
    )


class TagsWriteSerializer(serializers.Serializer):
    add = serializers.ListField(
        child=_tag_name_field(),
        required=False,
        default=list,
        max_length=20,
        help_text="tag names to add (made if new; names are equal ignoring case)",
    )
    remove = serializers.ListField(
        child=_tag_name_field(),
        required=False,
        default=list,
        max_length=20,
        help_text="tag names to remove (a name also in add is left as it is)",
    )


class CcWriteSerializer(serializers.Serializer):
    cc = serializers.ListField(
        child=CcAddressField(max_length=254),
        max_length=CC_MAX,
        allow_empty=True,
        help_text="the whole CC list: email addresses copied on public replies (the "
        "customer's own is left out)",
    )

    def validate_cc(self, addresses: list[str]) -> list[str]:
        for address in addresses:
            check_domain(address)
        return addresses


class AssignWriteSerializer(serializers.Serializer):
    assignee = StrictCharField(
        allow_null=True, max_length=150, help_text="a username, or null to unassign"
    )


class NoteWriteSerializer(serializers.Serializer):
    note = StrictCharField(max_length=4000, trim_whitespace=True)


class OptionalNoteSerializer(serializers.Serializer):
    note = StrictCharField(max_length=4000, required=False, allow_blank=True, default="")
