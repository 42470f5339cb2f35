"""Import a file of references into the corpus, with a progress bar on stderr (made for large files).

manage.py import_references pubmed_export.xml        # the format told from the content
manage.py import_references savedrecs.txt --format wos
manage.py import_references scopus.csv --format csv --mapping '{"title": "Title", "published": "Year"}'
"""

import os
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from literature.services import FORMATS, ImportInvalid, references_import

PROBLEMS_PRINTED = 200


class ProgressBar:
    """Bytes read of the file, records read and records per second; redrawn in place on a terminal, a line every
    few seconds otherwise (a log file)."""

    def __init__(self, stream, total_bytes: int, out):
        self.stream, self.total, self.out = stream, max(1, total_bytes), out
        self.tty = out.isatty()
        self.started = self.drawn = time.monotonic()

    def __call__(self, records: int) -> None:
        now = time.monotonic()
        if now - self.drawn < (0.2 if self.tty else 5.0):
            return
        self.drawn = now
        self.draw(records, min(self.total, self.stream.tell()))

    def draw(self, records: int, done_bytes: int, end: str = "") -> None:
        elapsed = max(1e-6, time.monotonic() - self.started)
        share = done_bytes / self.total
        bar = "#" * int(share * 30)
        line = f"[{bar:<30}] {share:4.0%} {records:>10,} records {records / elapsed:>9,.0f} records/s {elapsed:6.1f} s"
        self.out.write(("\r" + line if self.tty else line + "\n") + end, style_func=str, ending="")
        self.out.flush()

    def finish(self, records: int) -> None:
        self.draw(records, self.total, end="\n" if self.tty else "")


class Command(BaseCommand):
    help = (
        "Import references (PubMed XML, MEDLINE .nbib, RIS, Web of Science, BibTeX or CSV) into the corpus: every "
        "usable record; the others are listed with their reasons. A file that cannot be read imports nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="the file to import")
        parser.add_argument(
            "--format", choices=list(FORMATS), help="the file's format (default: told from its content)"
        )
        parser.add_argument("--mapping", help='CSV only: JSON {field: column}, e.g. {"title": "Article Title"}')
        parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
        parser.add_argument(
            "--all-problems", action="store_true", help=f"print every problem, not the first {PROBLEMS_PRINTED}"
        )

    def handle(self, *args, path, format, mapping, no_progress, all_problems, **options):
        file_path = Path(path)
        if not file_path.is_file():
            raise CommandError(f"There is no file {path}.")
        with open(file_path, "rb") as stream:
            progress = None if no_progress else ProgressBar(stream, os.path.getsize(file_path), self.stderr)
            records_read = 0

            def report(records: int) -> None:
                nonlocal records_read
                records_read = records
                if progress:
                    progress(records)

            try:
                summary = references_import(
                    file=stream, format=format, column_mapping=mapping, progress=report, name=file_path.name
                )
            except ImportInvalid as exc:
                if progress:
                    progress.finish(records_read)
                shown = exc.records if all_problems else exc.records[:PROBLEMS_PRINTED]
                for problem in shown:
                    where = "file" if problem["record"] is None else f"record {problem['record']}"
                    ident = f" ({problem['id']})" if problem.get("id") else ""
                    self.stderr.write(f"{where}{ident} {problem['field']}: {problem['message']}")
                if len(shown) < len(exc.records):
                    self.stderr.write(f"… and {len(exc.records) - len(shown)} more (--all-problems lists them).")
                raise CommandError(f"Nothing was imported: {len(exc.records)} problem(s) in {file_path.name}.") from exc
            if progress:
                progress.finish(records_read)
        self._list_left_out(summary, all_problems)
        self.stdout.write(
            f"Imported {summary.records} references from {file_path.name} in {summary.seconds:.1f} s: "
            f"{summary.created} new, {summary.updated} updated, {summary.unchanged} unchanged, "
            f"{summary.repeated} repeated in the file, {summary.skipped_count} unusable and skipped, "
            f"{summary.warning_count} warning(s)."
        )

    def _list_left_out(self, summary, all_problems: bool) -> None:
        """The skipped records with their reasons, then the warnings, on stderr."""
        lines = [f"skipped {_where(entry['record'], entry['id'])}: {entry['reason']}" for entry in summary.skipped] + [
            f"warning {_where(entry['record'], entry['id'])} {entry['field']}: {entry['message']}"
            for entry in summary.warnings
        ]
        shown = lines if all_problems else lines[:PROBLEMS_PRINTED]
        for line in shown:
            self.stderr.write(line)
        hidden = summary.skipped_count + summary.warning_count - len(shown)
        if hidden > 0:
            self.stderr.write(f"… and {hidden} more (--all-problems lists up to the first thousand of each).")


def _where(record, ident: str) -> str:
    where = "(outside any record)" if record is None else f"record {record}"
    return f"{where} ({ident})" if ident else where
