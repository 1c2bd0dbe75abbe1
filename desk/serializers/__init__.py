"""The shapes of the desk's own API (desk.api): what it answers and the bodies it takes, a
module per part of the desk: tickets, messages (with drafts and files), email from the mail
gateway (inbound), customers, macros, the live desk's changes and notifications (live), and
the field types more than one of them uses (fields).

Here: the names used from outside the package, so `from desk.serializers import ...` keeps
working."""

from desk.serializers.fields import StrictBooleanField
from desk.serializers.inbound import InboundAttachmentSerializer
from desk.serializers.live import (
    NotificationReadResultSerializer,
    NotificationReadSerializer,
    NotificationSerializer,
    TicketChangeSerializer,
)
from desk.serializers.tickets import TicketSerializer

__all__ = [
    "InboundAttachmentSerializer",
    "NotificationReadResultSerializer",
    "NotificationReadSerializer",
    "NotificationSerializer",
    "StrictBooleanField",
    "TicketChangeSerializer",
    "TicketSerializer",
]
