"""Search Europe PMC or PubMed (NCBI E-utilities) and upsert the results into the corpus.

    manage.py fetch_references --source europepmc --query '"clonal hematopoiesis" AND inflammation' \
        --from 2010-01-01 --until 2019-12-31
    manage.py fetch_references --source pubmed --query 'rapamycin lifespan' --limit 500

Answers are cached (LITERATURE_SEARCH_CACHE_SECONDS for searches, for good by id); LITERATURE_REPLAY_ONLY=true
serves only from the cache.
"""

from datetime import date

from django.core.management.base import BaseCommand, CommandError

from literature.services import references_fetch
from literature.sources.transport import SourceError


def _date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise CommandError(f"“{text}” is not a date like 2019-12-31.") from None


class Command(BaseCommand):
    help = "Search an online literature source by query and publication dates, and upsert the results."

    def add_arguments(self, parser):
        parser.add_argument("--source", choices=["europepmc", "pubmed"], required=True)
        parser.add_argument("--query", required=True, help="the source's own query syntax")
        parser.add_argument("--from", dest="start", help="published on or after (YYYY-MM-DD)")
        parser.add_argument("--until", dest="end", help="published on or before (YYYY-MM-DD)")
        parser.add_argument("--limit", type=int, help="at most this many results")

    def handle(self, *args, source, query, start, end, limit, **options):
        start_date, end_date = (_date(start) if start else None), (_date(end) if end else None)
        if start_date and end_date and start_date > end_date:
            raise CommandError("--from is after --until.")

        def progress(records: int) -> None:
            self.stderr.write(f"{records} records received…")

        try:
            summary = references_fetch(
                source=source, query=query, start=start_date, end=end_date, limit=limit, progress=progress
            )
        except SourceError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"{summary.records} references from {source} in {summary.seconds:.1f} s: {summary.created} new, "
            f"{summary.updated} updated, {summary.unchanged} unchanged, {summary.skipped} unusable and skipped."
        )
