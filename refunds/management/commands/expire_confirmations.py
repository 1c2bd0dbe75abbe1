from django.core.management.base import BaseCommand

from refunds.services import refund_expire_confirmations


class Command(BaseCommand):
    help = "Mark pending refund confirmation versions past their expiry as expired."

    def handle(self, *args, **options):
        count = refund_expire_confirmations()
        self.stdout.write(f"Expired {count} pending refund confirmation(s).")
