"""Large file imports on SQLite: written in short committed steps, staged invisibly until the whole file is read, so
that reviewers' autosaves never wait long, a failed import leaves the corpus as it was, and one whose process died is
removed (while it was reading) or finished (while it was applying) by the sweeper."""

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.urls import reverse

from literature import services
from literature.models import Reference, ReferenceImport, StagedReference
from literature.selectors import reference_imports_recent
from literature.services import ImportInvalid, reference_imports_sweep, references_import
from tests import factories
from tests.autosave_support import reviewer_autosaving
from tests.screening_support import wait_for

ROOT = Path(__file__).resolve().parents[2]
LARGE = 15_000  # references: some 9 MB of MEDLINE, staged
ABSTRACT = (
    "Background: caloric restriction extends lifespan in several model organisms, yet its mechanisms in mammals "
    "remain debated. Methods: we followed cohorts of mice on restricted and ad libitum diets and measured insulin "
    "signalling, mitochondrial function and inflammatory markers across the lifespan. Results: restriction lowered "
    "circulating IGF-1 and improved mitochondrial respiration in liver and muscle. Conclusions: the benefits depend "
    "on the age at which restriction begins."
)


def medline_file(count: int, *, first: int = 1, title: str = "Caloric restriction study") -> bytes:
    """A MEDLINE file of `count` articles, PMIDs from `first`, each with a title, an abstract, authors and a date."""
    records = [
        f"PMID- {pmid}\nTI  - {title} {pmid} in ageing mice\nDP  - 2021 Mar\nAB  - {ABSTRACT}\n"
        f"FAU - Doe, Jane\nFAU - Roe, Richard\nJT  - Journal of Ageing Research\n\n"
        for pmid in range(first, first + count)
    ]
    return "".join(records).encode()


def sqlite_only():
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("on PostgreSQL writers do not wait on each other: an import is one transaction")


def corpus() -> list[tuple]:
    return list(Reference.objects.order_by("pk").values_list("pk", "source_id", "content_sha256", "updated_at"))


def test_on_sqlite_reviewers_autosave_while_a_large_corpus_import_goes_on(transactional_db):
    """A reviewer autosaves every 0.1 s while a coordinator imports 15,000 references: the import commits in short
    steps, so every autosave is stored within about two seconds and many while the import goes on; none of the file's
    references is in the corpus while the file is still being read."""
    sqlite_only()

    from reviewapp.models import Cohort, Review

    reviewer = factories.make_user("reviewer")
    proposal = factories.make_proposal()
    cohort = factories.make_cohort([proposal], status=Cohort.Status.OPEN)
    assignment = factories.make_assignment(cohort, reviewer, proposal)
    content = medline_file(LARGE)
    seen: list[tuple[int, str | None]] = []  # (references in the corpus, then the import's phase) between autosaves

    def observe():
        # Counted first: references seen imply the phase read after them is no longer `staging`.
        references = Reference.objects.count()
        seen.append((references, ReferenceImport.objects.values_list("phase", flat=True).first()))

    with reviewer_autosaving(assignment=assignment, reviewer=reviewer, observe=observe) as autosaves:
        wait_for(lambda: len(autosaves.saves) >= 3, 60, "the first autosaves")
        autosaves.watching.set()
        started = time.monotonic()
        summary = references_import(file=io.BytesIO(content), format="medline")
        ended = time.monotonic()
    assert (summary.created, summary.records) == (LARGE, LARGE) and Reference.objects.count() == LARGE
    assert not StagedReference.objects.exists()
    assert ReferenceImport.objects.get().phase == ReferenceImport.Phase.DONE
    during, longest, saves = autosaves.within(started, ended), autosaves.longest(), autosaves.saves
    assert len(during) >= 5, (len(during), ended - started)
    # About two seconds on a busy two-core machine, with room for a busier one; written in one transaction, the same
    # import held an autosave for the whole import (some 15–20 s).
    assert longest < 3, (longest, ended - started, len(saves))
    assert {references for references, phase in seen if phase == ReferenceImport.Phase.STAGING} <= {0}
    assert any(phase == ReferenceImport.Phase.STAGING for _, phase in seen)
    assert Review.objects.get(assignment=assignment).version == len(saves)


@pytest.fixture
def staged_above_nothing(monkeypatch):
    """Every file import staged, however small (the size above which it is staged lowered to none)."""
    monkeypatch.setattr(services, "STAGE_ABOVE_BYTES", 0)


def test_on_sqlite_an_import_failing_part_way_leaves_the_corpus_as_it_was(transactional_db, staged_above_nothing):
    """A file that updates stored references and adds new ones, then turns out not to be UTF-8 after several committed
    steps: while it is read its references are staged (none in the corpus), and once refused nothing of it is left."""
    sqlite_only()
    references_import(file=io.BytesIO(medline_file(300, title="Earlier")), format="medline")
    before = corpus()
    content = medline_file(300, title="Revised") + medline_file(2700, first=301) + b"PMID- 9999\nTI  - Bad \xff\n\n"
    observed: list[tuple[int, bool]] = []

    def progress(read: int) -> None:
        observed.append((StagedReference.objects.count(), corpus() == before))

    with pytest.raises(ImportInvalid, match="problem"):
        references_import(file=io.BytesIO(content), format="medline", progress=progress)
    assert any(staged >= services.STAGE_ROWS for staged, _ in observed), observed
    assert all(unchanged for _, unchanged in observed)
    assert corpus() == before
    assert not StagedReference.objects.exists() and ReferenceImport.objects.count() == 1


def test_on_sqlite_a_staged_reimport_changes_nothing_and_a_changed_file_only_what_changed(
    transactional_db, staged_above_nothing
):
    sqlite_only()
    content = medline_file(1200)
    first = references_import(file=io.BytesIO(content), format="medline")
    assert (first.created, first.updated, first.unchanged) == (1200, 0, 0)
    before = corpus()
    again = references_import(file=io.BytesIO(content), format="medline")
    assert (again.records, again.created, again.updated, again.unchanged) == (1200, 0, 0, 1200)
    assert corpus() == before

    changed = medline_file(100, title="Revised") + medline_file(1100, first=101) + medline_file(100, first=2001)
    summary = references_import(file=io.BytesIO(changed), format="medline")
    assert (summary.created, summary.updated, summary.unchanged) == (100, 100, 1100)
    assert Reference.objects.count() == 1300
    assert Reference.objects.filter(title__startswith="Revised").count() == 100
    assert not StagedReference.objects.exists()
    recorded = ReferenceImport.objects.order_by("pk").values_list("phase", "created", "updated", "unchanged")
    assert list(recorded) == [("done", 1200, 0, 0), ("done", 0, 0, 1200), ("done", 100, 100, 1100)]


def importing_in_a_process(path: Path) -> subprocess.Popen:
    """An import of the file by another process, on the test database."""
    from django.db import connection

    code = (
        "import django, sys; django.setup(); from literature.services import references_import; "
        "references_import(file=sys.argv[1], format='medline')"
    )
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "reviewapp.settings",
        "DATABASE_URL": f"sqlite:///{connection.settings_dict['NAME']}",
    }
    return subprocess.Popen([sys.executable, "-c", code, str(path)], cwd=ROOT, env=environment)


def killed_when(process: subprocess.Popen, predicate, what: str) -> None:
    try:
        wait_for(predicate, 180, what)
    finally:
        process.kill()
        process.wait(60)


def test_on_sqlite_an_import_killed_while_reading_is_removed_by_the_sweeper(transactional_db, tmp_path, settings):
    """Killed while its file is being read: its staged references stay invisible (the corpus and the list of imports
    unchanged); the sweeper leaves it while its heartbeat is recent and removes it once it is silent."""
    sqlite_only()
    path = tmp_path / "large.nbib"
    path.write_bytes(medline_file(LARGE))
    killed_when(importing_in_a_process(path), lambda: StagedReference.objects.count() >= 1000, "two staged steps")
    left = ReferenceImport.objects.get()
    assert left.phase == ReferenceImport.Phase.STAGING and StagedReference.objects.exists()
    assert not Reference.objects.exists() and reference_imports_recent() == []
    assert reference_imports_sweep() == 0  # its heartbeat is recent: it may still be at work
    settings.OH_SILENT_SECONDS = 0
    assert reference_imports_sweep() == 1
    assert not StagedReference.objects.exists() and not ReferenceImport.objects.exists()
    assert not Reference.objects.exists()


@pytest.mark.parametrize("finisher", ["sweeper", "next import"])
def test_on_sqlite_an_import_killed_while_applying_is_finished(
    transactional_db, tmp_path, settings, monkeypatch, finisher
):
    """Killed while its stage is being applied: part of the file is in the corpus; the sweeper (once the import is
    silent) or the next staged import (before its own references) applies the rest, so the file is imported once,
    and a newer file imported next keeps its newer content."""
    sqlite_only()
    path = tmp_path / "large.nbib"
    path.write_bytes(medline_file(LARGE))
    killed_when(importing_in_a_process(path), Reference.objects.exists, "the first applied step")
    left = ReferenceImport.objects.get()
    assert left.phase == ReferenceImport.Phase.APPLYING and 0 < Reference.objects.count() < LARGE
    if finisher == "sweeper":
        settings.OH_SILENT_SECONDS = 0
        assert reference_imports_sweep() == 1
    else:
        settings.OH_SILENT_SECONDS = 3600  # the sweeper would leave it: the next import finishes it
        newer = medline_file(10, first=LARGE - 9, title="Newer")
        monkeypatch.setattr(services, "STAGE_ABOVE_BYTES", 0)
        summary = references_import(file=io.BytesIO(newer), format="medline")
        assert (summary.created, summary.updated) == (0, 10)
        assert Reference.objects.filter(title__startswith="Newer").count() == 10
    left.refresh_from_db()
    assert left.phase == ReferenceImport.Phase.DONE and left.created == LARGE and left.records == LARGE
    assert Reference.objects.count() == LARGE and not StagedReference.objects.exists()


STAGED_CANARIES = {
    "import": "cnry-staged-import-3e1f",
    "title": "cnryzorvantide staged title",
    "doi": "10.9999/cnry-7b2",
}


def test_a_staged_import_and_its_references_reach_no_page_search_or_count(client, db):
    """What a staged import holds before it is applied (its ReferenceImport still `staging`, its StagedReference rows)
    is on no coordinator's page, in no search or novelty retrieval and in no count of the corpus."""
    from literature import retrieval
    from literature.selectors import corpus_size_by_source

    batch = ReferenceImport.objects.create(
        origin=ReferenceImport.Origin.FILE, name=STAGED_CANARIES["import"], phase=ReferenceImport.Phase.STAGING
    )
    StagedReference.objects.create(
        reference_import=batch,
        source=Reference.Source.PUBMED,
        source_id="424242",
        pmid="424242",
        doi=STAGED_CANARIES["doi"],
        title=STAGED_CANARIES["title"],
        abstract="An abstract about cnryzorvantide.",
        content_sha256="c" * 64,
    )
    client.force_login(factories.make_user("coordinator"))
    pages = [
        client.get(reverse("literature-home")),
        client.get(reverse("literature-corpus")),
        client.get(reverse("literature-corpus"), {"q": "cnryzorvantide"}),
    ]
    assert all(page.status_code == 200 for page in pages)
    text = " ".join(page.content.decode() for page in pages)
    assert not [name for name, canary in STAGED_CANARIES.items() if canary in text]
    assert retrieval.search("cnryzorvantide staged title", limit=10) == []
    assert corpus_size_by_source() == [] and reference_imports_recent() == []
