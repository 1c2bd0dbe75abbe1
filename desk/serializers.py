import base64
import binascii
import re

from django.conf import settings
from django.core.validators import RegexValidator
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty

from agent.draft_templates import TEMPLATES
from config.serializers import StrictCharField
from orders.addresses import BadAddress, at_a_host_not_a_domain, email_key, host_refusal
from tickets import sla
from tickets.attachments import TooLarge, Upload, uploads_from
from tickets.models import (
    Attachment,
    Macro,
    Notification,
    SatisfactionSurvey,
    Ticket,
    TicketChange,
    TicketEvent,
    TicketMessage,
    macro_problems,
)
from tickets.satisfaction import latest_rating
from tickets.services import CC_MAX, TAG_MAX_LENGTH, TAG_NAME


class AttachmentSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField(help_text="the staff-only download (GET)")

    class Meta:
        model = Attachment
        fields = ["id", "filename", "content_type", "size", "url"]

    def get_url(self, attachment: Attachment) -> str:
        return reverse(
            "api-ticket-attachment",
            args=[attachment.message.ticket.reference, attachment.pk],
        )


class TicketMessageSerializer(serializers.ModelSerializer):
    author: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    attachments = AttachmentSerializer(many=True, read_only=True)

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
            "attachments",
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


# --- requests ---------------------------------------------------------------------------------


class StrictBooleanField(serializers.BooleanField):
    """true or false (in a form, the words "true" and "false"), not 0, 1, "yes" or "on": a
    confirmation is said plainly."""

    def to_internal_value(self, data):
        if isinstance(data, bool):
            return data
        if data in ("true", "false"):
            return data == "true"
        self.fail("invalid", input=data)


class MessageWriteSerializer(serializers.Serializer):
    body = StrictCharField(max_length=20000, trim_whitespace=True)
    visibility = serializers.ChoiceField(choices=TicketMessage.Visibility.choices)
    confirm_claims = StrictBooleanField(
        default=False,
        help_text="Send a public reply although the records contradict what it says about a "
        "refund (the 409 claim_contradicts_state listed the claims).",
    )


class DraftClaimSerializer(serializers.Serializer):
    text = serializers.CharField()
    order_id = serializers.CharField(allow_null=True)
    claimed = serializers.ChoiceField(choices=["refunded", "on_its_way", "approved"])
    actual = serializers.CharField(help_text='the statuses of the requests judged, or "none"')


class DraftRefundSerializer(serializers.Serializer):
    request_id = serializers.CharField()
    order_id = serializers.CharField()
    amount = serializers.CharField()
    currency = serializers.CharField()
    status = serializers.CharField()


class DraftStateSerializer(serializers.Serializer):
    refunds = DraftRefundSerializer(many=True)


class DraftCheckSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    claims = DraftClaimSerializer(many=True, help_text="the claims the records contradict")


class DraftSerializer(serializers.Serializer):
    """A reply the customer could be sent, for the ticket as it is now (DESIGN §13)."""

    body = serializers.CharField()
    language = serializers.CharField(help_text="en, zh, de, fr, es")
    state = DraftStateSerializer()
    check = DraftCheckSerializer()
    # A field named like Field.source: DRF's metaclass takes it out of the class attributes.
    source = serializers.ChoiceField(  # type: ignore[assignment]
        choices=["run", "template"],
        help_text="run: the latest run's draft; template: written now for the ticket as it is "
        "(by the model with read-only context when one is configured, else from templates)",
    )
    run = serializers.UUIDField(allow_null=True)


class MessageWithFilesSerializer(MessageWriteSerializer):
    """A message as multipart/form-data: its text and the files attached to it."""

    files = serializers.ListField(
        child=serializers.FileField(allow_empty_file=False),
        required=False,
        default=list,
        help_text="files to attach (multipart/form-data only): ATTACHMENT_MAX_BYTES each "
        "(10 MB), 25 MB together, else 413",
    )

    def validate_files(self, files: list) -> list[Upload]:
        return uploads_from(files)


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


class CcAddressField(serializers.EmailField):
    """An address to copy replies to. One at an IP or a bare host name is refused saying so
    (Django's validator takes `x@[127.0.0.1]` and refuses `x@[IPv6:::1]` as "not valid"), or
    with `leave_out_hosts` read as blank: an inbound email's CC line is the sender's, and no
    reason to refuse their email."""

    def __init__(self, *, leave_out_hosts: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.leave_out_hosts = leave_out_hosts

    def run_validation(self, data=empty):
        if isinstance(data, str) and at_a_host_not_a_domain(data):
            if self.leave_out_hosts:
                return ""
            raise serializers.ValidationError(host_refusal(data))
        return super().run_validation(data)


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
            _check_domain(address)
        return addresses


class AssignWriteSerializer(serializers.Serializer):
    assignee = StrictCharField(
        allow_null=True, max_length=150, help_text="a username, or null to unassign"
    )


class NoteWriteSerializer(serializers.Serializer):
    note = StrictCharField(max_length=4000, trim_whitespace=True)


class OptionalNoteSerializer(serializers.Serializer):
    note = StrictCharField(max_length=4000, required=False, allow_blank=True, default="")


def _check_domain(address: str) -> str:
    # Django's validator takes any domain Python's IDNA 2003 codec can fold into ASCII;
    # addresses are matched on their IDNA 2008 form, which a folded look-alike lacks.
    try:
        email_key(address)
    except BadAddress as exc:
        raise serializers.ValidationError(exc.message) from None
    return address


# Base64 of at least one byte, as mail gateways send it: wrapped in lines (CR and LF anywhere
# between the characters), padded to whole quads.
_B, _N = "[A-Za-z0-9+/]", "[\\r\\n]*"
_TAIL = f"(?:{_B}{_N}{_B}{_N}={_N}={_N}|{_B}{_N}{_B}{_N}{_B}{_N}={_N})"
BASE64_TEXT = re.compile(f"^{_N}(?:(?:{_B}{_N}{_B}{_N}{_B}{_N}{_B}{_N})+{_TAIL}?|{_TAIL})$")
# Text as PostgreSQL can keep it: no NUL (refused by DRF's CharField; said in the schema).
NO_NUL = RegexValidator(r"^[^\x00]*$", "Null characters are not allowed.")


# The schema still says what is valid (the pattern), though the field checks the size first.
@extend_schema_field({"type": "string", "pattern": BASE64_TEXT.pattern})
class Base64TextField(StrictCharField):
    """A file in base64, refused as too large (413) before anything walks its characters: the
    field's own checks, the pattern and the decoder take a second of CPU for 13 MB, while four
    characters (line breaks aside) decode to at most three bytes."""

    def run_validation(self, data=empty):
        if isinstance(data, str):
            characters = len(data) - data.count("\r") - data.count("\n")
            if characters > (settings.ATTACHMENT_MAX_BYTES + 2) // 3 * 4:
                raise TooLarge("An attachment is too large.")
        return super().run_validation(data)


class InboundAttachmentSerializer(serializers.Serializer):
    filename = StrictCharField(
        max_length=1000,
        required=False,
        allow_blank=True,
        default="",
        trim_whitespace=False,
        validators=[NO_NUL],
    )
    content_type = StrictCharField(
        max_length=255,
        validators=[NO_NUL],
        required=False,
        allow_blank=True,
        default="",
        help_text="the sender's word, not used: the type is read from the content",
    )
    content_base64 = Base64TextField(
        trim_whitespace=False,
        help_text="the file's bytes in base64, at least one (line breaks allowed)",
    )

    def validate_content_base64(self, text: str) -> bytes:
        if not BASE64_TEXT.match(text):
            raise serializers.ValidationError("Not valid base64.")
        text = text.replace("\r", "").replace("\n", "")
        try:
            content = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise serializers.ValidationError("Not valid base64.") from None
        if not content:
            raise serializers.ValidationError("The file is empty.")
        return content

    def to_internal_value(self, data) -> Upload:
        values = super().to_internal_value(data)
        return Upload(filename=values["filename"], content=values["content_base64"])


class InboundEmailSerializer(serializers.Serializer):
    # `from` is a Python keyword: the field is declared under its JSON name below.
    name = StrictCharField(
        max_length=200, required=False, allow_blank=True, default="", validators=[NO_NUL]
    )
    subject = StrictCharField(
        max_length=998, required=False, allow_blank=True, default="", validators=[NO_NUL]
    )
    body = StrictCharField(max_length=100000, trim_whitespace=False, validators=[NO_NUL])
    # It threads our replies (In-Reply-To, References): nothing that could break a header.
    message_id = StrictCharField(
        max_length=255,
        validators=[RegexValidator(r"^[!-~]+$", "Not a Message-ID: visible ASCII, no spaces.")],
    )

    cc = serializers.ListField(
        # A blank item is no address (a form's empty field), not an error.
        child=CcAddressField(max_length=254, allow_blank=True, leave_out_hosts=True),
        required=False,
        default=list,
        max_length=50,
        help_text="addresses the email was copied to: kept on the ticket (the first 10), "
        "copied on replies",
    )

    attachments = InboundAttachmentSerializer(
        many=True,
        required=False,
        default=list,
        help_text="the email's files: ATTACHMENT_MAX_BYTES each (10 MB), 25 MB together, "
        "else 413 and nothing is kept",
    )

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.EmailField(max_length=254)
        return fields

    def validate_cc(self, addresses: list[str]) -> list[str]:
        addresses = [address for address in addresses if address]
        for address in addresses:
            _check_domain(address)
        return addresses

    def validate_from(self, address: str) -> str:
        return _check_domain(address)


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


# --- macros -------------------------------------------------------------------------------------


class MacroSerializer(serializers.ModelSerializer):
    shared = serializers.SerializerMethodField(help_text="true: the whole desk's; false: yours")
    translations = serializers.DictField(
        child=serializers.CharField(),
        required=False,
        help_text='the body in other languages, {"zh": "…"}: applying picks the customer\'s '
        f"language ({', '.join(sorted(TEMPLATES))}), else the body",
    )

    class Meta:
        model = Macro
        fields = ["id", "name", "body", "visibility", "actions", "translations", "shared"]

    def get_shared(self, macro: Macro) -> bool:
        return macro.owner_id is None

    def validate_translations(self, translations: dict) -> dict:
        unknown = sorted(set(translations) - set(TEMPLATES))
        if unknown:
            raise serializers.ValidationError(
                f"The desk tells these languages apart: {', '.join(sorted(TEMPLATES))}; "
                f"not {', '.join(unknown)}."
            )
        return translations

    def validate(self, attrs: dict) -> dict:
        current = self.instance
        problems = macro_problems(
            attrs.get("body", current.body if current else ""),
            attrs.get("actions", current.actions if current else {}),
            attrs.get("translations", current.translations if current else {}),
        )
        if problems:
            raise serializers.ValidationError(problems)
        return attrs


class AppliedMacroSerializer(serializers.Serializer):
    body = serializers.CharField(help_text="the rendered text, to edit and send as a reply")
    visibility = serializers.CharField(help_text="public or internal, as the macro suggests")
    actions = serializers.DictField(
        help_text="{status, priority, add_tags}, each optional: applied only when confirmed "
        "through the status, priority and tags endpoints"
    )


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
