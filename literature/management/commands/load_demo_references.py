"""Load the demo corpus of references (written for the demonstration, marked as demo data)."""

from django.core.management.base import BaseCommand

from literature.demo import demo_references_load


class Command(BaseCommand):
    help = "Load the demo references on the demo's topics (illustrative text, marked as demo data). Idempotent."

    def handle(self, *args, **options):
        writer = demo_references_load()
        self.stdout.write(
            f"Demo references: {writer.created} new, {writer.updated} updated, {writer.unchanged} unchanged."
        )
