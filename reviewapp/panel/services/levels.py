"""The path and run judges' part of a cohort's AI panel (docs/protocol.md#development-paths, #whole-run-assessment):
which paths and runs to assess, their blinded packets, and recording each assessment as it arrives.

A path's packet is its versions' blinded packets in order with its context versions marked; a run's is its whole
graph (every version's packet, the edges, decisions, budget, delivery records and trajectory summaries), versions
labelled V1, V2, … rather than by id. An assessment whose packet (its sha256, the source snapshot) and rubric are
unchanged is not asked again unless `redo`.
"""

from dataclasses import dataclass

from django.db import transaction

from reviewapp.models import AuditEvent, Cohort
from reviewapp.panel import level_prompts
from reviewapp.panel.development import PATH_RUBRIC, RUN_RUBRIC, rubric
from reviewapp.panel.models import REVIEWED_RECORDS, Assessment, ReviewStatus
from reviewapp.panel.research import CohortTree
from reviewapp.panel.services.common import Answerer, ask_model
from reviewapp.selectors.packets import ProposalPacket

PURPOSE_PATH, PURPOSE_RUN = "panel_path", "panel_run"


@dataclass(frozen=True)
class LevelItem:
    level: str  # Assessment.Level
    object_key: str
    proposals: list[str]
    packet: level_prompts.PathPacket | level_prompts.RunPacket


def assessable_runs(tree: CohortTree) -> list[str]:
    """Runs with a graph to judge: at least two versions."""
    return [run_id for run_id, run in sorted(tree.runs.items()) if len(run.proposals) >= 2]


def level_judges_needed(tree: CohortTree) -> tuple[str, ...]:
    """The roster roles the cohort's paths and runs need."""
    return ((level_prompts.PATH_JUDGE,) if tree.paths else ()) + (
        (level_prompts.RUN_JUDGE,) if assessable_runs(tree) else ()
    )


def _path_item(tree: CohortTree, path, packets: dict[str, ProposalPacket]) -> LevelItem:
    labels = {version: f"V{n}" for n, version in enumerate(path.proposals, start=1)}
    context = []
    for n, version in enumerate(path.context, start=1):
        children = [labels[child] for child in path.proposals if version in tree.versions[child].parents]
        context.append((f"C{n}", packets[version], ", ".join(children)))
    packet = level_prompts.PathPacket(
        versions=[(labels[version], packets[version]) for version in path.proposals], context=context
    )
    return LevelItem(Assessment.Level.PATH, path.terminal, list(path.proposals), packet)


def _run_item(tree: CohortTree, run_id: str, packets: dict[str, ProposalPacket]) -> LevelItem:
    run = tree.runs[run_id]
    labels = {version: f"V{n}" for n, version in enumerate(run.proposals, start=1)}
    members = set(run.proposals)
    edges = [
        (labels[parent], labels[child]) for parent, child in tree.transitions if child in members and parent in labels
    ]
    unit = f" {run.budget_unit}" if run.budget_unit else ""
    decisions = []
    for decision in run.decisions:
        named = ", ".join(labels.get(version, "?") for version in decision["proposals"]) or "no version named"
        budget = f"; budget {decision['budget']:g}{unit}" if decision["budget"] is not None else ""
        rationale = f" — {decision['rationale']}" if decision["rationale"] else ""
        decisions.append(f"{decision['seq']}. {decision['kind']}: {named}{budget}{rationale}")
    budget_text = f"{run.budget:g}{unit}" if run.budget is not None else "not recorded for the run"
    if not run.budget_recorded:
        budget_text = "not recorded (no budget for the run or any decision)"
    delivery = [
        f"{labels[version]}: {stage} {status}"
        for version in run.proposals
        for stage, status in tree.delivery.get(version, {}).items()
    ]
    trajectories = [f"{item['role'] or 'agent'}: {item['summary']}" for item in run.trajectories]
    packet = level_prompts.RunPacket(
        versions=[(labels[version], packets[version]) for version in run.proposals],
        edges=edges,
        decisions=decisions,
        budget=budget_text,
        delivery=delivery,
        trajectories=trajectories,
    )
    return LevelItem(Assessment.Level.RUN, run_id, list(run.proposals), packet)


def level_work(
    cohort: Cohort, tree: CohortTree, packets: dict[str, ProposalPacket], *, redo: bool, grok: dict[str, bool]
) -> list[LevelItem]:
    """The paths and runs whose assessment is missing, failed, or of another packet or rubric (all with `redo`).
    grok: judge role → whether its endpoint is a Grok model (its prompt then carries the extra sentence)."""
    items = [_path_item(tree, path, packets) for path in tree.paths]
    items += [_run_item(tree, run_id, packets) for run_id in assessable_runs(tree)]
    if redo:
        return items
    done = {
        (level, key): (sha, rubric_version)
        for level, key, sha, rubric_version in Assessment.objects.filter(
            cohort=cohort, state=Assessment.State.DONE
        ).values_list("level", "object_key", "packet_sha256", "rubric")
    }
    waiting = []
    for item in items:
        judge = _judge_of(item.level)
        _, user = _messages(item, grok=grok.get(judge, False))
        wanted = (level_prompts.packet_sha256(user), level_prompts.RUBRIC_OF_JUDGE[judge])
        if done.get((item.level, item.object_key)) != wanted:
            waiting.append(item)
    return waiting


def _judge_of(level: str) -> str:
    return level_prompts.PATH_JUDGE if level == Assessment.Level.PATH else level_prompts.RUN_JUDGE


def _messages(item: LevelItem, *, grok: bool) -> tuple[str, str]:
    if isinstance(item.packet, level_prompts.PathPacket):
        return level_prompts.path_messages(item.packet, grok=grok)
    return level_prompts.run_messages(item.packet, grok=grok)


def level_assess(cohort: Cohort, item: LevelItem, answerer: Answerer) -> bool:
    """Ask the level's judge (asked once more when invalid) and record the assessment, or its failure."""
    judge = _judge_of(item.level)
    rubric_ = rubric(PATH_RUBRIC if judge == level_prompts.PATH_JUDGE else RUN_RUBRIC)
    system, user = _messages(item, grok=answerer.endpoint.is_grok)
    purpose = PURPOSE_PATH if judge == level_prompts.PATH_JUDGE else PURPOSE_RUN
    reading, call, error = ask_model(
        lambda text: level_prompts.parse_assessment(rubric_, text),
        answerer,
        system,
        user,
        purpose,
        level_prompts.assessment_schema(rubric_),
    )
    if reading is None:
        values = {"state": Assessment.State.FAILED, "scores": {}, "evidence": {}, "rationales": {}, "error": error}
    else:
        values = {"state": Assessment.State.DONE, "error": "", **reading.value}
    Assessment.objects.update_or_create(
        cohort=cohort,
        level=item.level,
        object_key=item.object_key,
        defaults={
            **values,
            **answerer.record(call),
            "proposals": item.proposals,
            "rubric": rubric_.version,
            "packet_sha256": level_prompts.packet_sha256(user),
            "review_status": ReviewStatus.AUTOMATED,
        },
    )
    return reading is not None


def assessment_review_status_set(*, assessment: Assessment, status: str, user) -> Assessment:
    """A coordinator marks an assessment checked or disputed (or automated again); audit-logged with the status
    before."""
    return review_status_set(record=assessment, status=status, user=user)


def review_status_set(*, record, status: str, user):
    """Set the review status of any assessment record (a path or run assessment, a panel review, a fresh-context
    reference review, a revision judgment); audit-logged with the status before."""
    model = type(record)
    kind = next(name for name, cls in REVIEWED_RECORDS.items() if cls is model)
    with transaction.atomic():
        record = model.objects.select_for_update().get(pk=record.pk)
        before = record.review_status
        record.review_status = status
        record.save(update_fields=["review_status"])
        AuditEvent.objects.create(
            actor=user if user is not None and user.is_authenticated else None,
            action="assessment_review_status",
            target_type=kind,
            target_id=str(record.pk),
            data={"before": before, "after": status, **({"cohort": record.cohort_id} if kind == "assessment" else {})},
        )
        return record
