"""An email from the mail gateway (desk.api.inbound): its fields, its attachments in base64
(refused as too large before anything decodes them), and the answer. Apart because it comes
from outside the desk and is checked as such: no NUL characters, a Message-ID that fits a
header, addresses at bare hosts left out rather than refused."""

import base64
import binascii
import re

from django.conf import settings
from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty

from config.serializers import StrictCharField
from desk.serializers.fields import CcAddressField, check_domain
from tickets.attachments import TooLarge, Upload

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
            check_domain(address)
        return addresses

    def validate_from(self, address: str) -> str:
        return check_domain(address)


class InboundResultSerializer(serializers.Serializer):
    ticket = serializers.CharField(help_text="the ticket reference, e.g. TCK-1005")
    created = serializers.BooleanField(help_text="a new ticket was opened")
    duplicate = serializers.BooleanField(help_text="this message_id was received before")
