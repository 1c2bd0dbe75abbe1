from django.apps import AppConfig


class DeskConfig(AppConfig):
    """The support desk on top of the domain apps: the ticket pages and API, the whole /api/,
    the receivers that post other apps' news on tickets, the demo data (seed_demo), and the
    order admin. No models: tickets and orders keep theirs."""

    name = "desk"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_save

        from desk.receivers import post_refund_change, post_refund_note
        from ops.credentials import revoke_api_tokens
        from refunds.signals import refund_changed, refund_note

        refund_note.connect(post_refund_note, dispatch_uid="tickets.post_refund_note")
        refund_changed.connect(post_refund_change, dispatch_uid="tickets.post_refund_change")
        # The desk issues API tokens (POST /api/auth/token/): it also takes them back.
        post_save.connect(
            revoke_api_tokens, sender=get_user_model(), dispatch_uid="tickets.revoke_api_tokens"
        )
