"""Blinding (SPEC §3.3): a reviewer can reach nothing that reveals a hidden field.

Distinct canary strings are planted in every hidden field; the reviewer then crawls everything reachable (links,
hx-get/hx-post, forms, redirects) and requests every URL pattern of the project, and no response body or header may
contain a canary. New hidden data (forecasts, judge scores, literature verdicts...) gets a canary in CANARIES.
"""

import itertools
import json
import re
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest
from django.contrib.auth.models import User
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from django.urls.exceptions import Resolver404

from reviewapp.benchmarks.models import (
    BenchmarkHypothesis,
    BenchmarkSet,
    BenchmarkTask,
    ExcludedGenerationSet,
    Judge,
    JudgeScore,
)
from reviewapp.models import (
    Assignment,
    BackgroundJob,
    Cohort,
    Conflict,
    DeliveryRecord,
    ImportBatch,
    Proposal,
    ResearchRun,
    ResearchTask,
    Review,
    RunDecision,
    Trajectory,
)
from reviewapp.panel.models import (
    Assessment,
    Comparison,
    ContributionFamily,
    FamilyMember,
    PanelPrompt,
    PanelReview,
    PanelSubject,
    Rating,
    ReferenceReview,
    RevisionJudgment,
)
from reviewapp.selectors.packets import PACKET_COLUMNS
from reviewapp.selectors.revisions import first_parents
from reviewapp.services.reviews import review_save, review_submit
from tests import factories

MAX_REQUESTS = 3000


@dataclass
class World:
    reviewer: User
    other_reviewer: User
    coordinator: User
    cohort: Cohort
    task: ResearchTask
    proposal: Proposal  # the proposal under review, carrying every hidden field
    assignment: Assignment
    next_assignment: Assignment
    closed_assignment: Assignment
    others_assignment: Assignment


def _set(attribute: str, field: str) -> Callable[[World, str], None]:
    def plant(world: World, value: str) -> None:
        record = getattr(world, attribute)
        setattr(record, field, value)
        record.save(update_fields=[field])

    return plant


def _task_sources(world, value):
    ResearchTask.objects.filter(pk=world.task.pk).update(sources=[f"doi:10.9999/{value}"])


def _import_batch(world, value):
    batch = ImportBatch.objects.create(cohort=world.cohort, filename=value, file_format="json", sha256="0" * 64)
    Proposal.objects.filter(pk=world.proposal.pk).update(import_batch=batch)
    ResearchTask.objects.filter(pk=world.task.pk).update(import_batch=batch)


def _parent_statement(world, value):
    parent = factories.make_proposal(task=world.task, statement=value)
    world.proposal.parents.add(parent)


def _child_statement(world, value):
    child = factories.make_proposal(task=world.task, statement=value)
    child.parents.add(world.proposal)


def _others_review(field):
    def plant(world, value):
        Review.objects.filter(assignment=world.others_assignment).update(**{field: value})

    return plant


def _others_deferral(world, value):
    Assignment.objects.filter(pk=world.others_assignment.pk).update(deferred_reason=value)


def _conflict(field):
    def plant(world, value):
        Conflict.objects.create(reviewer=world.reviewer, proposal=world.proposal, author="x", **{field: value})

    return plant


def _draft_cohort(world, value):
    proposal = factories.make_proposal(statement=f"Draft cohort claim {value}")
    cohort = factories.make_cohort([proposal], name=value, status=Cohort.Status.DRAFT)
    factories.make_assignment(cohort, world.reviewer, proposal)


def _username(attribute):
    def plant(world, value):
        User.objects.filter(pk=getattr(world, attribute).pk).update(username=value)

    return plant


def _benchmark_records(world) -> dict:
    """The benchmark set the judge-score canaries live in; it holds the task of the proposal under review."""
    # Found by the task, not by a name: the canaries overwrite the names.
    benchmark_task = BenchmarkTask.objects.filter(task=world.task).select_related("benchmark").first()
    if benchmark_task is None:
        benchmark = BenchmarkSet.objects.create(name="Blinding benchmark", seed=1)
        benchmark_task = BenchmarkTask.objects.create(benchmark=benchmark, task=world.task, position=1)
        hypothesis = BenchmarkHypothesis.objects.create(
            benchmark=benchmark,
            benchmark_task=benchmark_task,
            key="h1",
            generator="g",
            generator_company="gc",
            statement="s",
            selected=True,
        )
        judge = Judge.objects.create(benchmark=benchmark, name="j", company="jc", position=1)
        JudgeScore.objects.create(judge=judge, hypothesis=hypothesis, score=4)
    benchmark = benchmark_task.benchmark
    score = JudgeScore.objects.select_related("judge", "hypothesis").get(judge__benchmark=benchmark)
    return {"benchmark": benchmark, "hypothesis": score.hypothesis, "judge": score.judge, "score": score}


def _benchmark_field(record: str, field: str):
    def plant(world, value):
        target = _benchmark_records(world)[record]
        setattr(target, field, value)
        target.save(update_fields=[field])

    return plant


def _excluded_set_note(world, value):
    """A generation set left out of the generation methods, with its note (docs/analysis.md#generation-methods)."""
    hypothesis = _benchmark_records(world)["hypothesis"]
    ExcludedGenerationSet.objects.update_or_create(
        benchmark_task=hypothesis.benchmark_task,
        generator=hypothesis.generator,
        method="Omega Point",
        generation_round=2,
        defaults={"reason": ExcludedGenerationSet.Reason.REFUSAL, "note": value},
    )


def _panel_subject(world) -> PanelSubject:
    return PanelSubject.objects.get_or_create(proposal=world.proposal)[0]


def _panel_review(role: str, field: str):
    """A review by the AI panel of the proposal under review (its rationale, error, model or scores)."""

    def plant(world, value):
        values = {"scores": {"importance": value}} if field == "scores" else {field: value}
        review, _ = PanelReview.objects.get_or_create(
            subject=_panel_subject(world), role=role, defaults={"state": "done", "eligible": "true"}
        )
        PanelReview.objects.filter(pk=review.pk).update(**values)

    return plant


def _reference_review(field: str):
    """The fresh-context reference's review of the proposal under review (its rationale or scores)."""

    def plant(world, value):
        values = {"scores": {"novelty": value}} if field == "scores" else {field: value}
        ReferenceReview.objects.update_or_create(
            subject=_panel_subject(world), defaults={"state": "done", "eligible": "true", **values}
        )

    return plant


def _panel_prompt(world, value):
    prompt = PanelPrompt.objects.create(
        kind="rubric_judge", version="v-blind", system=value, template="t", sha256="b" * 64
    )
    PanelReview.objects.filter(subject=_panel_subject(world)).update(prompt=prompt)


def _revision_judgment(world, value):
    # A judgment is of an actual parent→child edge: the first listed parent's is the one the profile shows.
    predecessor = first_parents(child_ids=[world.proposal.pk]).get(world.proposal.pk)
    if predecessor is None:
        parent = factories.make_proposal(task=world.task, statement="An earlier version of the claim.")
        world.proposal.parents.add(parent)
        predecessor = parent.pk
    RevisionJudgment.objects.create(
        subject=_panel_subject(world),
        predecessor_id=predecessor,
        state="done",
        category="necessary_repair",
        rationale=value,
    )


def _comparison(world, value):
    Comparison.objects.create(
        cohort=world.cohort,
        seq=Comparison.objects.filter(cohort=world.cohort).count() + 1,
        a=world.proposal,
        b=world.next_assignment.proposal,
        outcome="a",
        source="model",
        shown_first=world.proposal,
        rationale=value,
    )


def _research_records(world) -> dict:
    """A named two-version run of the cohort (r0 → r1) with a decision, a delivery record, a trajectory, path and run
    assessments and a contribution family: the research-run canaries live in them."""
    run = ResearchRun.objects.filter(task=world.task).first()
    if run is None:
        run = ResearchRun.objects.create(
            external_id="blind-run", task=world.task, author="m", budget=3, budget_unit="h", content_sha256="0" * 64
        )
        root = factories.make_proposal(task=world.task, statement="A first version of a run.", author="m")
        tip = factories.make_proposal(task=world.task, statement="A second version of a run.", author="m")
        Proposal.objects.filter(pk__in=[root.pk, tip.pk]).update(research_run=run)
        tip.parents.add(root)
        world.cohort.proposals.add(root, tip)
        decision = RunDecision.objects.create(run=run, seq=1, kind="branch", rationale="r")
        decision.proposals.add(root)
        DeliveryRecord.objects.create(proposal=tip, stage="selected", status="passed", evidence="e")
        Trajectory.objects.create(external_id="blind-trajectory", run=run, role="lead", summary="s")
        family = ContributionFamily.objects.create(cohort=world.cohort)
        FamilyMember.objects.bulk_create(
            [FamilyMember(cohort=world.cohort, family=family, proposal=p) for p in (root, tip)]
        )
        scores = {"question_continuity": 3}
        for level, key in (("path", tip.external_id), ("run", run.external_id)):
            Assessment.objects.create(
                cohort=world.cohort,
                level=level,
                object_key=key,
                proposals=[root.external_id, tip.external_id],
                rubric="dfm-paths-v1" if level == "path" else "dfm-runs-v1",
                state="done",
                scores=scores,
                evidence={"question_continuity": "q"},
                rationales={"question_continuity": "w"},
            )
    return {
        "run": run,
        "decision": RunDecision.objects.get(run=run),
        "delivery": DeliveryRecord.objects.get(proposal__research_run=run),
        "trajectory": Trajectory.objects.get(run=run),
        "family": ContributionFamily.objects.get(cohort=world.cohort),
        "path": Assessment.objects.get(cohort=world.cohort, level="path"),
        "run_assessment": Assessment.objects.get(cohort=world.cohort, level="run"),
    }


def _research_field(record: str, field: str, key: str | None = None):
    def plant(world, value):
        target = _research_records(world)[record]
        if key is not None:
            value = {**getattr(target, field), key: value}
        setattr(target, field, value)
        target.save(update_fields=[field])

    return plant


def _research_run_id(world, value):
    records = _research_records(world)
    ResearchRun.objects.filter(pk=records["run"].pk).update(external_id=value)
    Assessment.objects.filter(pk=records["run_assessment"].pk).update(object_key=value)  # it names its run


def _rating(world, value):
    Rating.objects.create(cohort=world.cohort, proposal=world.proposal, mu=float(value), sigma=1.0, comparisons=3)


@dataclass(frozen=True)
class Canary:
    where: str
    value: str
    plant: Callable[[World, str], None]


# Every hidden field, with the string planted in it. Extend this list when new hidden data is added.
CANARIES = [
    Canary("proposal external id", "cnry-external-id-5d1f", _set("proposal", "external_id")),
    Canary("proposal author", "cnry-author-8b2e", _set("proposal", "author")),
    Canary("proposal author company", "cnry-company-3c7a", _set("proposal", "author_company")),
    Canary("proposal generation method", "cnry-method-9e4d", _set("proposal", "method")),
    Canary("proposal source run", "cnry-source-run-2f6b", _set("proposal", "source_run")),
    Canary("proposal content sha256", "cafe" * 16, _set("proposal", "content_sha256")),
    Canary("import batch filename", "cnry-batch-file-7a3c.json", _import_batch),
    Canary("task key", "cnry-task-key-4e8f", _set("task", "key")),
    Canary("task reference statement", "cnry-reference-statement-1b9d", _set("task", "reference_statement")),
    Canary("task dataset", "cnry-dataset-6c2a", _set("task", "dataset")),
    Canary("task source publications", "cnry-task-source-7d4e", _task_sources),
    Canary("revision parent statement", "cnry-parent-statement-0d5e", _parent_statement),
    Canary("revision child statement", "cnry-child-statement-8f1a", _child_statement),
    Canary("other reviewer's comments", "cnry-other-comments-3a6f", _others_review("comments")),
    Canary("other reviewer's main flaw", "cnry-other-main-flaw-5b8c", _others_review("main_flaw")),
    Canary("other reviewer's skip reason", "cnry-other-deferral-2e7d", _others_deferral),
    Canary("other reviewer's username", "cnry-coreviewer-9a4b", _username("other_reviewer")),
    Canary("conflict note", "cnry-conflict-note-6d3e", _conflict("note")),
    Canary("cohort description", "cnry-cohort-description-1f7c", _set("cohort", "description")),
    Canary("cohort creator", "cnry-cohort-creator-4a2b", _username("coordinator")),
    Canary("draft cohort", "cnry-draft-cohort-7e5f", _draft_cohort),
    Canary("benchmark set name", "cnry-benchmark-name-3d8a", _benchmark_field("benchmark", "name")),
    Canary(
        "benchmark set description", "cnry-benchmark-description-6b1c", _benchmark_field("benchmark", "description")
    ),
    Canary("judge name", "cnry-judge-name-7c1e", _benchmark_field("judge", "name")),
    Canary("judge company", "cnry-judge-company-2b9f", _benchmark_field("judge", "company")),
    Canary("judge score reason", "cnry-judge-reason-5e3d", _benchmark_field("score", "reason")),
    Canary("benchmark hypothesis id", "cnry-benchmark-hypothesis-4d2e", _benchmark_field("hypothesis", "key")),
    Canary(
        "benchmark hypothesis statement", "cnry-benchmark-statement-9f7a", _benchmark_field("hypothesis", "statement")
    ),
    Canary("benchmark generator", "cnry-benchmark-generator-8a4c", _benchmark_field("hypothesis", "generator")),
    Canary("benchmark generation method", "cnry-benchmark-method-2c6e", _benchmark_field("hypothesis", "method")),
    Canary("left-out generation set note", "cnry-excluded-set-note-7d3b", _excluded_set_note),
    Canary("AI panel rationale", "cnry-panel-rationale-6e2f", _panel_review("rubric_judge", "rationale")),
    Canary("AI panel score", "cnry-panel-score-3b7d", _panel_review("domain_scientist", "scores")),
    Canary("AI panel failure", "cnry-panel-error-8c1a", _panel_review("methods_reviewer", "error")),
    Canary("AI panel model", "cnry-panel-model-4f9b", _panel_review("rubric_judge", "model_name")),
    Canary("AI panel prompt", "cnry-panel-prompt-5a2e", _panel_prompt),
    Canary("AI revision judgment", "cnry-revision-rationale-1d8c", _revision_judgment),
    Canary("AI reference rationale", "cnry-reference-rationale-7b3e", _reference_review("rationale")),
    Canary("AI reference score", "cnry-reference-score-2c9d", _reference_review("scores")),
    Canary("AI critique rationale", "cnry-critique-rationale-9e4b", _comparison),
    Canary("AI rating", "31.98765432", _rating),
    Canary("research run id", "cnry-research-run-5c2d", _research_run_id),
    Canary("research run notes", "cnry-run-notes-8e1f", _research_field("run", "notes")),
    Canary("research run budget unit", "cnry-budget-unit-3a7b", _research_field("run", "budget_unit")),
    Canary("run decision rationale", "cnry-decision-rationale-6d4e", _research_field("decision", "rationale")),
    Canary("delivery evidence", "cnry-delivery-evidence-2b8c", _research_field("delivery", "evidence")),
    Canary("trajectory summary", "cnry-trajectory-summary-9f3a", _research_field("trajectory", "summary")),
    Canary("trajectory role", "cnry-trajectory-role-4c6e", _research_field("trajectory", "role")),
    Canary("path assessment evidence", "cnry-path-evidence-7a5d", _research_field("path", "evidence", "traceability")),
    Canary(
        "path assessment rationale", "cnry-path-rationale-1e9b", _research_field("path", "rationales", "efficiency")
    ),
    Canary(
        "run assessment rationale",
        "cnry-run-rationale-3f8a",
        _research_field("run_assessment", "rationales", "record_integrity"),
    ),
    Canary("family question", "cnry-family-question-5b1c", _research_field("family", "question")),
    Canary("family increment", "cnry-family-increment-8d2f", _research_field("family", "increment")),
    Canary("family evidence", "cnry-family-evidence-6a4b", _research_field("family", "evidence")),
    Canary(
        "benchmark generator company",
        "cnry-benchmark-generator-company-1f6b",
        _benchmark_field("hypothesis", "generator_company"),
    ),
]

VISIBLE = {
    "question": "Does intermittent rapamycin delay ovarian follicle loss in mice?",
    "background": "Follicle reserve declines with age; mTORC1 activity drives activation.",
    "statement": "Intermittent rapamycin preserves the primordial follicle pool in middle-aged mice.",
    "mechanism": "Lower mTORC1 signalling keeps primordial follicles quiescent.",
    "prediction": "Treated mice keep more primordial follicles at 12 months.",
    "domain_category": "nutrient sensing",
    "investigation_plan": "Dose mice weekly from 8 to 12 months and count follicles.",
    "data_requirements": "Serial ovarian sections from treated and control mice.",
    "alternative_explanations": "Reduced ovulation from weight loss could also spare follicles.",
    "citations": "Dou et al. 2017; Garcia et al. 2019.",
}


@pytest.fixture
def world(db):
    reviewer = factories.make_user("reviewer", username="rev-alice")
    other_reviewer = factories.make_user("reviewer")
    coordinator = factories.make_user("coordinator")
    task = factories.make_task(question=VISIBLE["question"], background=VISIBLE["background"])
    fields = {key: VISIBLE[key] for key in VISIBLE if key not in ("question", "background")}
    proposal = factories.make_proposal(task=task, **fields)
    following = factories.make_proposal(statement="Senolytic clearance restores ovulation in aged mice.")
    cohort = factories.make_cohort([proposal, following], status=Cohort.Status.OPEN, created_by=coordinator)
    assignment = factories.make_assignment(cohort, reviewer, proposal)
    next_assignment = factories.make_assignment(cohort, reviewer, following)
    others_assignment = factories.make_assignment(cohort, other_reviewer, proposal)
    review_submit(
        assignment=others_assignment,
        reviewer=other_reviewer,
        answers={
            "overall": 2,
            "recommendation": "reject",
            **dict.fromkeys(("importance", "advance_over_known_work", "plausible_evidence_bounded"), "1"),
            **dict.fromkeys(("data_fit", "alternative_explanations", "informative_results"), "2"),
            "flaw_verdict": "fatal",
        },
        version=0,
    )
    closed_proposal = factories.make_proposal(statement="Spermidine extends ovarian lifespan.")
    closed = factories.make_cohort([closed_proposal], status=Cohort.Status.CLOSED)
    closed_assignment = factories.make_assignment(closed, reviewer, closed_proposal)
    built = World(
        reviewer=reviewer,
        other_reviewer=other_reviewer,
        coordinator=coordinator,
        cohort=cohort,
        task=task,
        proposal=proposal,
        assignment=assignment,
        next_assignment=next_assignment,
        closed_assignment=closed_assignment,
        others_assignment=others_assignment,
    )
    for canary in CANARIES:
        canary.plant(built, canary.value)
    return built


# ---- A small crawler ----


class PageParser(HTMLParser):
    """Collects every request a page offers: links, hx-get, hx-post and forms with their current values."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.posts: list[tuple[str, dict]] = []  # standalone hx-post
        self.forms: list[dict] = []
        self._form = None
        self._textarea = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("href", "hx-get", "src"):
            if attrs.get(name):
                self.links.append(attrs[name])
        if tag == "form":
            self._form = {
                "method": (attrs.get("method") or "get").lower(),
                "action": attrs.get("action") or "",
                "hx_post": attrs.get("hx-post"),
                "hx_vals": attrs.get("hx-vals"),
                "fields": [],
                "buttons": [],
            }
            self.forms.append(self._form)
            return
        form = self._form
        if form is None:
            if attrs.get("hx-post"):
                self.posts.append((attrs["hx-post"], json.loads(attrs.get("hx-vals") or "{}")))
            return
        kind = (attrs.get("type") or "").lower()
        if tag == "input" and attrs.get("name") and kind not in ("submit", "button"):
            if kind in ("radio", "checkbox") and "checked" not in attrs:
                return
            form["fields"].append((attrs["name"], attrs.get("value") or ""))
        elif tag == "textarea" and attrs.get("name"):
            self._textarea = [attrs["name"], ""]
        elif tag == "button" or (tag == "input" and kind == "submit"):
            form["buttons"].append(attrs)

    def handle_data(self, data):
        if self._textarea is not None:
            self._textarea[1] += data

    def handle_endtag(self, tag):
        if tag == "textarea" and self._textarea is not None and self._form is not None:
            self._form["fields"].append(tuple(self._textarea))
            self._textarea = None
        elif tag == "form":
            self._form = None


def _requests_offered(page_url: str, html: str):
    """(method, url, data) of every same-site request the page offers."""
    parser = PageParser()
    parser.feed(html)
    for link in parser.links:
        yield "get", urljoin(page_url, link), None
    for url, values in parser.posts:
        yield "post", urljoin(page_url, url), values
    for form in parser.forms:
        action = urljoin(page_url, form["action"])
        data: dict[str, list[str]] = {}
        for name, value in form["fields"]:
            data.setdefault(name, []).append(value)
        if form["method"] == "get":
            yield "get", action, None
            continue
        base_vals = json.loads(form["hx_vals"] or "{}")
        yield "post", action, data
        if form["hx_post"]:
            yield "post", urljoin(page_url, form["hx_post"]), {**data, **base_vals}
        for button in form["buttons"]:
            extra = {button["name"]: button.get("value", "")} if button.get("name") else {}
            yield "post", urljoin(page_url, button.get("formaction") or form["action"]), {**data, **extra}
            if button.get("hx-post"):
                vals = json.loads(button.get("hx-vals") or "{}")
                yield "post", urljoin(page_url, button["hx-post"]), {**data, **base_vals, **extra, **vals}


def _same_site_path(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme not in ("", "http", "https") or parts.netloc not in ("", "testserver"):
        return None
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    if not path.startswith("/") or path.startswith("/static/"):
        return None
    return path


class Crawl:
    def __init__(self, client):
        self.client = client
        self.seen: set = set()
        self.responses: list[tuple[str, str, bool, object, bytes]] = []
        self.logout_path = reverse("logout")

    def request(self, method, path, data=None, htmx=False):
        # A post is known by its fields and action, not their values: every save returns a new version to post.
        action = (data or {}).get("action")
        key = (method, path, tuple(sorted(data or ())), json.dumps(action), htmx)
        if key in self.seen or path.split("?")[0] == self.logout_path:
            return None
        assert len(self.seen) < MAX_REQUESTS, "the crawl is not bounded"
        self.seen.add(key)
        headers = {"HX-Request": "true"} if htmx else {}
        if method == "get":
            response = self.client.get(path, headers=headers)
        else:
            response = self.client.post(path, data or {}, headers=headers)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        self.responses.append((method, path, htmx, response, body))
        return response, body

    def follow(self, seeds):
        queue = deque(("get", path, None) for path in seeds)
        while queue:
            method, path, data = queue.popleft()
            # htmx first: a plain post that saves would make the htmx one stale, and both answers matter.
            for htmx in (True, False):
                answered = self.request(method, path, data, htmx)
                if answered is None:
                    continue
                response, body = answered
                offered = []
                if response.has_header("Location"):
                    offered.append(("get", urljoin(path, response["Location"]), None))
                if response.has_header("HX-Redirect"):
                    offered.append(("get", urljoin(path, response["HX-Redirect"]), None))
                if "html" in response.get("Content-Type", ""):
                    offered.extend(_requests_offered(path, body.decode(errors="replace")))
                for next_method, url, next_data in offered:
                    next_path = _same_site_path(url)
                    if next_path:
                        queue.append((next_method, next_path, next_data))


def _url_patterns(resolver=None, prefix=""):
    """(route with <converter:name> placeholders, pattern) for every URL pattern of the project."""
    resolver = resolver or get_resolver()
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            yield from _url_patterns(pattern, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern), pattern


def _fill(route: str, ids_for: Callable[[str], list[int]]) -> list[str]:
    """Every URL of a route, trying each existing id of the right kind for int arguments."""
    route = route.replace("^", "").replace("$", "").replace("\\", "")
    placeholders = re.findall(r"<(?:(\w+):)?(\w+)>|\(\?P<(\w+)>([^)]*)\)", route)
    choices = []
    for converter, name, group_name, group_body in placeholders:
        if group_name:  # a regex group: its first literal alternative, or an id
            first = group_body.split("|")[0]
            literal = first.isalnum() and not first.isdigit()
            choices.append([first] if literal else [str(i) for i in ids_for(group_name)])
        elif converter == "int" or (converter == "path" and name.endswith("id")):
            choices.append([str(i) for i in ids_for(name)])
        elif converter == "uuid":
            choices.append([str(uuid.uuid4())])
        else:
            choices.append(["x"])
    urls = []
    for values in itertools.product(*choices):
        filled = iter(values)
        url = "/" + re.sub(r"<(?:\w+:)?\w+>|\(\?P<\w+>[^)]*\)", lambda _m, filled=filled: next(filled), route)
        url = url.replace("?", "")
        try:
            resolve(url.split("?")[0])
        except Resolver404:
            continue
        urls.append(url)
    return urls


def _ids_for(world: World) -> Callable[[str], list[int]]:
    by_kind = {
        "assignment": list(Assignment.objects.values_list("pk", flat=True)),
        "cohort": list(Cohort.objects.values_list("pk", flat=True)),
        "review": list(Review.objects.values_list("pk", flat=True)),
        "proposal": list(Proposal.objects.values_list("pk", flat=True)),
        "task": list(ResearchTask.objects.values_list("pk", flat=True)),
        "user": list(User.objects.values_list("pk", flat=True)),
        "job": list(BackgroundJob.objects.values_list("pk", flat=True)),
        "benchmark": list(BenchmarkSet.objects.values_list("pk", flat=True)),
        "subject": list(PanelSubject.objects.values_list("pk", flat=True)),
    }
    everything = sorted(set(itertools.chain.from_iterable(by_kind.values())))

    def ids_for(name: str) -> list[int]:
        kind = next((kind for kind in by_kind if kind in name), None)
        # Unknown kinds (e.g. the admin's object ids) get a sample; a kind with no record a missing id.
        ids = by_kind[kind] if kind else everything[:5]
        return ids or [999_999]

    return ids_for


def _assert_no_canary(crawl: Crawl):
    leaks = []
    for method, path, htmx, response, body in crawl.responses:
        text = body.decode(errors="replace").lower()
        headers = " ".join(f"{name}: {value}" for name, value in response.items()).lower()
        for canary in CANARIES:
            if canary.value.lower() in text or canary.value.lower() in headers:
                leaks.append(f"{canary.where} in {method.upper()} {path}{' (htmx)' if htmx else ''}")
    assert not leaks, "hidden fields reached the reviewer:\n" + "\n".join(leaks)


def test_the_packet_is_a_whitelist_of_visible_sections():
    assert set(PACKET_COLUMNS.values()) == {
        "cohort__name",
        "proposal__task__question",
        "proposal__task__background",
        *(f"proposal__{field}" for field in VISIBLE if field not in ("question", "background")),
    }


def test_no_canary_reaches_a_reviewer_anywhere(client, world):
    # A draft with the overall judgement and a declared flaw, so the criteria and the checklist are on the page.
    review_save(
        assignment=world.assignment,
        reviewer=world.reviewer,
        answers={"overall": 4, "recommendation": "revise", "flaw_verdict": "fixable", "comments": "so far"},
        version=0,
    )
    client.force_login(world.reviewer)
    crawl = Crawl(client)
    review_url = reverse("review-page", args=[world.assignment.pk])
    crawl.follow(["/", reverse("review-queue"), review_url])
    # A save from a page that showed neither the criteria nor the checklist: both are swapped in.
    version = Review.objects.get(assignment=world.assignment).version
    swapped = crawl.request("post", review_url, {"action": "save", "version": version, "overall": "3"}, htmx=True)
    assert b'id="criteria-section" class="criteria" hx-swap-oob="true"' in swapped[1]
    assert b'id="checklist-section" hx-swap-oob="true"' in swapped[1]

    # Then a complete submission, and everything again as it looks afterwards.
    complete = {
        "action": "submit",
        "version": Review.objects.get(assignment=world.assignment).version,
        **dict.fromkeys(("overall", "importance", "data_fit"), "3"),
        "recommendation": "revise",
        **dict.fromkeys(("advance_over_known_work", "plausible_evidence_bounded"), "cant_judge"),
        **dict.fromkeys(("alternative_explanations", "informative_results"), "2"),
        "flaw_verdict": "absent",
    }
    crawl.seen.clear()
    submitted = crawl.request("post", review_url, complete, htmx=True)
    assert submitted[0].status_code == 200 and submitted[0]["HX-Redirect"]
    crawl.follow(["/", reverse("review-queue"), review_url])

    # Every URL pattern of the project, with every existing id of the right kind, read and posted to.
    ids_for = _ids_for(world)
    for route, pattern in _url_patterns():
        for url in _fill(route, ids_for):
            crawl.request("get", url)
            crawl.request("get", url, htmx=True)
            if pattern.name != "logout":
                crawl.request("post", url)

    _assert_no_canary(crawl)

    # The crawl really saw the review: the packet's sections, the form's answers and the error pages.
    pages = {(method, path, htmx): (response, body) for method, path, htmx, response, body in crawl.responses}
    page, body = pages[("get", review_url, False)]
    assert page.status_code == 200
    html = body.decode()
    assert all(text in html for text in VISIBLE.values())
    assert VISIBLE["statement"][:60] in pages[("get", reverse("review-queue"), False)][1].decode()
    statuses = {(method, response.status_code) for method, path, htmx, response, body in crawl.responses}
    assert {("post", 200), ("post", 409), ("post", 422), ("get", 404)} <= statuses
    others = reverse("review-page", args=[world.others_assignment.pk])
    assert pages[("get", others, False)][0].status_code == 404
    assert pages[("post", others, False)][0].status_code == 404
    saves = [body for method, path, htmx, response, body in crawl.responses if method == "post" and htmx]
    assert any(b'<span class="saved">Saved ' in body for body in saves)


def test_the_crawl_would_catch_a_hidden_field_on_a_reviewer_page(client, world):
    """The check is only as good as its detector: a page showing a hidden field must be reported."""
    client.force_login(world.reviewer)
    crawl = Crawl(client)
    crawl.follow([reverse("review-page", args=[world.assignment.pk])])
    method, path, htmx, response, body = crawl.responses[0]
    crawl.responses[0] = (method, path, htmx, response, body + world.proposal.author.encode())
    with pytest.raises(AssertionError, match="proposal author in GET /review/"):
        _assert_no_canary(crawl)


def test_the_panel_canaries_are_real_panel_data_that_coordinators_see(client, world):
    """The coordinator's profile page, the cohort's panel API and the ratings API show them, so their absence from
    every reviewer response means something."""
    client.force_login(world.coordinator)
    subject = PanelSubject.objects.get(proposal=world.proposal)
    text = client.get(reverse("panel-subject", args=[subject.pk])).content.decode()
    text += client.get(reverse("api-cohort-ai-panel", args=[world.cohort.pk])).content.decode()
    text += client.get(reverse("api-cohort-ratings", args=[world.cohort.pk])).content.decode()
    text += client.get(reverse("panel-ratings", args=[world.cohort.pk])).content.decode()
    text += client.get(reverse("panel-prompts")).content.decode()
    panel = [canary for canary in CANARIES if canary.where.startswith("AI ")]
    assert len(panel) == 10
    assert [canary.where for canary in panel if canary.value not in text] == []


RESEARCH_CANARIES = (
    "research run",
    "run decision",
    "delivery",
    "trajectory",
    "path assessment",
    "run assessment",
    "family",
)


def test_the_research_run_canaries_are_real_data_that_coordinators_see(client, world):
    """The cohort's runs, paths and families APIs show every research-run canary, so their absence from every
    reviewer response means something."""
    client.force_login(world.coordinator)
    text = ""
    for name in ("api-cohort-runs", "api-cohort-paths", "api-cohort-families"):
        text += client.get(reverse(name, args=[world.cohort.pk])).content.decode()
    research = [canary for canary in CANARIES if canary.where.startswith(RESEARCH_CANARIES)]
    assert len(research) == 13
    assert [canary.where for canary in research if canary.value not in text] == []
