"""A review cohort from a run's results: its selected or delivered hypotheses become proposals of a draft cohort.

The run stays in the proposals' provenance (author, company, method, source run), which reviewers never see; the
proposal ids are opaque so that nothing reviewer-facing names the run.
"""

import hashlib

from django.db import transaction

from reviewapp.models import Cohort, Proposal, ResearchTask
from reviewapp.services.cohorts import CohortError, cohort_create
from reviewapp.services.imports import proposal_content_sha256, task_content_sha256
from screening.models import PROTOCOL, Run

CHOICES = ("selected", "delivered")


@transaction.atomic
def cohort_create_from_run(
    *, run: Run, hypotheses: str, name: str, user, reviewers_per_proposal: int = 3, seed: int = 0
) -> Cohort:
    """hypotheses: "selected" or "delivered". Re-using a run reuses its task and proposals (same ids, same content)."""
    if hypotheses not in CHOICES:
        raise CohortError("Choose the selected or the delivered hypotheses.")
    chosen = [h for h in run.hypotheses.order_by("position") if getattr(h, hypotheses)]
    if not chosen:
        raise CohortError(f"This run has no {hypotheses} hypotheses.")
    cohort = cohort_create(name=name, reviewers_per_proposal=reviewers_per_proposal, seed=seed, user=user)
    task = _task_for_run(run)
    proposals = [_proposal_for(task, run, hypothesis) for hypothesis in chosen]
    cohort.proposals.add(*proposals)
    return cohort


def _opaque_id(*parts) -> str:
    return hashlib.sha256(":".join(str(part) for part in parts).encode()).hexdigest()[:20]


def _task_for_run(run: Run) -> ResearchTask:
    values = {
        "key": f"oh-task-{_opaque_id('task', run.public_id)}",
        "question": run.question,
        "background": run.background,
        "reference_statement": "",
        "published": None,
        "dataset": "",
    }
    task, _ = ResearchTask.objects.get_or_create(
        key=values["key"],
        defaults={**{k: v for k, v in values.items() if k != "key"}, "content_sha256": task_content_sha256(values)},
    )
    return task


def _proposal_for(task: ResearchTask, run: Run, hypothesis) -> Proposal:
    values = {
        "id": f"oh-{_opaque_id('proposal', run.public_id, hypothesis.label)}",
        "task": task.key,
        "statement": hypothesis.statement,
        "mechanism": hypothesis.mechanism,
        "prediction": hypothesis.prediction,
        "domain_category": hypothesis.domain_category,
        "investigation_plan": "",
        "data_requirements": "",
        "alternative_explanations": "",
        "citations": "",
        "author": hypothesis.author_name,
        "author_company": hypothesis.author_company,
        "method": PROTOCOL,
        "source_run": str(run.public_id),
        "parents": [],
    }
    fields = {name: value for name, value in values.items() if name not in ("id", "task", "parents")}
    proposal, _ = Proposal.objects.get_or_create(
        external_id=values["id"],
        defaults={**fields, "task": task, "content_sha256": proposal_content_sha256(values)},
    )
    return proposal
