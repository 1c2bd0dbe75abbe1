from django.apps import AppConfig


class TicketsConfig(AppConfig):
    name = "tickets"

    def ready(self) -> None:
        from refunds.signals import refund_note
        from tickets.receivers import post_refund_note

        refund_note.connect(post_refund_note, dispatch_uid="tickets.post_refund_note")
