"""Every page, for every role, in a real browser (headless Chromium) at a phone's width (390 px) and a desktop's
(1280 px): nothing runs off the screen and axe-core finds no serious or critical violation. Screenshots of every page
are saved under var/screenshots/.

The data are made with the project's services: a cohort imported, assigned and partly reviewed, a draft cohort, a
benchmark set with judged hypotheses, a completed run on the simulated model server, the AI panel's reviews and
pairwise critique of the cohort, a corpus and an inspiration audit.
"""

import json
import os
from dataclasses import dataclass

import pytest
from django.urls import reverse

from literature.models import CitationWave, Reference
from literature.services import references_import
from reviewapp import protocol
from reviewapp.inspiration.services import audit_complete_here, audit_create, cutoff_set
from reviewapp.models import Assignment, BackgroundJob, Cohort
from reviewapp.panel.models import PanelSubject
from reviewapp.panel.services.critique import critique_start
from reviewapp.panel.services.panel import panel_start_for_cohort
from reviewapp.services import jobs
from reviewapp.services.cohorts import cohort_assign, cohort_create
from reviewapp.services.imports import cohort_import_file
from reviewapp.services.reviews import assignment_defer, review_save, review_submit
from screening.models import Run
from screening.services.runs import run_create
from tests import factories
from tests.benchmark_support import judged_set
from tests.browser_support import assert_page_fits, check_page
from tests.screening_support import drive, drop_broker_connections, simulated_default_roster, use_broker

# Playwright's sync API runs an event loop in this thread; the ORM calls here are still synchronous.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "literature")
AUTHORS = ("Model Astra", "Model Sonnet")
COHORT_TABS = ("detail", "proposals", "people", "exports")


def cohort_file(tasks: int = 3, per_task: int = 4) -> bytes:
    """Research tasks, each with proposals by two authors, every third one a revision of the one before."""
    task_rows = [
        {
            "key": f"AGE-{t}",
            "question": f"Does lowering signalling pathway {t} in mid-life extend healthy lifespan in mice?",
            "background": "Reduced nutrient signalling extends lifespan in worms, flies and mice. " * 3,
            "published": "2024-03-01",
        }
        for t in range(1, tasks + 1)
    ]
    proposals = []
    for t in range(1, tasks + 1):
        for n in range(1, per_task + 1):
            pid = f"AGE-{t}-{n}"
            proposals.append(
                {
                    "id": pid,
                    "task": f"AGE-{t}",
                    "statement": f"Inhibiting kinase {t}.{n} after 12 months of age extends median lifespan of female "
                    f"mice by a tenth. The effect needs intact autophagy.",
                    "mechanism": f"Less kinase {t}.{n} activity lowers mTORC1 signalling and restores autophagy.",
                    "prediction": "Treated females live longer than controls; males do not.",
                    "domain_category": "nutrient sensing",
                    "investigation_plan": "Dose C57BL/6 mice from 12 months; survival, frailty index, autophagy flux.",
                    "data_requirements": "Survival curves and tissue samples of 40 mice per arm.",
                    "alternative_explanations": "Lower food intake could explain the gain on its own.",
                    "citations": ["Harrison 2009", "Mannick 2014"],
                    "author": AUTHORS[n % 2],
                    "author_company": "Astra Labs" if n % 2 == 0 else "Sonnet Inc",
                    "method": "revision" if n % 3 == 0 else "single-shot",
                    **({"parents": [f"AGE-{t}-{n - 1}"]} if n % 3 == 0 else {}),
                }
            )
    return json.dumps({"tasks": task_rows, "proposals": proposals}).encode()


ANSWERS = {
    "overall": 4,
    "recommendation": "revise",
    **dict(zip(protocol.CRITERION_FIELDS, ["3", "2", protocol.CANT_JUDGE, "4", "1", "3"], strict=True)),
    "flaw_verdict": "fixable",
    "flaw_checklist": [protocol.FLAW_CHECKLIST_KEYS[0]],
    "main_flaw": "Only 6 mice per arm.",
    "comments": "Worth a pilot.",
}


@dataclass
class World:
    cohort: Cohort
    draft: Cohort
    editable: Assignment
    submitted: Assignment
    benchmark_id: int
    run: Run
    subject_id: int
    reference_id: int
    wave_id: int
    audit_id: int
    job_id: int


@pytest.fixture
def world(settings, monkeypatch, transactional_db):
    use_broker(settings, monkeypatch, "memory://")  # work is done here, in the test's thread
    settings.AI_PANEL_CONCURRENCY = 1  # one request at a time: SQLite takes one writer
    with simulated_default_roster(settings, monkeypatch, latency=0, seed=13):
        coordinator = factories.make_user("coordinator", username="coord-pages")
        factories.make_user("analyst", username="analyst-pages")
        reviewers = [factories.make_user("reviewer", username=f"rev-pages-{n}") for n in range(1, 4)]

        cohort = cohort_create(name="Nutrient signalling in ageing", reviewers_per_proposal=2, seed=5, user=coordinator)
        cohort_import_file(cohort=cohort, filename="cohort.json", content=cohort_file(), user=coordinator)
        cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=2, seed=5, user=coordinator)
        for reviewer in reviewers:
            queue = list(Assignment.objects.filter(cohort=cohort, reviewer=reviewer).order_by("position"))
            for assignment in queue[:5]:
                review_submit(assignment=assignment, reviewer=reviewer, answers=ANSWERS, version=0)
            review_save(assignment=queue[5], reviewer=reviewer, answers={"overall": 3}, version=0)
            assignment_defer(assignment=queue[6], reviewer=reviewer, reason="I know the authors of this work.")
        mine = Assignment.objects.filter(cohort=cohort, reviewer=reviewers[0]).order_by("position")
        draft = cohort_create(name="Second round", user=coordinator)
        cohort_import_file(cohort=draft, filename="round-2.json", content=cohort_file(tasks=1), user=coordinator)

        benchmark = judged_set()

        run = drive(
            run_create(
                question="How does remodelling of the bone-marrow niche affect mutant clones?",
                background="Clonal haematopoiesis rises with age.",
                client_address="192.0.2.20",
            )
        )
        jobs.job_run(job_id=panel_start_for_cohort(cohort=cohort, user=coordinator).pk)
        jobs.job_run(job_id=critique_start(cohort=cohort, per_proposal=2, seed=3, user=coordinator).pk)

        with open(os.path.join(FIXTURES, "pubmed_efetch.xml"), "rb") as file:
            references_import(file=file, format="pubmed_xml", user=coordinator)
        wave = CitationWave.objects.create(anchors=["MED:29988130"])
        for author in AUTHORS:
            cutoff_set(group=author, cutoff="2023-06", user=coordinator)
        audit = audit_create(cohort=cohort, user=coordinator, enqueue=False)
        audit_complete_here(audit_id=audit.pk)

        world = World(
            cohort=cohort,
            draft=draft,
            editable=Assignment.objects.filter(cohort=cohort, reviewer=reviewers[0], review__isnull=True).first(),
            submitted=mine.first(),
            benchmark_id=benchmark.pk,
            run=run,
            subject_id=PanelSubject.objects.filter(proposal__cohorts=cohort).order_by("pk").last().pk,
            reference_id=Reference.objects.order_by("pk").first().pk,
            wave_id=wave.pk,
            audit_id=audit.pk,
            job_id=BackgroundJob.objects.filter(kind="ai_panel").get().pk,
        )
        yield world
    drop_broker_connections()


def staff_pages(world: World, *, coordinator: bool) -> list[tuple[str, str]]:
    c, d, b, run = world.cohort.pk, world.draft.pk, world.benchmark_id, world.run.public_id
    pages = [
        ("cohorts", reverse("cohort-list")),
        *(
            (f"cohort {tab}", reverse(f"cohort-{tab}", args=[c]))
            for tab in ("detail", "proposals", "people", "exports")
        ),
        *((f"draft cohort {tab}", reverse(f"cohort-{tab}", args=[d])) for tab in ("detail", "proposals", "people")),
        ("cohort statistics", reverse("cohort-statistics", args=[c])),
        ("AI panel", reverse("panel-cohort", args=[c])),
        ("ratings", reverse("panel-ratings", args=[c])),
        ("calibration", reverse("panel-calibration", args=[c])),
        ("evaluation", reverse("panel-evaluation", args=[c])),
        ("contribution families", reverse("panel-families", args=[c])),
        # A revision by another author: a run of one version whose parent is context, drawn dashed.
        ("research run", reverse("panel-evaluation-run", args=[c, "AGE-1-3"])),
        ("panel profile", reverse("panel-subject", args=[world.subject_id])),
        ("panel prompts", reverse("panel-prompts")),
        ("run panel", reverse("panel-run", args=[run])),
        ("benchmark panel", reverse("panel-benchmark", args=[b])),
        ("benchmarks", reverse("benchmark-list")),
        ("benchmark", reverse("benchmark-detail", args=[b])),
        ("judge table", reverse("benchmark-judge-table", args=[b])),
        ("benchmark statistics", reverse("benchmark-statistics", args=[b])),
        ("screening runs", reverse("screening-run-list")),
        ("model calls", reverse("screening-run-calls", args=[run])),
        ("corpus", reverse("literature-corpus") + "?q=ageing"),
        ("reference", reverse("literature-reference", args=[world.reference_id])),
        ("citation waves", reverse("literature-citation-waves")),
        ("citation wave", reverse("literature-citation-wave", args=[world.wave_id])),
        ("inspiration", reverse("inspiration-home")),
        ("cutoffs", reverse("inspiration-cutoffs")),
        ("inspiration audit", reverse("inspiration-audit", args=[world.audit_id])),
        ("run page", reverse("open-hypothesis-run", args=[run])),
        ("API tokens", reverse("tokens")),
        ("password", reverse("password_change")),
    ]
    if coordinator:
        pages += [
            ("job", reverse("job-detail", args=[world.job_id])),  # a job's page is its starter's
            ("import", reverse("cohort-import", args=[d])),
            ("people", reverse("user-list")),
            ("benchmark import", reverse("benchmark-import", args=[b])),
            ("literature", reverse("literature-home")),
        ]
    return pages


def pages_of(role: str, world: World) -> list[tuple[str, str]]:
    if role == "visitor":
        run = world.run.public_id
        return [
            ("login", reverse("login")),
            ("start a run", reverse("open-hypothesis")),
            ("run page", reverse("open-hypothesis-run", args=[run])),
            ("run page delivered", reverse("open-hypothesis-run", args=[run]) + "?show=delivered"),
        ]
    if role == "reviewer":
        return [
            ("queue", reverse("review-queue")),
            ("review", reverse("review-page", args=[world.editable.pk])),
            ("submitted review", reverse("review-page", args=[world.submitted.pk])),
            ("API tokens", reverse("tokens")),
            ("password", reverse("password_change")),
        ]
    return staff_pages(world, coordinator=role == "coordinator")


USERNAMES = {"reviewer": "rev-pages-1", "coordinator": "coord-pages", "analyst": "analyst-pages"}


@pytest.mark.parametrize("role", ["visitor", "reviewer", "coordinator", "analyst"])
def test_every_page_fits_a_phone_and_a_desktop_and_passes_axe(live_server, page, client, world, role):
    from django.contrib.auth.models import User

    if role != "visitor":
        client.force_login(User.objects.get(username=USERNAMES[role]))
        page.context.add_cookies(
            [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
        )
    problems = []
    for step, path in pages_of(role, world):
        response = page.goto(live_server.url + path)
        assert response.status == 200, (step, path, response.status)
        # Collapsed parts are opened, so that what they hold is checked too.
        page.evaluate("() => document.querySelectorAll('main details').forEach(d => { d.open = true; })")
        problems += check_page(page, f"every page {role}", step)
    assert not problems, "\n".join(problems)


def test_the_check_catches_a_page_wider_than_the_phone(live_server, page):
    """The overflow check is only as good as its detector: a page made too wide must be reported."""
    page.goto(live_server.url + reverse("login"))
    page.evaluate(
        "() => { const wide = document.createElement('div'); wide.style.width = '700px';"
        " wide.textContent = 'wide'; document.querySelector('main').append(wide); }"
    )
    with pytest.raises(AssertionError, match="700 px|wide in a 390 px window"):
        assert_page_fits(page, "checks", "too wide")


def test_the_check_catches_a_serious_accessibility_violation(live_server, page):
    page.goto(live_server.url + reverse("login"))
    page.evaluate(
        "() => { const img = document.createElement('img'); img.src = '/static/favicon-32.png';"
        " document.querySelector('main').append(img); }"
    )
    with pytest.raises(AssertionError, match="critical image-alt"):
        assert_page_fits(page, "checks", "image without alt")
