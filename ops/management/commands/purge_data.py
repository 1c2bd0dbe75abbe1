"""manage.py purge_data [--dry-run]: delete what people and models wrote longer ago than
DATA_RETENTION_DAYS, wherever it was copied, and attachment files no row names
(ops/retention.py). Celery beat runs it daily (ops.tasks.purge_data)."""

from django.conf import settings
from django.core.management.base import BaseCommand

from ops.retention import purge_expired_data, retention_cutoff


class Command(BaseCommand):
    help = (
        "Blank ticket message bodies and every copy of them (ticket changes, events, "
        "notifications), delete attachment files and run transcripts, and blank tool results "
        "older than DATA_RETENTION_DAYS; sweep attachment files no row names. Refund requests, "
        "confirmations, events, attachment records and log metadata stay."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--dry-run", action="store_true", help="Count what would be purged; change nothing."
        )

    def handle(self, *args, dry_run: bool = False, **options):
        cutoff = retention_cutoff()
        note = " (dry run: nothing is changed)" if dry_run else ""
        self.stdout.write(
            f"Keeping {settings.DATA_RETENTION_DAYS} days: purging what was written before "
            f"{cutoff.isoformat(timespec='seconds')}{note}"
        )
        counts = purge_expired_data(cutoff=cutoff, dry_run=dry_run, progress=self.stdout.write)
        verb = "would be purged" if dry_run else "purged"
        for label, count in counts.items():
            self.stdout.write(f"{label}: {count} {verb}")
        self.stdout.write(self.style.SUCCESS(f"Total: {sum(counts.values())} {verb}"))
