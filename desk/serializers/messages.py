"""A ticket's messages and their files as the API answers them, the body of a new message
(JSON, or multipart/form-data with files), and a draft reply with the check of what it says
about refunds."""

from django.urls import reverse
from rest_framework import serializers

from config.serializers import StrictCharField
from desk.serializers.fields import StrictBooleanField
from tickets.attachments import Upload, uploads_from
from tickets.models import Attachment, TicketMessage


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
