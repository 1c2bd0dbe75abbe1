from django.core.management.base import BaseCommand

from desk.demo import reset_demo, seed_demo


class Command(BaseCommand):
    help = "Load the demo users, customers, orders and tickets (idempotent; --reset rebuilds)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--reset",
            action="store_true",
            help="delete the demo data (and its runs and refunds) first",
        )

    def handle(self, *args, reset: bool = False, **options):
        if reset:
            reset_demo()
            self.stdout.write("Demo data deleted.")
        seed_demo()
        self.stdout.write(self.style.SUCCESS("Demo data ready."))
