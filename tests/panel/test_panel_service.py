"""The AI panel as a background job against a model server speaking the providers' protocol: three roles read the
blinded packet, a malformed reply is asked once more, a role that still fails is recorded as failed, complete panels
are not asked again unless redone, revisions are judged against the first listed parent, and hypotheses of screening
runs and benchmark sets can be reviewed too."""

import json
from collections import defaultdict

import pytest

from reviewapp.models import BackgroundJob
from reviewapp.panel.models import PanelReview, PanelSubject, ReferenceReview, RevisionJudgment
from reviewapp.panel.profile import DIMENSION_KEYS
from reviewapp.panel.prompts import REFERENCE_SYSTEM
from reviewapp.panel.selectors import cohort_panel, subject_profile
from reviewapp.panel.services.common import PanelError
from reviewapp.panel.services.panel import panel_start_for_cohort, panel_start_for_hypotheses
from reviewapp.services import jobs
from screening.llm.models import ModelCall, ModelEndpoint, RosterMember
from screening.models import Hypothesis, Run
from tests.benchmark_support import hypothesis, make_set, task
from tests.panel.support import PANEL_ROLES, make_cohort, panel_roster, proposal, review_reply


def run_job(job: BackgroundJob) -> BackgroundJob:
    jobs.job_run(job_id=job.pk)
    job.refresh_from_db()
    return job


def claim(pid: str) -> str:
    return proposal(pid, "T-A")["statement"]


def test_three_roles_review_the_packet_reviewers_see_and_nothing_else(models, script, coordinator):
    cohort = make_cohort([proposal("p1", "T-A"), proposal("p2", "T-A"), proposal("p3", "T-B")], user=coordinator)
    cohort.proposals.filter(external_id="p1").update(method="secret method", source_run="secret run")
    cohort.proposals.first().task.__class__.objects.filter(key="T-A").update(reference_statement="secret reference")
    job = run_job(panel_start_for_cohort(cohort=cohort, user=coordinator))
    assert job.state == BackgroundJob.State.SUCCEEDED, job.error
    assert job.progress == job.total == 9
    assert PanelReview.objects.filter(state="done").count() == 9
    requests = script.requests_of_kind("review")
    assert {key[0] for key, _ in requests} == {"rubric_judge", "domain_scientist", "methods_reviewer"}
    for (_role, statement), user in requests:
        assert "RESEARCH QUESTION\nResearch question number" in user and "BACKGROUND\nBackground number" in user
        assert f"Claim: {statement}" in user and "Investigation plan: Plan of" in user
        assert "Data requirements: Data of" in user and "Alternative explanations: Alternatives of" in user
        for hidden in ("Author of", "Hidden Co", "secret method", "secret run", "secret reference", "T-A", "T-B"):
            assert hidden not in user
    rows = {row.proposal_id: row for row in cohort_panel(cohort).rows}
    assert rows["p1"].profile.q == 5.0 and rows["p1"].profile.panel_complete
    calls = ModelCall.objects.filter(purpose="panel_review")
    assert calls.count() == 9 and all(call.protocol_attempt == 1 for call in calls)
    review = PanelReview.objects.select_related("prompt").first()
    assert review.prompt.version == "panel-v1" and review.model_call_id and not review.simulated


def test_a_malformed_reply_is_asked_once_more(models, script, coordinator):
    cohort = make_cohort([proposal("p1", "T-A")], user=coordinator)
    script.reviews[("rubric_judge", claim("p1"))] = [
        review_reply({"novelty": 0}),
        review_reply({"novelty": 9}, rationale="On a second look."),
    ]
    run_job(panel_start_for_cohort(cohort=cohort, user=coordinator))
    review = PanelReview.objects.get(role="rubric_judge")
    assert review.state == "done" and review.scores["novelty"] == 9 and review.rationale == "On a second look."
    assert review.model_call.protocol_attempt == 2
    assert script.panel_attempts[("rubric_judge", claim("p1"))] == 2


def test_a_role_that_fails_twice_is_recorded_as_failed_never_as_unknown_scores(models, script, coordinator):
    cohort = make_cohort([proposal("p1", "T-A")], user=coordinator)
    script.reviews[("methods_reviewer", claim("p1"))] = ["Let me think about it.", review_reply({"feasibility": 11})]
    job = run_job(panel_start_for_cohort(cohort=cohort, user=coordinator))
    assert job.state == BackgroundJob.State.SUCCEEDED
    failed = PanelReview.objects.get(role="methods_reviewer")
    assert failed.state == "failed" and failed.scores == {} and failed.eligible == ""
    assert "feasibility: 11 is not" in failed.error
    (row,) = cohort_panel(cohort).rows
    assert row.profile.q is None and row.profile.coverage.failed_roles == ("methods_reviewer",)
    assert all(value == 5.0 for value in row.profile.medians.values())  # the two others still give medians

    # Started again, only the failed role is asked.
    script.reviews[("methods_reviewer", claim("p1"))] = [review_reply()]
    before = len(script.requests_of_kind("review"))
    run_job(panel_start_for_cohort(cohort=cohort, user=coordinator))
    again = script.requests_of_kind("review")[before:]
    assert [key[0] for key, _ in again] == ["methods_reviewer"]
    assert cohort_panel(cohort).rows[0].profile.q == 5.0


def test_complete_panels_are_not_reviewed_again_unless_redo(models, script, coordinator):
    cohort = make_cohort([proposal("p1", "T-A"), proposal("p2", "T-A")], user=coordinator)
    run_job(panel_start_for_cohort(cohort=cohort, user=coordinator))
    assert len(script.requests_of_kind("review")) == 6
    job = run_job(panel_start_for_cohort(cohort=cohort, user=coordinator))
    assert job.total == 0 and len(script.requests_of_kind("review")) == 6
    script.reviews[("rubric_judge", claim("p2"))] = [review_reply({"importance": 9})]
    run_job(panel_start_for_cohort(cohort=cohort, redo=True, user=coordinator))
    assert len(script.requests_of_kind("review")) == 12
    assert PanelReview.objects.count() == 6
    assert PanelReview.objects.get(role="rubric_judge", subject__proposal__external_id="p2").scores["importance"] == 9


def test_a_second_panel_job_for_the_same_cohort_waits_for_the_first(models, coordinator):
    cohort = make_cohort([proposal("p1", "T-A")], user=coordinator)
    first = panel_start_for_cohort(cohort=cohort, user=coordinator)
    with pytest.raises(PanelError) as refused:
        panel_start_for_cohort(cohort=cohort, user=coordinator)
    assert refused.value.status == 409 and refused.value.problems == [
        {"field": "job", "message": f"Job {first.pk} is still at work."}
    ]


def test_without_panel_roles_in_the_roster_nothing_starts(db, server, coordinator):
    panel_roster(server.base_url, roles=("rubric_judge",))
    cohort = make_cohort([proposal("p1", "T-A")], user=coordinator)
    with pytest.raises(PanelError) as refused:
        panel_start_for_cohort(cohort=cohort, user=coordinator)
    assert refused.value.code == "not_configured" and refused.value.status == 503
    assert "domain scientist" in refused.value.message and "methods reviewer" in refused.value.message
    assert not BackgroundJob.objects.exists()


def test_a_cohort_with_revisions_needs_a_revision_judge_to_start(db, server, coordinator, client):
    panel_roster(server.base_url, roles=("rubric_judge", "domain_scientist", "methods_reviewer"))
    plain = make_cohort([proposal("p1", "T-A"), proposal("p2", "T-A")], user=coordinator)
    revised = make_cohort([proposal("r1", "T-R"), proposal("r2", "T-R", parents=["r1"])], user=coordinator)
    with pytest.raises(PanelError) as refused:
        panel_start_for_cohort(cohort=revised, user=coordinator)
    assert refused.value.code == "not_configured" and "revision judge" in refused.value.message
    assert not BackgroundJob.objects.exists()
    client.force_login(coordinator)
    answer = client.post(f"/api/v1/cohorts/{revised.pk}/ai-panel", {}, content_type="application/json")
    assert answer.status_code == 503 and answer.json()["error"] == "not_configured"
    assert not BackgroundJob.objects.exists()
    assert panel_start_for_cohort(cohort=plain, user=coordinator).kind == "ai_panel"  # nothing to judge: it starts


def test_a_panel_job_whose_revision_judge_left_the_roster_fails_and_says_why(models, coordinator):
    cohort = make_cohort([proposal("r1", "T-R"), proposal("r2", "T-R", parents=["r1"])], user=coordinator)
    job = panel_start_for_cohort(cohort=cohort, user=coordinator)
    RosterMember.objects.filter(role="revision_judge").delete()
    job = run_job(job)
    assert job.state == BackgroundJob.State.FAILED and "revision judge" in job.error
    assert not RevisionJudgment.objects.exists()


def test_a_revision_is_judged_against_its_first_listed_parent(models, script, coordinator):
    scores_low = dict.fromkeys(DIMENSION_KEYS, 4)
    scores_high = dict.fromkeys(DIMENSION_KEYS, 7)
    cohort = make_cohort(
        [
            proposal("p1", "T-A"),
            proposal("p2", "T-A"),
            proposal("p3", "T-A", parents=["p2", "p1"]),  # a crossover: p2 is the predecessor, p1 context
        ],
        user=coordinator,
    )
    for role in ("rubric_judge", "domain_scientist", "methods_reviewer"):
        script.reviews[(role, claim("p2"))] = [review_reply(scores_low)]
        script.reviews[(role, claim("p3"))] = [review_reply(scores_high)]
        script.reviews[(role, claim("p1"))] = [review_reply(dict.fromkeys(DIMENSION_KEYS, 9))]
    script.revisions[(claim("p2"), claim("p3"))] = json.dumps(
        {"category": "necessary_repair", "rationale": "Fixes it."}
    )
    run_job(panel_start_for_cohort(cohort=cohort, user=coordinator))
    # Every parent→child edge is judged (a transition each); the revision analysis reads the first parent's.
    requests = dict(script.requests_of_kind("revision"))
    assert set(requests) == {(claim("p2"), claim("p3")), (claim("p1"), claim("p3"))}
    user = requests[(claim("p2"), claim("p3"))]
    assert user.index("PREDECESSOR") < user.index(claim("p2")) < user.index("REVISION") < user.index(claim("p3"))
    judgment = RevisionJudgment.objects.get(predecessor__external_id="p2")
    assert judgment.category == "necessary_repair"
    assert RevisionJudgment.objects.get(predecessor__external_id="p1").category == "substantive_progress"
    row = next(row for row in cohort_panel(cohort).rows if row.proposal_id == "p3")
    assert row.revision.delta_q == pytest.approx(3.0) and row.revision.label == "Necessary repair"
    summary = cohort_panel(cohort).revisions
    assert (
        summary.judged == 1 and summary.counts["necessary_repair"] == 1 and summary.mean_delta_q == pytest.approx(3.0)
    )
    profile = subject_profile(PanelSubject.objects.get(proposal__external_id="p3").pk)
    assert profile.revision.rationale == "Fixes it." and profile.revision.delta_q == pytest.approx(3.0)


def test_hypotheses_of_a_benchmark_set_and_a_screening_run_can_be_reviewed(models, script, coordinator):
    benchmark = make_set(
        {"tasks": [task("B1")], "hypotheses": [hypothesis("B1", "h1"), hypothesis("B1", "h2")]}, name="Panel set"
    )
    job = run_job(panel_start_for_hypotheses(benchmark=benchmark, hypotheses=["h2"], user=coordinator))
    assert job.state == BackgroundJob.State.SUCCEEDED, job.error
    reviewed = PanelSubject.objects.get(benchmark_hypothesis__key="h2")
    assert reviewed.reviews.filter(state="done").count() == 3
    for _key, user in script.requests_of_kind("review"):
        assert "Does factor B1 change lifespan" in user and "Gen Alpha" not in user and "Alpha Labs" not in user
        assert "Raising factor B1 extends" not in user  # the reference statement

    run = Run.objects.create(
        question="Does the niche select mutant clones?", background="Clones expand.", shuffle_seed=1
    )
    Hypothesis.objects.create(
        run=run,
        source="generator-0",
        source_index=0,
        label="H1",
        statement="The niche selects clones.",
        author_name="Secret Model",
        author_company="Secret Labs",
    )
    with pytest.raises(PanelError) as refused:
        panel_start_for_hypotheses(run=run, hypotheses=["H1", "H9"], user=coordinator)
    assert refused.value.code == "unknown_hypotheses" and [p["message"] for p in refused.value.problems] == [
        "There is no hypothesis H9."
    ]
    run_job(panel_start_for_hypotheses(run=run, hypotheses=["H1"], user=coordinator))
    subject = PanelSubject.objects.get(screening_hypothesis__label="H1")
    profile = subject_profile(subject.pk)
    assert profile.profile.q == 5.0 and "H1 of run" in profile.title
    users = [user for key, user in script.requests_of_kind("review") if key[1] == "The niche selects clones."]
    assert len(users) == 3 and all("Secret" not in user and "Clones expand." in user for user in users)


def test_each_role_is_asked_through_its_own_roster_member(db, server, script, fast_retries, coordinator):
    roster = panel_roster(server.base_url)
    other = ModelEndpoint.objects.create(
        display_name="Methods model", company="M", protocol="openai", base_url=server.base_url, model_id="methods-model"
    )
    RosterMember.objects.filter(roster=roster, role="methods_reviewer").update(endpoint=other)
    cohort = make_cohort([proposal("p1", "T-A")], user=coordinator)
    run_job(panel_start_for_cohort(cohort=cohort, user=coordinator))
    names = dict(PanelReview.objects.values_list("role", "model_name"))
    assert names == {
        "rubric_judge": "Panel model",
        "domain_scientist": "Panel model",
        "methods_reviewer": "Methods model",
    }
    assert ModelCall.objects.filter(purpose="panel_review", model_id="methods-model").count() == 1


def test_a_predecessor_reviewed_in_another_cohort_gives_delta_q(models, script, coordinator):
    earlier = make_cohort([proposal("o1", "T-O")], user=coordinator, name="Earlier round")
    for role in ("rubric_judge", "domain_scientist", "methods_reviewer"):
        script.reviews[(role, claim("o2"))] = [review_reply(dict.fromkeys(DIMENSION_KEYS, 8))]
    run_job(panel_start_for_cohort(cohort=earlier, user=coordinator))
    later = make_cohort([proposal("o2", "T-O", parents=["o1"])], user=coordinator, name="Later round")
    run_job(panel_start_for_cohort(cohort=later, user=coordinator))
    (row,) = cohort_panel(later).rows
    assert row.revision.predecessor_id == "o1" and row.revision.state == "done"
    assert row.revision.delta_q == pytest.approx(3.0)  # 8 against the predecessor's 5


def test_the_fresh_context_reference_reads_the_same_packet_without_a_roles_framing(
    db, server, script, fast_retries, coordinator
):
    panel_roster(server.base_url, roles=(*PANEL_ROLES, "reference_reviewer"))
    cohort = make_cohort([proposal("p1", "T-A"), proposal("p2", "T-A"), proposal("p3", "T-B")], user=coordinator)
    script.reviews[("reference_reviewer", claim("p1"))] = [review_reply({"novelty": 9}, rationale="Fresh look.")]
    script.reviews[("reference_reviewer", claim("p2"))] = ["Not JSON.", "Still not JSON."]
    job = run_job(panel_start_for_cohort(cohort=cohort, user=coordinator))
    assert job.state == BackgroundJob.State.SUCCEEDED, job.error
    assert job.total == 12  # nine role reviews and three references
    # The same user message as every role's for the same proposal: the same packet, dimensions and scale.
    users = defaultdict(set)
    for (_role, statement), user in script.requests_of_kind("review"):
        users[statement].add(user)
    assert all(len(messages) == 1 for messages in users.values()) and len(users) == 3
    # A new conversation: one system and one user message, the system message without a role.
    calls = ModelCall.objects.filter(purpose="panel_reference")
    assert calls.count() == 4  # p2's reference was asked twice
    for call in calls:
        messages = call.request_body["messages"]
        assert [message["role"] for message in messages] == ["system", "user"]
        assert messages[0]["content"] == REFERENCE_SYSTEM == "Answer with JSON only."
    assert PanelReview.objects.count() == 9  # the reference is no role of the panel
    references = {
        row.subject.proposal.external_id: row for row in ReferenceReview.objects.select_related("subject__proposal")
    }
    assert references["p1"].state == "done" and references["p1"].scores["novelty"] == 9
    assert references["p1"].prompt.kind == "reference_reviewer" and references["p1"].model_name == "Panel model"
    assert (
        references["p2"].state == "failed"
        and references["p2"].scores == {}
        and "No valid reply" in references["p2"].error
    )
    rows = {row.proposal_id: row for row in cohort_panel(cohort).rows}
    assert rows["p1"].profile.medians["novelty"] == 5.0  # never part of the medians or Q
    assert subject_profile(references["p1"].subject_id).reference.rationale == "Fresh look."
    # Started again: only the failed reference is asked.
    before = len(script.requests_of_kind("review"))
    script.reviews[("reference_reviewer", claim("p2"))] = [review_reply()]
    job = run_job(panel_start_for_cohort(cohort=cohort, user=coordinator))
    assert [key for key, _ in script.requests_of_kind("review")[before:]] == [("reference_reviewer", claim("p2"))]
    assert ReferenceReview.objects.filter(state="done").count() == 3


def test_without_a_reference_reviewer_in_the_roster_the_panel_asks_none(models, script, coordinator):
    cohort = make_cohort([proposal("p1", "T-A")], user=coordinator)
    job = run_job(panel_start_for_cohort(cohort=cohort, user=coordinator))
    assert job.state == BackgroundJob.State.SUCCEEDED and job.total == 3
    assert not ReferenceReview.objects.exists() and not ModelCall.objects.filter(purpose="panel_reference").exists()
