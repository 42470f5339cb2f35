"""Running the AI review panel (docs/protocol.md#ai-review-panel): three roles review the same blinded packet
independently, and a revision judge compares each revised proposal with its predecessor. For a cohort, a
fresh-context reference (roster role `reference_reviewer`, when the roster names one) also reviews each packet, for
the calibration's development diagnostics (docs/protocol.md#fresh-context-references).

The work is a background job (reviewapp.services.jobs): a cohort's proposals, or the screening or benchmark
hypotheses a coordinator selected. Each role's request is one model call with the protocol's one "ask once more"
(screening.llm.ask_twice); a role that still gives no valid reply is recorded as failed, never as unknown
scores. Each answer is written as soon as it arrives, so a job that stops keeps what it obtained, and a job started
again asks only what is missing (unless `redo`).
"""

import itertools

from django.db import transaction
from django.db.models import CharField, Value
from django.utils.text import slugify

from reviewapp.benchmarks.models import BenchmarkHypothesis, BenchmarkSet
from reviewapp.core.errors import problem
from reviewapp.models import BackgroundJob, Cohort, Proposal
from reviewapp.panel import prompts
from reviewapp.panel.level_prompts import PATH_JUDGE, RUN_JUDGE, packet_sha256
from reviewapp.panel.models import Assessment, PanelReview, PanelSubject, ReferenceReview, RevisionJudgment
from reviewapp.panel.profile import DIMENSION_KEYS, ROLES
from reviewapp.panel.research import cohort_tree
from reviewapp.panel.selectors import PANEL_JOB, subject_packets
from reviewapp.panel.services.common import (
    Answerer,
    PanelError,
    Progress,
    ask_model,
    concurrency_for,
    role_endpoints,
    run_concurrently,
    stored_prompt,
    write_table_file,
)
from reviewapp.panel.services.levels import level_assess, level_judges_needed, level_work
from reviewapp.selectors.exports import spreadsheet_text
from reviewapp.selectors.packets import ProposalPacket, proposal_packets
from reviewapp.selectors.revisions import first_parents
from reviewapp.services.jobs import JobError, JobResult, ProgressCallback, job_create
from screening.llm import roster_endpoint
from screening.models import Hypothesis, Run

PURPOSE_REVIEW, PURPOSE_REVISION, PURPOSE_REFERENCE = "panel_review", "panel_revision", "panel_reference"


# Starting ---------------------------------------------------------------------------------------------------------


def _refuse_if_running(**params) -> None:
    running = BackgroundJob.objects.filter(
        kind=PANEL_JOB, state__in=(BackgroundJob.State.QUEUED, BackgroundJob.State.RUNNING), **params
    ).first()
    if running is not None:
        raise PanelError(
            f"The AI panel is already at work here; wait for its job ({running.pk}) to finish.",
            code="panel_running",
            status=409,
            problems=[problem(f"Job {running.pk} is still at work.", field="job")],
        )


def panel_start_for_cohort(*, cohort: Cohort, redo: bool = False, user) -> BackgroundJob:
    """Review every proposal of the cohort (those with a complete panel only again when `redo`), then judge each
    revised proposal against its predecessor. Refused (503 not_configured) when the roster lacks a panel role, or
    the revision judge while the cohort has revised proposals: the panel is never run with a part silently left out."""
    revised = first_parents(child_ids=cohort.proposals.values("pk"))
    role_endpoints(ROLES + ((prompts.REVISION_JUDGE,) if revised else ()) + level_judges_needed(cohort_tree(cohort)))
    with transaction.atomic():
        Cohort.objects.select_for_update().filter(pk=cohort.pk).first()
        if not cohort.proposals.exists():
            raise PanelError("The cohort has no proposals to review yet.", code="nothing_to_review")
        _refuse_if_running(params__cohort_id=cohort.pk)
        return job_create(kind=PANEL_JOB, params={"cohort_id": cohort.pk, "redo": redo}, user=user)


def panel_start_for_hypotheses(
    *,
    run: Run | None = None,
    benchmark: BenchmarkSet | None = None,
    hypotheses: list[str],
    redo: bool = False,
    user,
) -> BackgroundJob:
    """Review the hypotheses a coordinator selected from a screening run (by label) or a benchmark set (by key)."""
    if (run is None) == (benchmark is None):
        raise PanelError("Name either a screening run or a benchmark set.")
    if not hypotheses:
        raise PanelError("Select at least one hypothesis.", code="nothing_to_review")
    role_endpoints(ROLES)
    source: dict[str, object]
    if run is not None:
        found = dict(Hypothesis.objects.filter(run=run, label__in=hypotheses).values_list("label", "pk"))
        field, source = "screening_hypothesis_id", {"run": str(run.public_id)}
    else:
        assert benchmark is not None
        chosen = BenchmarkHypothesis.objects.filter(benchmark=benchmark, key__in=hypotheses)
        found = dict(chosen.values_list("key", "pk"))
        field, source = "benchmark_hypothesis_id", {"benchmark_id": benchmark.pk}
    unknown = [name for name in hypotheses if name not in found]
    if unknown:
        raise PanelError(
            f"Unknown hypotheses: {', '.join(unknown[:10])}.",
            code="unknown_hypotheses",
            problems=[problem(f"There is no hypothesis {name}.", field="hypotheses") for name in unknown],
        )
    with transaction.atomic():
        PanelSubject.objects.bulk_create([PanelSubject(**{field: pk}) for pk in found.values()], ignore_conflicts=True)
        made = PanelSubject.objects.filter(**{f"{field}__in": found.values()})
        subject_ids = sorted(made.values_list("pk", flat=True))
        _refuse_if_running(**{f"params__{key}": value for key, value in source.items()})
        return job_create(kind=PANEL_JOB, params={**source, "subject_ids": subject_ids, "redo": redo}, user=user)


# The job ----------------------------------------------------------------------------------------------------------


def _cohort_subjects(cohort: Cohort) -> dict[int, int]:
    """proposal pk → its panel subject pk, for every proposal of the cohort (subjects made where missing)."""
    proposals = list(cohort.proposals.values_list("pk", flat=True))
    PanelSubject.objects.bulk_create([PanelSubject(proposal_id=pk) for pk in proposals], ignore_conflicts=True)
    return dict(PanelSubject.objects.filter(proposal__in=proposals).values_list("proposal_id", "pk"))


def panel_job_run(job: BackgroundJob, report_progress: ProgressCallback) -> JobResult:
    redo = bool(job.params.get("redo"))
    cohort, subjects = None, {}
    if "cohort_id" in job.params:
        cohort = Cohort.objects.filter(pk=job.params["cohort_id"]).first()
        if cohort is None:
            raise JobError("The cohort no longer exists.")
        subjects = _cohort_subjects(cohort)
        packets = {subjects[pk]: packet for pk, packet in proposal_packets(proposal_ids=list(subjects)).items()}
    else:
        packets = subject_packets(job.params.get("subject_ids", []))
    revisions = _revision_work(cohort, subjects, redo) if cohort is not None else []
    tree = cohort_tree(cohort) if cohort is not None else None
    level_roles = level_judges_needed(tree) if tree is not None else ()
    roles = ROLES + ((prompts.REVISION_JUDGE,) if revisions else ()) + level_roles
    try:
        answerers = {role: Answerer(endpoint, stored_prompt(role)) for role, endpoint in role_endpoints(roles).items()}
    except PanelError as exc:
        raise JobError(exc.message) from exc
    # The reference is optional: without one in the roster the calibration page says so instead of its diagnostics.
    reference = roster_endpoint(prompts.REFERENCE_REVIEWER) if cohort is not None else None
    if reference is not None:
        answerers[prompts.REFERENCE_REVIEWER] = Answerer(reference, stored_prompt(prompts.REFERENCE_REVIEWER))
    done = set()
    if not redo:
        done = set(
            PanelReview.objects.filter(subject__in=packets, state=PanelReview.State.DONE).values_list(
                "subject_id", "role"
            )
        )
    items: list = [
        ("review", subject, role) for subject in sorted(packets) for role in ROLES if (subject, role) not in done
    ]
    if reference is not None:
        referenced = set()
        if not redo:
            referenced = set(
                ReferenceReview.objects.filter(subject__in=packets, state=ReferenceReview.State.DONE).values_list(
                    "subject_id", flat=True
                )
            )
        items += [("reference", subject, None) for subject in sorted(packets) if subject not in referenced]
    if cohort is not None and tree is not None and level_roles:
        by_id = {version: packets[subjects[pk]] for version, pk in tree.pks.items()}
        grok = {role: answerers[role].endpoint.is_grok for role in level_roles}
        items += [("level", None, item) for item in level_work(cohort, tree, by_id, redo=redo, grok=grok)]
    if revisions:
        parents = {parent for _, _, parent in revisions}
        parent_packets = proposal_packets(proposal_ids=parents - set(subjects))
        by_proposal = {pk: packets[subject] for pk, subject in subjects.items()}
        items += [("revision", subject, (child, parent)) for subject, child, parent in revisions]
    progress = Progress(report_progress, len(items))
    outcomes = {"done": 0, "failed": 0}

    def work(item) -> None:
        kind, subject, detail = item
        if kind == "review":
            ok = _review(subject, detail, packets[subject], answerers[detail])
        elif kind == "reference":
            ok = _reference_review(subject, packets[subject], answerers[prompts.REFERENCE_REVIEWER])
        elif kind == "level":
            assert cohort is not None
            judge = PATH_JUDGE if detail.level == Assessment.Level.PATH else RUN_JUDGE
            ok = level_assess(cohort, detail, answerers[judge])
        else:
            child, parent = detail
            parent_packet = by_proposal.get(parent) or parent_packets[parent]
            ok = _judge_revision(subject, parent, parent_packet, by_proposal[child], answerers[prompts.REVISION_JUDGE])
        outcomes["done" if ok else "failed"] += 1
        progress.advance()

    run_concurrently(items, work, workers=concurrency_for(answerer.endpoint for answerer in answerers.values()))
    if items and not outcomes["done"]:
        raise JobError(
            f"No model gave a valid reply ({outcomes['failed']} requests, each asked twice); the failures are "
            "recorded. Check the roster's endpoints and start the panel again."
        )
    return _panel_file(job, cohort, list(packets))


def _revision_work(cohort: Cohort, subjects: dict[int, int], redo: bool) -> list[tuple[int, int, int]]:
    """(child's subject, child, parent) of every parent→child edge of the cohort's proposals not yet judged: each edge
    is a transition (docs/protocol.md#transitions), a crossover's other parents included."""
    edges = Proposal.parents.through.objects.filter(from_proposal_id__in=list(subjects)).values_list(
        "from_proposal_id", "to_proposal_id"
    )
    judged = set()
    if not redo:
        judged = set(
            RevisionJudgment.objects.filter(
                subject__in=subjects.values(), state=RevisionJudgment.State.DONE
            ).values_list("subject_id", "predecessor_id")
        )
    return [
        (subjects[child], child, parent) for child, parent in sorted(edges) if (subjects[child], parent) not in judged
    ]


def _asked_review(role: str, packet: ProposalPacket, answerer: Answerer, purpose: str) -> tuple[dict, bool]:
    """The fields of a review (a role's or the reference's) as asked now, and whether its reply was valid."""
    system, user = prompts.review_messages(role, packet, grok=answerer.endpoint.is_grok)
    reading, call, error = ask_model(prompts.parse_review, answerer, system, user, purpose, prompts.REVIEW_SCHEMA)
    if reading is None:
        values = {"state": PanelReview.State.FAILED, "eligible": "", "scores": {}, "rationale": "", "error": error}
    else:
        values = {"state": PanelReview.State.DONE, "error": "", **reading.value}
    return values | answerer.record(call) | {"packet_sha256": packet_sha256(user)}, reading is not None


def _review(subject_id: int, role: str, packet: ProposalPacket, answerer: Answerer) -> bool:
    values, ok = _asked_review(role, packet, answerer, PURPOSE_REVIEW)
    # One statement whether the role was reviewed before or not (a redo replaces the earlier review).
    PanelReview.objects.bulk_create(
        [PanelReview(subject_id=subject_id, role=role, **values)],
        update_conflicts=True,
        unique_fields=["subject", "role"],
        update_fields=[*values, "created_at"],
    )
    return ok


def _reference_review(subject_id: int, packet: ProposalPacket, answerer: Answerer) -> bool:
    values, ok = _asked_review(prompts.REFERENCE_REVIEWER, packet, answerer, PURPOSE_REFERENCE)
    ReferenceReview.objects.bulk_create(
        [ReferenceReview(subject_id=subject_id, **values)],
        update_conflicts=True,
        unique_fields=["subject"],
        update_fields=[*values, "created_at"],
    )
    return ok


def _judge_revision(
    subject_id: int, parent: int, parent_packet: ProposalPacket, packet: ProposalPacket, answerer: Answerer
) -> bool:
    system, user = prompts.revision_messages(parent_packet, packet, grok=answerer.endpoint.is_grok)
    reading, call, error = ask_model(
        prompts.parse_revision, answerer, system, user, PURPOSE_REVISION, prompts.REVISION_SCHEMA
    )
    if reading is None:
        values = {"state": RevisionJudgment.State.FAILED, "category": "", "rationale": "", "error": error}
    else:
        values = {"state": RevisionJudgment.State.DONE, "error": "", **reading.value}
    RevisionJudgment.objects.update_or_create(
        subject_id=subject_id,
        predecessor_id=parent,
        defaults={**values, **answerer.record(call), "packet_sha256": packet_sha256(user)},
    )
    return reading is not None


PANEL_FILE_COLUMNS = [
    "hypothesis",
    "role",
    "state",
    "eligible",
    *DIMENSION_KEYS,
    "rationale",
    "model",
    "simulated",
    "prompt_version",
    "error",
]


def _subject_names(subject_ids: list[int]) -> dict[int, str]:
    names = {}
    for pk, proposal, label, key in PanelSubject.objects.filter(pk__in=subject_ids).values_list(
        "pk", "proposal__external_id", "screening_hypothesis__label", "benchmark_hypothesis__key"
    ):
        names[pk] = proposal or label or key or str(pk)
    return names


# A review's columns in the panel's CSV, read from the roles' reviews and the references' alike.
_FILE_FIELDS = (
    "subject_id",
    "role",
    "state",
    "eligible",
    "scores",
    "rationale",
    "model_name",
    "simulated",
    "prompt__version",
    "error",
)


def _panel_file(job: BackgroundJob, cohort: Cohort | None, subject_ids: list[int]) -> JobResult:
    """Every review of the job's hypotheses as a CSV: one row per role, then the fresh-context references' (role
    `reference_reviewer`), scores as given ("unknown" and "inapplicable" as words, never numbers)."""
    names = _subject_names(subject_ids)
    reviews = PanelReview.objects.filter(subject__in=subject_ids).order_by("subject_id", "role")
    references = (
        ReferenceReview.objects.filter(subject__in=subject_ids)
        .annotate(role=Value(prompts.REFERENCE_REVIEWER, output_field=CharField()))
        .order_by("subject_id")
    )
    rows = (
        [
            spreadsheet_text(names[subject]),
            role,
            state,
            eligible,
            *(scores.get(key, "") for key in DIMENSION_KEYS),
            spreadsheet_text(rationale),
            spreadsheet_text(model),
            "true" if simulated else "false",
            version,
            spreadsheet_text(error),
        ]
        for subject, role, state, eligible, scores, rationale, model, simulated, version, error in itertools.chain(
            *(query.values_list(*_FILE_FIELDS).iterator(chunk_size=2000) for query in (reviews, references))
        )
    )
    name = slugify(cohort.name) if cohort is not None else f"hypotheses-{job.pk}"
    return write_table_file(
        job, itertools.chain([PANEL_FILE_COLUMNS], rows), kind="ai-panel", name=f"{name or 'cohort'}-ai-panel.csv"
    )
