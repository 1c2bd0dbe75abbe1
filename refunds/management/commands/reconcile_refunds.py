from django.core.management.base import BaseCommand

from refunds.reconciliation import refunds_reconcile


class Command(BaseCommand):
    help = (
        "Settle refunds whose provider outcome is unknown or whose worker died mid-call, "
        "and execute approved refunds whose task never ran. Safe to run at any time, "
        "also next to the periodic sweep."
    )

    def handle(self, *args, **options):
        report = refunds_reconcile()
        self.stdout.write(f"Reconciled refunds. {report.summary()}.")
