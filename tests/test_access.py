"""Who may open what: every URL of the project, as anonymous, reviewer, analyst and coordinator.

Each URL name is classified below; a new URL that is not classified fails this test until someone decides who may
reach it.
"""

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from literature.models import CitationWave, NoveltyCheck, Reference
from reviewapp.benchmarks.models import BenchmarkSet
from reviewapp.inspiration.models import InspirationAudit
from reviewapp.models import BackgroundJob
from reviewapp.panel.models import Assessment, ContributionFamily, FamilyMember, PanelSubject
from reviewapp.services.accounts import token_create
from screening.models import Run
from tests import factories

PUBLIC = {
    "home",
    "login",
    "api-schema",
    "api-docs",
    "favicon",
    "api-token",
    "open-hypothesis",
    "open-hypothesis-run",
    "open-hypothesis-run-json",
    "open-hypothesis-api-runs",
    "open-hypothesis-api-protocol",
    "open-hypothesis-api-run",
    "open-hypothesis-api-screenings",
}
# Any signed-in user (each view still shows only the user's own records).
SIGNED_IN = {
    "logout",
    "password_change",
    "password_change_done",
    "job-detail",
    "job-download",
    "tokens",
    "token-revoke",
    "api-tokens",
    "api-token-revoke",
}
REVIEWER = {"review-queue", "review-page"}
# Coordinators and analysts read; only coordinators change anything.
READ_ALL = {
    "benchmark-import-format",
    "cohort-list",
    "cohort-detail",
    "cohort-proposals",
    "cohort-people",
    "cohort-exports",
    "cohort-reviews-xlsx-prepare",
    "api-cohorts",
    "api-cohort-detail",
    "api-cohort-assignments",
    "api-cohort-progress",
    "api-cohort-reviews-csv",
    "api-cohort-reviews-xlsx",
    "open-hypothesis-api-run-calls",
    "screening-run-calls",
    "screening-run-calls-json",
    "api-novelty-check",
    "screening-run-list",
    "benchmark-list",
    "benchmark-detail",
    "benchmark-judge-table",
    "benchmark-statistics",
    "benchmark-figure",
    "cohort-statistics",
    "cohort-figure",
    "api-benchmarks",
    "api-benchmark-detail",
    "api-benchmark-judges",
    "api-benchmark-outcomes",
    "api-benchmark-forecasts",
    "api-benchmark-statistics",
    "api-benchmark-table-s",
    "api-benchmark-bundle",
    "literature-corpus",
    "literature-reference",
    "literature-citation-waves",
    "literature-citation-wave",
    "api-citation-waves",
    "api-citation-wave",
    "api-citation-wave-edges",
    "inspiration-home",
    "inspiration-cutoffs",
    "inspiration-audit",
    "api-inspiration-cutoffs",
    "api-inspiration-audits",
    "api-inspiration-audit",
    "api-inspiration-audit-items",
    # The AI review panel: pages and reads (its POSTs are the coordinators', checked by its own tests).
    "panel-cohort",
    "panel-ratings",
    "panel-calibration",
    "panel-cohort-figure",
    "panel-subject",
    "panel-subject-figure",
    "panel-prompts",
    "panel-run",
    "panel-benchmark",
    "api-cohort-ai-panel",
    "api-cohort-comparisons",
    "api-cohort-ratings",
    "api-cohort-calibration",
    "api-panel-prompts",
    "api-panel-subject",
    "panel-evaluation",
    "panel-evaluation-run",
    "panel-evaluation-path",
    "panel-families",
    "panel-evaluation-csv",
    "api-panel-rubrics",
    "api-cohort-paths",
    "api-cohort-runs",
    "api-cohort-families",
    "api-cohort-evaluation",
}
COORDINATOR = {
    "cohort-status",
    "cohort-assign",
    "assignment-add",
    "assignment-remove",
    "assignment-reassign",
    "review-reopen",
    "user-list",
    "user-create",
    "users-bulk-create",
    "conflict-declare",
    "cohort-import",
    "api-users",
    "api-cohort-status",
    "api-cohort-import",
    "api-assignment",
    "api-assignment-reassign",
    "api-conflicts",
    "screening-run-cohort",
    "literature-home",
    "api-literature-import",
    "api-novelty-checks",
    "benchmark-roster",
    "benchmark-run",
    "benchmark-forecasts-repeat",
    "benchmark-import",
    "benchmark-judge-add",
    "benchmark-judging",
    "api-benchmark-import",
    "api-benchmark-run",
    "api-benchmark-forecasts-repeat",
    "api-benchmark-judging",
    "user-unlock",
    "job-retry",
    "benchmark-task-rerun",
    "user-active",
    "user-tokens-revoke",
    "api-user-unlock",
    "api-user-active",
    "api-inspiration-cutoff",
    "panel-cohort-start",
    "panel-comparisons-run",
    "panel-comparisons-import",
    "panel-ratings-recompute",
    "api-cohort-comparisons-run",
    "api-cohort-ratings-recompute",
    "api-panel-hypotheses",
    "panel-family-record",
    "api-cohort-family",
    "api-cohort-assessment-status",
    "api-panel-review-status",
}
CLASSIFIED = PUBLIC | SIGNED_IN | REVIEWER | READ_ALL | COORDINATOR
DENIED = {401, 403, 404, 405}


def _project_urls(patterns=None, prefix=""):
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            if not route.startswith("admin/"):
                yield from _project_urls(entry.url_patterns, route)
        elif isinstance(entry, URLPattern):
            yield entry.name, route


def _fill(route: str, ids: dict) -> str:
    """Replace each <converter:name> with the id of an existing record of that kind."""
    path = route
    while "<" in path:
        start, end = path.index("<"), path.index(">")
        name = path[start + 1 : end].split(":")[-1]
        path = path[:start] + str(ids[name]) + path[end + 1 :]
    return "/" + path


@pytest.fixture
def urls(db, coordinator, other_reviewer):
    proposal = factories.make_proposal()
    cohort = factories.make_cohort([proposal], status="open")
    assignment = factories.make_assignment(cohort, other_reviewer, proposal)
    job = BackgroundJob.objects.create(kind="reviews_xlsx", params={"cohort_id": cohort.pk}, created_by=coordinator)
    run = Run.objects.create(question="Does the niche shape clonal fitness?", shuffle_seed=1, public=True)
    benchmark = BenchmarkSet.objects.create(name="Ageing benchmark", seed=1)
    check = NoveltyCheck.objects.create(hypothesis_text=proposal.statement, proposal=proposal)
    token, _ = token_create(user=coordinator)
    reference = Reference.objects.create(source="demo", source_id="access", title="A reference", content_sha256="0")
    wave = CitationWave.objects.create(anchors=["MED:1"])
    audit = InspirationAudit.objects.create(population="cohort", cohort=cohort)
    subject = PanelSubject.objects.create(proposal=proposal)
    # A revision in the cohort, so that it has a development path, a run with a graph, a family and an assessment.
    revision = factories.make_proposal(task=proposal.task)
    revision.parents.add(proposal)
    cohort.proposals.add(revision)
    family = ContributionFamily.objects.create(cohort=cohort)
    FamilyMember.objects.create(cohort=cohort, family=family, proposal=proposal)
    research_run = min(proposal.external_id, revision.external_id)
    assessment = Assessment.objects.create(
        cohort=cohort, level="run", object_key=research_run, rubric="dfm-runs-v1", state="failed"
    )
    ids = {
        "family_id": family.pk,
        "assessment_id": assessment.pk,
        "research_run": research_run,
        "terminal": revision.external_id,
        "table": "paths",
        "reference_id": reference.pk,
        "wave_id": wave.pk,
        "audit_id": audit.pk,
        "group": "Model A",
        "token_id": token.pk,
        "account_id": other_reviewer.pk,
        "check_id": check.pk,
        "cohort_id": cohort.pk,
        "assignment_id": assignment.pk,
        "job_id": job.pk,
        "run_id": run.public_id,
        "benchmark_id": benchmark.pk,
        "figure": "enrichment",
        "cohort_figure": "revisions",
        "file_format": "csv",
        "subject_id": subject.pk,
        "panel_figure": "ratings",
        "subject_figure": "profile",
    }
    return [(name, _fill(route, ids)) for name, route in _project_urls()]


def test_every_url_is_classified(urls):
    unclassified = {name for name, _ in urls} - CLASSIFIED
    assert not unclassified, f"decide who may reach these URLs and add them to tests/test_access.py: {unclassified}"


@pytest.mark.parametrize("method", ["get", "post"])
def test_anonymous_users_reach_only_public_urls(client, urls, method):
    for name, path in urls:
        if name in PUBLIC:
            continue
        response = getattr(client, method)(path)
        if response.status_code == 302:
            assert response["Location"].startswith("/accounts/login/"), (name, path)
        else:
            assert response.status_code in DENIED, (name, path, response.status_code)


@pytest.mark.parametrize("method", ["get", "post"])
def test_reviewers_reach_no_coordinator_or_analyst_url(client, reviewer, urls, method):
    client.force_login(reviewer)
    for name, path in urls:
        if name in READ_ALL | COORDINATOR:
            response = getattr(client, method)(path)
            assert response.status_code in DENIED, (name, path, response.status_code)


def test_reviewers_cannot_open_another_reviewers_assignment(client, reviewer, urls):
    client.force_login(reviewer)
    for name, path in urls:
        if name == "review-page":
            assert client.get(path).status_code == 404
            assert client.post(path, {"action": "save", "version": 0}).status_code == 404


@pytest.mark.parametrize("method", ["get", "post"])
def test_analysts_change_nothing(client, analyst, urls, method):
    client.force_login(analyst)
    for name, path in urls:
        if name in COORDINATOR | REVIEWER:
            response = getattr(client, method)(path)
            assert response.status_code in DENIED, (name, path, response.status_code)


def test_analysts_read_every_cohort_page(client, analyst, urls):
    client.force_login(analyst)
    for name, path in urls:
        if name in READ_ALL and name != "cohort-reviews-xlsx-prepare":
            assert client.get(path).status_code == 200, (name, path)


def test_coordinators_reach_every_staff_page(client, coordinator, urls):
    client.force_login(coordinator)
    for name, path in urls:
        if name in {"cohort-list", "cohort-detail", "user-list", "cohort-import", "api-cohorts", "api-cohort-progress"}:
            assert client.get(path).status_code == 200, (name, path)
