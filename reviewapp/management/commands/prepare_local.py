"""Everything `make run` does before starting the servers, in one process (starting Django costs more than a second
start's work): migrate when a migration is unapplied, the default roster, the demo, and the static files when any
changed. A second start therefore only checks, then loads the demo's new passwords."""

import hashlib
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles.finders import get_finders
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

STATIC_STAMP = ".collected-fingerprint"


def unapplied_migrations() -> int:
    executor = MigrationExecutor(connection)
    return len(executor.migration_plan(executor.loader.graph.leaf_nodes()))


def static_fingerprint() -> str:
    """sha256 over every static file the finders see: its path, size and modification time (cheap, no reading)."""
    digest = hashlib.sha256()
    entries = []
    for finder in get_finders():
        for path, storage in finder.list([]):
            stat = Path(storage.path(path)).stat()
            entries.append(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}")
    for entry in sorted(entries):
        digest.update(entry.encode())
    return digest.hexdigest()


class Command(BaseCommand):
    help = (
        "Migrate if needed, set up the default roster, load the demo and (with --static) collect changed static files."
    )

    def add_arguments(self, parser):
        parser.add_argument("--static", action="store_true", help="also collect the static files when they changed")
        parser.add_argument(
            "--no-logins", action="store_true", help="leave the demo logins to the banner file (see load_demo)"
        )

    def handle(self, *args, **options):
        pending = unapplied_migrations()
        if pending:
            self.stdout.write(f"Applying {pending} migration{'s' if pending != 1 else ''}…")
            call_command("migrate", interactive=False, verbosity=0)
        call_command("setup_roster", stdout=self.stdout)
        call_command("load_demo", no_logins=options["no_logins"], stdout=self.stdout)
        if options["static"]:
            self._collect_static()

    def _collect_static(self):
        stamp = Path(settings.STATIC_ROOT) / STATIC_STAMP
        fingerprint = static_fingerprint()
        if stamp.exists() and stamp.read_text() == fingerprint:
            return
        call_command("collectstatic", interactive=False, verbosity=0)
        stamp.write_text(fingerprint)
