"""The path and run judges in a cohort's AI panel, against a model server speaking the providers' protocol: each
development path and each run with a graph is assessed on its rubric, replies are validated (asked once more, then
failed), assessments record their source snapshot, and the panel refuses to start without the judges it needs."""

import hashlib
import json

import pytest

from reviewapp.models import BackgroundJob
from reviewapp.panel.level_prompts import PATH_QUESTION, RUN_QUESTION
from reviewapp.panel.models import Assessment, ReviewStatus, RevisionJudgment
from reviewapp.panel.services.common import PanelError
from reviewapp.panel.services.panel import panel_start_for_cohort
from reviewapp.services import jobs
from tests.panel.support import PANEL_ROLES, make_cohort, panel_roster, proposal


def run_job(job: BackgroundJob) -> BackgroundJob:
    jobs.job_run(job_id=job.pk)
    job.refresh_from_db()
    return job


def crossover_cohort(user):
    # r1 → a → x and r2 → x: the path to x is r1, a, x with r2 as context; one run (one task, one author).
    return make_cohort(
        [
            proposal("r1", "T-A", author="M"),
            proposal("a", "T-A", author="M", parents=["r1"]),
            proposal("r2", "T-A", author="M"),
            proposal("x", "T-A", author="M", parents=["r2", "a"]),
            proposal("solo", "T-A", author="N"),
        ],
        user=user,
    )


def test_paths_and_runs_are_assessed_with_their_snapshot_and_rubric(models, script, coordinator):
    cohort = crossover_cohort(coordinator)
    job = run_job(panel_start_for_cohort(cohort=cohort, user=coordinator))
    assert job.state == BackgroundJob.State.SUCCEEDED, job.error
    ((claims, path_user),) = script.requests_of_kind("path")
    assert path_user.startswith(PATH_QUESTION)
    assert path_user.index("V1\n") < path_user.index("V2\n") < path_user.index("V3\n") < path_user.index("C1 (context")
    assert "Author of" not in path_user and "Hidden Co" not in path_user and "r1" not in claims[0].split()[0:1]
    ((_, run_user),) = script.requests_of_kind("run")
    assert run_user.startswith(RUN_QUESTION) and "not recorded (no budget" in run_user
    path = Assessment.objects.get(level="path")
    assert (path.object_key, path.proposals, path.rubric, path.state) == ("x", ["r1", "a", "x"], "dfm-paths-v1", "done")
    assert path.packet_sha256 == hashlib.sha256(path_user.encode()).hexdigest()
    assert path.scores["cumulative_progress"] == 3 and path.evidence["cumulative_progress"] == "Claim quoted."
    assert path.review_status == ReviewStatus.AUTOMATED and path.prompt.version == "levels-v1"
    run = Assessment.objects.get(level="run")
    assert (run.object_key, run.rubric, sorted(run.proposals)) == ("a", "dfm-runs-v1", ["a", "r1", "r2", "x"])
    # Every edge is a transition judged by the revision judge: r1→a, r2→x and a→x.
    assert RevisionJudgment.objects.count() == 3
    # Started again, nothing unchanged is asked again.
    run_job(panel_start_for_cohort(cohort=cohort, user=coordinator))
    assert len(script.requests_of_kind("path")) == 1 and len(script.requests_of_kind("run")) == 1


def test_an_invalid_assessment_is_asked_once_more_then_recorded_as_failed(models, script, coordinator):
    cohort = crossover_cohort(coordinator)
    bad = json.dumps({"dimensions": {"question_continuity": {"score": 7, "evidence": "", "rationale": "x"}}})
    script.levels["path"] = [bad, bad, bad]
    run_job(panel_start_for_cohort(cohort=cohort, user=coordinator))
    assert len(script.requests_of_kind("path")) == 2
    failed = Assessment.objects.get(level="path")
    assert failed.state == "failed" and failed.scores == {} and "not a whole number 0–4" in failed.error


def test_a_scored_dimension_without_quoted_evidence_is_invalid(models, script, coordinator):
    from tests.panel.support import level_reply

    cohort = crossover_cohort(coordinator)
    unquoted = json.loads(level_reply("dfm-paths-v1"))
    unquoted["dimensions"]["traceability"]["evidence"] = ""
    script.levels["path"] = [json.dumps(unquoted), level_reply("dfm-paths-v1", {"efficiency": "inapplicable"})]
    run_job(panel_start_for_cohort(cohort=cohort, user=coordinator))
    assert len(script.requests_of_kind("path")) == 2
    assert Assessment.objects.get(level="path").scores["efficiency"] == "inapplicable"


@pytest.mark.parametrize("missing", ["path_judge", "run_judge"])
def test_the_panel_refuses_to_start_without_the_judge_a_level_needs(db, server, coordinator, missing):
    panel_roster(server.base_url, roles=[role for role in PANEL_ROLES if role != missing])
    cohort = crossover_cohort(coordinator)
    with pytest.raises(PanelError) as refused:
        panel_start_for_cohort(cohort=cohort, user=coordinator)
    assert refused.value.code == "not_configured" and refused.value.status == 503
    assert missing.replace("_", " ") in refused.value.message


def test_a_cohort_without_revisions_needs_no_level_judges(db, server, coordinator):
    panel_roster(server.base_url, roles=["rubric_judge", "domain_scientist", "methods_reviewer"])
    cohort = make_cohort([proposal("p1", "T-A"), proposal("p2", "T-A")], user=coordinator)
    assert panel_start_for_cohort(cohort=cohort, user=coordinator).state == BackgroundJob.State.QUEUED
