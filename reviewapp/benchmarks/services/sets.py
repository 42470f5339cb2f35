"""Writes of benchmark sets: creating a set and its judges, running the set, and the random control.

Running a set starts one Open Hypothesis run per task (the set's roster, a seed derived from the set's recorded
seed) and leaves the rest to the screening app's state machine. When a run's generation ends, before its hypotheses
are shuffled and numbered, `benchmark_run_pooling` draws the random control (docs/protocol.md#drawn-answers): one
yes/no per hypothesis from the operating system's cryptographic generator, stored with the time. Once the pool is
frozen, and before its first forecast request is even enqueued, `benchmark_run_pooled` records the hypotheses as the
task's and gives the n-th drawn answer to the n-th hypothesis of the pool, storing the time of the freeze and the
sha256 of the frozen hypothesis set.
"""

import hashlib
import json
import secrets
from typing import cast

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from reviewapp.benchmarks.models import BenchmarkHypothesis, BenchmarkSet, BenchmarkTask, Judge, RandomControlDraw
from reviewapp.benchmarks.services.versions import benchmark_set_touch
from reviewapp.core.errors import ServiceError
from reviewapp.core.queue import broker_check
from screening.llm.models import ModelEndpoint, Roster
from screening.models import Run, RunWorkItem
from screening.services.progress import run_forecasts_repeat
from screening.services.runs import roster_snapshot, run_literature_cutoff_set, run_start_for_set

RANDOM_CONTROL_GENERATOR = "python secrets.randbelow(2)"
# The fields of each hypothesis the frozen set's sha256 covers, in this order (docs/analysis.md#the-random-control
# shows the recipe).
FROZEN_FIELDS = ("id", "generator", "generator_company", "statement", "mechanism", "prediction")


class BenchmarkError(ServiceError):
    """A change the rules of benchmark sets refuse; the message is written for the coordinator."""


@transaction.atomic
def benchmark_create(
    *,
    name: str,
    description: str = "",
    roster: Roster | None = None,
    seed: int | None = None,
    design: str = BenchmarkSet.Design.POOLED,
    forecast_question: str = Run.Question.SHORT,
    user=None,
) -> BenchmarkSet:
    """A new, empty set. Without a seed one is drawn; it is recorded either way and seeds every run of the set.
    Without a roster the set runs on the default roster."""
    if design not in BenchmarkSet.Design.values:
        raise BenchmarkError(
            f"The design must be one of {', '.join(BenchmarkSet.Design.values)}.", code="invalid_design"
        )
    if forecast_question not in Run.Question.values:
        raise BenchmarkError(f"The question must be one of {', '.join(Run.Question.values)}.", code="invalid_question")
    if design == BenchmarkSet.Design.POOLED and forecast_question != Run.Question.SHORT:
        raise BenchmarkError(
            "The pooled design asks the protocol's short question; the other questions need the seed-001 design.",
            code="invalid_question",
        )
    name = name.strip()
    if not name:
        raise BenchmarkError("Give the set a name.")
    if len(name) > 200:
        raise BenchmarkError("The name has more than 200 characters.")
    if BenchmarkSet.objects.filter(name=name).exists():
        raise BenchmarkError(f"A set named “{name}” already exists.", code="name_taken", status=409)
    if seed is not None and not 0 <= seed < 2**63:
        raise BenchmarkError("The seed must be a whole number from 0 to 2^63 − 1.")
    return BenchmarkSet.objects.create(
        name=name,
        description=description.strip(),
        roster=roster,
        design=design,
        forecast_question=forecast_question,
        seed=secrets.randbits(63) if seed is None else seed,
        created_by=user if user is not None and user.is_authenticated else None,
    )


@transaction.atomic
def benchmark_roster_set(*, benchmark: BenchmarkSet, roster: Roster | None) -> BenchmarkSet:
    benchmark = BenchmarkSet.objects.select_for_update().get(pk=benchmark.pk)
    benchmark.roster = roster
    benchmark.save(update_fields=["roster"])
    return benchmark


@transaction.atomic
def judge_add(
    *, benchmark: BenchmarkSet, name: str = "", company: str = "", endpoint: ModelEndpoint | None = None
) -> Judge:
    """Add a judge at the end of the set's listed order: a model endpoint (its name and company by default) or a
    named person (name and company required, scores imported)."""
    benchmark = BenchmarkSet.objects.select_for_update().get(pk=benchmark.pk)
    name = (name or (endpoint.display_name if endpoint else "")).strip()
    company = (company or (endpoint.company if endpoint else "")).strip()
    if not name or not company:
        raise BenchmarkError("A judge needs a name and a company (the company decides which outcomes it may judge).")
    if len(name) > 200 or len(company) > 200:
        raise BenchmarkError("A judge's name and company have at most 200 characters each.")
    if benchmark.judges.filter(name=name).exists():
        raise BenchmarkError(f"The set already has a judge named “{name}”.", code="judge_exists", status=409)
    position = (benchmark.judges.aggregate(last=Max("position"))["last"] or 0) + 1
    judge = Judge.objects.create(benchmark=benchmark, name=name, company=company, endpoint=endpoint, position=position)
    benchmark_set_touch(benchmark_id=benchmark.pk)  # every hypothesis now has this judge's (missing) score
    return judge


# Running the set ---------------------------------------------------------------------------------------


def task_shuffle_seed(benchmark_seed: int, task_key: str) -> int:
    """The shuffle seed of a task's run: the first 63 bits of sha256("<set seed>:<task key>")."""
    digest = hashlib.sha256(f"{benchmark_seed}:{task_key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def complete_roster_snapshot(roster: Roster) -> dict:
    """The roster's enabled endpoints by role, as a run records them (screening.services.runs.roster_snapshot);
    refused unless every role has one."""
    snapshot = roster_snapshot(roster)
    missing = [role for role in ("generator", "stage1", "stage2") if not snapshot["roles"][role]]
    if missing:
        raise BenchmarkError(
            f"The roster “{roster.name}” has no enabled {', '.join(missing)} model; complete it first.",
            code="roster_incomplete",
        )
    return snapshot


def set_roster(benchmark: BenchmarkSet) -> Roster:
    """The roster the set runs on: its own, else the default roster."""
    roster = benchmark.roster or Roster.objects.filter(is_default=True).first()
    if roster is None:
        raise BenchmarkError(
            "The set has no roster and no default roster is set up: choose a roster (or run manage.py setup_roster).",
            code="no_roster",
        )
    return roster


def benchmark_run(*, benchmark: BenchmarkSet) -> list[Run]:
    """Start one run per task that has neither a run nor hypotheses yet; returns the runs started.

    The runs are the coordinator's, not a public client's: they do not count against a client address and are
    not refused by the public limits. Each is enqueued when the transaction commits."""
    broker_check()
    with transaction.atomic():
        benchmark = BenchmarkSet.objects.select_for_update().get(pk=benchmark.pk)
        roster = complete_roster_snapshot(set_roster(benchmark))
        waiting = list(
            benchmark.benchmark_tasks.filter(run__isnull=True, hypotheses__isnull=True)
            .select_related("task")
            .order_by("position", "pk")
        )
        if not waiting:
            raise BenchmarkError(
                "Every task of the set already has a run or hypotheses.", code="nothing_to_run", status=409
            )
        runs = [_task_run_start(benchmark, benchmark_task, roster) for benchmark_task in waiting]
        if benchmark.started_at is None:
            benchmark.started_at = timezone.now()
            benchmark.save(update_fields=["started_at"])
        benchmark_set_touch(benchmark_id=benchmark.pk)
    return runs


def _task_run_start(benchmark: BenchmarkSet, benchmark_task: BenchmarkTask, roster: dict) -> Run:
    """Start the screening run of one task of the set (in the caller's transaction; enqueued when it commits)."""
    task = benchmark_task.task
    run = run_start_for_set(
        question=task.question,
        background=task.background,
        shuffle_seed=task_shuffle_seed(benchmark.seed, task.key),
        roster=roster,
        design=BenchmarkSet.RUN_DESIGN[benchmark.design],
        forecast_question=benchmark.forecast_question,
        generation_count=BenchmarkSet.GENERATION_COUNT[benchmark.design],
    )
    benchmark_task.run = run
    benchmark_task.save(update_fields=["run"])
    return run


def benchmark_task_rerun(*, benchmark: BenchmarkSet, task_key: str) -> Run:
    """Run a task whose run failed again, from the start: a new run with the set's current roster and the task's
    seed. What the failed run left in the set (its pooled hypotheses, their scores, its random control) goes."""
    broker_check()
    with transaction.atomic():
        benchmark = BenchmarkSet.objects.select_for_update().get(pk=benchmark.pk)
        benchmark_task = benchmark.benchmark_tasks.select_related("task", "run").filter(task__key=task_key).first()
        if benchmark_task is None:
            raise BenchmarkError(f"The set has no task “{task_key}”.", code="not_found", status=404)
        if benchmark_task.run is None or not benchmark_task.run.status.startswith("failed"):
            raise BenchmarkError("Only a task whose run failed can be run again.", code="run_not_failed", status=409)
        roster = complete_roster_snapshot(set_roster(benchmark))
        benchmark_task.hypotheses.all().delete()
        RandomControlDraw.objects.filter(benchmark_task=benchmark_task).delete()
        benchmark_set_touch(benchmark_id=benchmark.pk)
        return _task_run_start(benchmark, benchmark_task, roster)


def benchmark_forecasts_repeat(*, benchmark: BenchmarkSet) -> list[tuple[str, int]]:
    """Send every forecast request of the set's runs again, byte for byte and in the same order, for each task whose
    run has made its selection and was not asked again yet (docs/protocol.md#repeating-the-forecasts); the answers
    are stored as round 2 beside the first. Returns (task key, requests queued) per task."""
    broker_check()
    with transaction.atomic():
        benchmark = BenchmarkSet.objects.select_for_update().get(pk=benchmark.pk)
        repeated = RunWorkItem.objects.filter(step=RunWorkItem.Step.REPEAT).values("run_id")
        due = list(
            benchmark.benchmark_tasks.filter(run__status__in=Run.SELECTION_MADE_STATUSES)
            .exclude(run__in=repeated)
            .select_related("task", "run")
            .order_by("position", "pk")
        )
        if not due:
            raise BenchmarkError(
                "No task's run has made its selection without having been asked again already.",
                code="nothing_to_repeat",
                status=409,
            )
        benchmark_set_touch(benchmark_id=benchmark.pk)
        return [(bt.task.key, run_forecasts_repeat(run=cast(Run, bt.run))) for bt in due]


# The random control --------------------------------------------------------------------------------------


def frozen_set_sha256(hypotheses: list[dict]) -> str:
    """sha256 of a task's frozen hypothesis set: the UTF-8 bytes of the compact JSON list of its hypotheses in pool
    order, each an object of FROZEN_FIELDS with sorted keys (ensure_ascii off)."""
    canonical = json.dumps(
        [{name: hypothesis[name] for name in FROZEN_FIELDS} for hypothesis in hypotheses],
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def random_control_draw(*, benchmark_task: BenchmarkTask, count: int) -> RandomControlDraw:
    """Draw and store one random yes/no per hypothesis for a task, once, before its pool is shuffled and numbered."""
    with transaction.atomic():
        draw, drawn = RandomControlDraw.objects.get_or_create(
            benchmark_task=benchmark_task,
            defaults={
                "drawn_at": timezone.now(),
                "hypothesis_count": count,
                "sequence": [secrets.randbelow(2) == 1 for _ in range(count)],
                "generator": RANDOM_CONTROL_GENERATOR,
            },
        )
        if drawn:
            benchmark_set_touch(benchmark_id=benchmark_task.benchmark_id)
    return draw


def random_control_freeze(*, draw: RandomControlDraw, hypotheses: list[dict], frozen_at) -> None:
    """Give the drawn answers out in pool order (the n-th to the n-th hypothesis) once the pool is frozen, and
    fingerprint the frozen set. A draw given out already is left as it is."""
    if draw.frozen_at is not None:
        return
    if len(hypotheses) != len(draw.sequence):
        raise BenchmarkError(f"{len(draw.sequence)} answers were drawn for a pool of {len(hypotheses)} hypotheses.")
    draw.answers = {hypothesis["id"]: answer for hypothesis, answer in zip(hypotheses, draw.sequence, strict=True)}
    draw.hypotheses_sha256 = frozen_set_sha256(hypotheses)
    draw.frozen_at = frozen_at
    with transaction.atomic():
        draw.save(update_fields=["answers", "hypotheses_sha256", "frozen_at"])
        benchmark_set_touch(benchmark_id=draw.benchmark_task.benchmark_id)


def _set_task_of(run: Run) -> BenchmarkTask | None:
    return BenchmarkTask.objects.select_related("task").filter(run=run).first()


def benchmark_run_pooling(*, run: Run, count: int) -> None:
    """Called by the screening state machine when a run's generation ends, inside the transaction that pools its
    hypotheses and before they are shuffled and numbered: a set's run draws its random control here
    (docs/protocol.md#drawn-answers). Any other run is left alone."""
    benchmark_task = _set_task_of(run)
    if benchmark_task is not None:
        random_control_draw(benchmark_task=benchmark_task, count=count)


def benchmark_run_pooled(*, run: Run) -> None:
    """Called by the screening state machine right after it pooled and numbered a run's hypotheses, inside that
    transaction and before the stage-1 request exists: a set's run records its hypotheses, gives out the random
    control's answers in pool order, and sets the run's literature cutoff to its task's publication date. Any other
    run is left alone."""
    benchmark_task = _set_task_of(run)
    if benchmark_task is None:
        return
    # The run answers the task: only what was published before the task's article counts in its literature check.
    run_literature_cutoff_set(run=run, published_before=benchmark_task.task.published)
    pooled = list(run.hypotheses.exclude(label="").order_by("position"))
    try:
        with transaction.atomic():
            BenchmarkHypothesis.objects.bulk_create(
                BenchmarkHypothesis(
                    benchmark_id=benchmark_task.benchmark_id,
                    benchmark_task=benchmark_task,
                    key=hypothesis.label,
                    position=cast(int, hypothesis.position),  # set with the label when the pool was numbered
                    hypothesis=hypothesis,
                )
                for hypothesis in pooled
            )
            benchmark_set_touch(benchmark_id=benchmark_task.benchmark_id)
    except IntegrityError:
        # Already recorded: the pooling transition happens once, but a retried call must not fail the run.
        pass
    draw = RandomControlDraw.objects.filter(benchmark_task=benchmark_task).first()
    if draw is None:
        # A pool made before draws came first (or by another path): drawn now, still before any forecast.
        draw = random_control_draw(benchmark_task=benchmark_task, count=len(pooled))
    random_control_freeze(
        draw=draw,
        hypotheses=[
            {
                "id": h.label,
                "generator": h.author_name,
                "generator_company": h.author_company,
                "statement": h.statement,
                "mechanism": h.mechanism,
                "prediction": h.prediction,
            }
            for h in pooled
        ],
        frozen_at=run.pooled_at or timezone.now(),
    )
