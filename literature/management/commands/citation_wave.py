"""Build the reference corpus by one citation wave from anchor works (Europe PMC ids with their source).

    manage.py citation_wave MED:29988130 MED:27304507          # a background job; prints its page
    manage.py citation_wave --anchors-file anchors.txt --here   # done here, with a progress line per list
    manage.py citation_wave --benchmark 3 --here               # anchored on the set's tasks' source publications

Answers are cached; LITERATURE_REPLAY_ONLY=true runs the wave from the cache alone.
"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from literature.models import CitationWave
from literature.waves import AnchorsInvalid, citation_wave_perform, citation_wave_start, citation_wave_start_from_tasks


class Command(BaseCommand):
    help = "Start a citation wave from anchor works (a background job), or do it here with --here."

    def add_arguments(self, parser):
        parser.add_argument("anchors", nargs="*", help="Europe PMC ids with their source, e.g. MED:29988130")
        parser.add_argument("--anchors-file", help="a file of anchors, separated by spaces, commas or lines")
        parser.add_argument("--cohort", type=int, help="anchor on the source publications of this cohort's tasks")
        parser.add_argument("--benchmark", type=int, help="anchor on the source publications of this set's tasks")
        parser.add_argument("--here", action="store_true", help="do the wave in this process, not in a worker")

    def handle(self, *args, anchors, anchors_file, cohort, benchmark, here, **options):
        given = list(anchors)
        if anchors_file:
            try:
                given += Path(anchors_file).read_text(encoding="utf-8").replace(",", " ").split()
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"The anchors file cannot be read: {exc}") from exc
        try:
            if cohort or benchmark:
                kind, group_id = ("cohort", cohort) if cohort else ("benchmark", benchmark)
                wave = citation_wave_start_from_tasks(kind=kind, group_id=group_id, enqueue=not here)
            else:
                wave = citation_wave_start(anchors=given, enqueue=not here)
        except AnchorsInvalid as exc:
            raise CommandError(exc.message) from exc
        if not here:
            page = reverse("literature-citation-wave", args=[wave.pk])
            self.stdout.write(f"Citation wave {wave.pk} is queued for a worker; follow it at {page}.")
            return

        def progress(current: CitationWave) -> None:
            self.stderr.write(f"{current.get_phase_display()}: {current.progress} of {current.total}")

        citation_wave_perform(wave_id=wave.pk, progress=progress)
        wave.refresh_from_db()
        summary = (
            f"{wave.traversals} traversals, {wave.edges} edges ({wave.unmatched} entries unidentified), "
            f"{wave.resolved} of {wave.works} works resolved"
        )
        if wave.state == CitationWave.State.FAILED:
            raise CommandError(f"Citation wave {wave.pk} stopped ({wave.error}) after {summary}.")
        self.stdout.write(f"Citation wave {wave.pk}: {summary}; content hash {wave.corpus_sha256}.")
