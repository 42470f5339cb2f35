"""Blinding of screening results (SPEC §3.3): a run's hypotheses made into a review cohort reach the reviewer as
packets only. Canaries are planted in the run's forecasts, stages, literature check, model names, companies and ids,
in the run's own id and records, and in the literature checks of the run and of the cohort's proposals; the
reviewer's crawl (tests/test_blinding.py) must meet none of them."""

import uuid

import pytest
from django.urls import reverse

from literature.models import NoveltyCheck, Reference
from reviewapp.models import Cohort
from reviewapp.panel.models import PanelReview, PanelSubject
from screening.llm.models import ModelCall, ModelEndpoint
from screening.models import Forecast, Hypothesis, Run
from screening.services.cohorts import cohort_create_from_run
from screening.services.runs import run_create
from tests import factories
from tests.reviewapp.test_blinding import Crawl, _fill, _ids_for, _url_patterns
from tests.screening_support import drive, make_roster

QUESTION = "Does remodelling of the bone-marrow niche change the fitness of mutant clones?"
RUN_ID = uuid.UUID("c0ffee00-5eed-4bad-9e11-0123456789ab")
# Model ids become forecast keys, author names and call records; each one is a canary.
GENERATORS = ("cnry-gen-model-a1f3", "cnry-gen-model-b2e4")
STAGE1 = "cnry-stage1-model-c3d5"
STAGE2 = ("cnry-stage2-model-d4c6", "cnry-stage2-model-e5b7")
TRANSLATOR = "cnry-translator-f6a8"

CANARIES = {
    "run id": str(RUN_ID),
    "run id without dashes": RUN_ID.hex,
    "shuffle seed": "918273645546372819",
    "run error": "cnry-run-error-7c1d",
    "roster name": "cnry-roster-name-2b8e",
    "generator model id": GENERATORS[0],
    "second generator model id": GENERATORS[1],
    "stage-1 model id": STAGE1,
    "stage-2 model id": STAGE2[0],
    "second stage-2 model id": STAGE2[1],
    "translator model id": TRANSLATOR,
    "generator display name": f"Model {GENERATORS[0]}",
    "generator company": f"Company of {GENERATORS[0]}",
    "stage-1 display name": f"Model {STAGE1}",
    "stage-1 verdict": "cnrystg1q7",
    "forecast reason": "cnry-forecast-reason-4d9a",
    "forecast probability": "0.731942",
    "literature verdict": "cnry-verdict-5e2b",
    "literature evidence": "cnry-evidence-8a3f",
    "literature reference": "cnry-reference-1c6d",
    "model call response": "cnry-call-response-9f2e",
    "blind label": "cnryL7q",
    "novelty check reason": "cnry-novelty-reason-3e7a",
    "novelty check evidence": "cnry-novelty-evidence-6b1c",
    "novelty part evidence": "cnry-novelty-part-9d4f",
    "novelty candidate title": "cnry-novelty-candidate-2a8e",
    "novelty reference title": "cnry-novelty-reference-5f3b",
    "proposal novelty verdict": "cnry-pverdict-4c2",
    "AI panel review of a run hypothesis": "cnry-panel-run-rationale-7b3d",
    "AI panel review of the cohort's proposal": "cnry-panel-proposal-rationale-2c9e",
}


@pytest.fixture
def reviewed_run(db, server, settings):
    settings.PROVIDER_BACKOFF_BASE_SECONDS = 0.01
    roster = make_roster(
        server.base_url, generators=GENERATORS, stage1=STAGE1, stage2=STAGE2, translator=TRANSLATOR, simulated=True
    )
    roster.name = CANARIES["roster name"]
    roster.save()
    run = drive(run_create(question=QUESTION, client_address="192.0.2.50", language="ru"))
    assert run.status == Run.Status.COMPLETED
    Run.objects.filter(pk=run.pk).update(
        public_id=RUN_ID, shuffle_seed=int(CANARIES["shuffle seed"]), error=CANARIES["run error"]
    )
    run.refresh_from_db()
    coordinator = factories.make_user("coordinator")
    cohort = cohort_create_from_run(run=run, hypotheses="selected", name="Niche cohort", user=coordinator)
    # Planted after the cohort exists: whatever the cohort copied, the run's records now hold canaries too.
    Hypothesis.objects.filter(run=run).update(
        stage1=CANARIES["stage-1 verdict"],
        literature_verdict=CANARIES["literature verdict"],
        literature_evidence=CANARIES["literature evidence"],
        literature_reference={"title": CANARIES["literature reference"]},
    )
    Hypothesis.objects.filter(run=run, label="H1").update(label=CANARIES["blind label"])
    Forecast.objects.filter(hypothesis__run=run).update(
        detailed={"reason": CANARIES["forecast reason"]}, p_experimental_support=float(CANARIES["forecast probability"])
    )
    ModelCall.objects.filter(run=run).update(response_body=CANARIES["model call response"])
    # The literature checks: the run's own (recorded by its literature step) and checks of the cohort's proposals.
    reference = Reference.objects.create(
        source="demo", source_id="cnry-ref", title=CANARIES["novelty reference title"], content_sha256="0" * 64
    )
    checked = {
        "evidence": CANARIES["novelty check evidence"],
        "reason": CANARIES["novelty check reason"],
        "reference": reference,
        "citation": {"title": CANARIES["novelty reference title"]},
        "components": [{"part": "cause", "evidence": CANARIES["novelty part evidence"]}],
        "candidates": [{"title": CANARIES["novelty candidate title"]}],
    }
    assert NoveltyCheck.objects.filter(run=run).update(verdict=CANARIES["literature verdict"], **checked)
    for proposal in cohort.proposals.all():
        NoveltyCheck.objects.create(
            hypothesis_text=proposal.statement,
            proposal=proposal,
            state="done",
            verdict=CANARIES["proposal novelty verdict"],
            **checked,
        )
    # The AI panel's reviews of the run's hypotheses and of the cohort's proposals.
    for hypothesis in Hypothesis.objects.filter(run=run):
        subject = PanelSubject.objects.create(screening_hypothesis=hypothesis)
        PanelReview.objects.create(
            subject=subject,
            role="rubric_judge",
            state="done",
            eligible="true",
            rationale=CANARIES["AI panel review of a run hypothesis"],
        )
    for proposal in cohort.proposals.all():
        subject = PanelSubject.objects.create(proposal=proposal)
        PanelReview.objects.create(
            subject=subject,
            role="rubric_judge",
            state="done",
            eligible="true",
            rationale=CANARIES["AI panel review of the cohort's proposal"],
        )
    cohort.status = Cohort.Status.OPEN
    cohort.save(update_fields=["status"])
    reviewer = factories.make_user("reviewer", username="rev-nina")
    assignments = [factories.make_assignment(cohort, reviewer, proposal) for proposal in cohort.proposals.all()]
    return run, reviewer, assignments


def test_no_screening_canary_reaches_a_reviewer(client, reviewed_run):
    run, reviewer, assignments = reviewed_run
    assert ModelEndpoint.objects.filter(model_id=STAGE1).exists()
    client.force_login(reviewer)
    crawl = Crawl(client)
    crawl.follow(["/", reverse("review-queue"), *[reverse("review-page", args=[a.pk]) for a in assignments[:3]]])
    ids_for = _ids_for(None)
    for route, pattern in _url_patterns():
        for url in _fill(route, ids_for):
            crawl.request("get", url)
            crawl.request("get", url, htmx=True)
            if pattern.name != "logout":
                crawl.request("post", url)

    leaks = []
    for method, path, htmx, response, body in crawl.responses:
        text = body.decode(errors="replace").lower() + " ".join(f"{k}: {v}" for k, v in response.items()).lower()
        where_seen = f"{method.upper()} {path}{' (htmx)' if htmx else ''}"
        leaks += [f"{where} in {where_seen}" for where, value in CANARIES.items() if value.lower() in text]
    assert not leaks, "screening data reached the reviewer:\n" + "\n".join(leaks)

    # The crawl did see the run's hypotheses under review, and met the screening pages closed.
    pages = {(method, path): response for method, path, htmx, response, body in crawl.responses if not htmx}
    review_page = pages[("get", reverse("review-page", args=[assignments[0].pk]))]
    assert assignments[0].proposal.statement in review_page.content.decode()
    assert pages[("get", reverse("screening-run-list"))].status_code == 403
    assert pages[("get", "/api/v1/open-hypothesis/runs/x/calls")].status_code == 403


def test_the_canaries_are_real_screening_data_shown_where_blinding_does_not_apply(client, reviewed_run):
    """The public run page (not part of the blinded review) shows them, so their absence above means something."""
    run, reviewer, assignments = reviewed_run
    text = client.get(reverse("open-hypothesis-run", args=[run.public_id])).content.decode().lower()
    shown = {"run id", "generator display name", "stage-1 display name", "stage-1 verdict", "literature evidence"}
    assert {where for where in shown if CANARIES[where].lower() in text} == shown
