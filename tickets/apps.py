from django.apps import AppConfig


class TicketsConfig(AppConfig):
    name = "tickets"

    def ready(self) -> None:
        from django.db.models.signals import post_delete

        from tickets.attachment_files import delete_file_with_row
        from tickets.models import Attachment

        # However a row goes (admin, a ticket's cascade, a script), its bytes go with it.
        post_delete.connect(
            delete_file_with_row, sender=Attachment, dispatch_uid="tickets.delete_file_with_row"
        )
