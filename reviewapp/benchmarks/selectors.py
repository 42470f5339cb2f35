"""Reads of benchmark sets for coordinators and analysts: progress, the hypothesis × judge table with outcomes,
the statistics (docs/protocol.md#statistics) and the human review analysis of a cohort.

Every hypothesis of a set, whether a screening run produced it or it was imported, is read as one HypothesisRow,
so that the judge table, Table S, the published bundle and the statistics all rest on the same rows. Outcomes are
computed from the stored scores each time (reviewapp.analysis.judge_outcome_for), never stored.
"""

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.cache import cache
from django.db.models import Count, Max, Min, OuterRef, Prefetch, Q, Subquery
from django.db.models.functions import Coalesce

from literature.hooks import TaskGroup
from reviewapp import analysis
from reviewapp.analysis import JudgeOutcome
from reviewapp.benchmarks.models import (
    ONE_REQUEST,
    BenchmarkHypothesis,
    BenchmarkImport,
    BenchmarkSet,
    BenchmarkTask,
    ExcludedGenerationSet,
    Forecaster,
    Judge,
    JudgeScore,
    QualityScore,
    RandomControlDraw,
    TaskSelectionLog,
)
from reviewapp.benchmarks.statistics import BenchmarkStatistics, HypothesisRow, compute_statistics, statistics_key
from reviewapp.benchmarks.study import (
    ExcludedSetInput,
    SelectionLogInputs,
    SelectionRecordInput,
    StudyInputs,
    TaskInputs,
)
from reviewapp.core import roles
from reviewapp.core.errors import Forbidden, NotFound, ServiceError
from screening.llm.models import ModelCall
from screening.models import Forecast, Hypothesis, Run, RunWorkItem
from screening.services.progress import UNFINISHED

# Run statuses in which a run's selection is decided (it is made when stage 2 ends).
SELECTION_DECIDED = (Run.Status.CHECKING_NOVELTY, Run.Status.COMPLETED, Run.Status.FAILED_AT_NOVELTY)
FIRST_STAGE: dict[str, bool] = {Hypothesis.Stage1.KEPT: True, Hypothesis.Stage1.DISCARDED: False}
# The statistics page resamples tasks this many times (the default 10,000); the result is cached per data.
PAGE_RESAMPLES = analysis.DEFAULT_RESAMPLES
STATISTICS_CACHE_SECONDS = 24 * 3600


def _count_of(model) -> Coalesce:
    rows = model.objects.filter(benchmark=OuterRef("pk")).order_by().values("benchmark")
    return Coalesce(Subquery(rows.annotate(n=Count("*")).values("n")), 0)


def benchmark_list():
    """Sets, newest first, with task_count, hypothesis_count and judge_count (one subquery each, no joins)."""
    return BenchmarkSet.objects.order_by("-created_at", "-pk").annotate(
        task_count=_count_of(BenchmarkTask),
        hypothesis_count=_count_of(BenchmarkHypothesis),
        judge_count=_count_of(Judge),
    )


def benchmark_list_with_rosters():
    """`benchmark_list` with each set's roster."""
    return benchmark_list().select_related("roster")


def benchmark_for_user(*, user, benchmark_id: int, coordinate: bool = False, counts: bool = True) -> BenchmarkSet:
    """The set with its counts (unless `counts` is false: they count every hypothesis of the set) for a user who may
    read every set (a coordinator or an analyst; a coordinator only, with `coordinate`). Anyone else is refused
    (Forbidden, 403) before the set is looked up; a set that does not exist is NotFound (404). Pages and the API both
    answer these (`reviewapp.core.errors`)."""
    if coordinate and not roles.can_coordinate(user):
        raise Forbidden("Only coordinators may do this.")
    if not roles.can_read_all(user):
        raise Forbidden("Only coordinators and analysts may see this.")
    sets = benchmark_list_with_rosters() if counts else BenchmarkSet.objects.select_related("roster")
    benchmark = sets.filter(pk=benchmark_id).first()
    if benchmark is None:
        raise NotFound(f"There is no benchmark set {benchmark_id}.")
    return benchmark


def benchmark_judges_named(benchmark: BenchmarkSet, names: list[str]) -> list[Judge]:
    """The set's judges with these names; a refusal (unknown_judge) naming any the set does not have."""
    judges = list(benchmark.judges.filter(name__in=names))
    unknown = sorted(set(names) - {judge.name for judge in judges})
    if unknown:
        raise ServiceError(f"The set has no judge named {', '.join(unknown)}.", code="unknown_judge")
    return judges


def benchmark_judges_with_id(benchmark: BenchmarkSet, judge_id: int) -> list[Judge]:
    """The set's judge with this id, as a list (empty when the set has none with it)."""
    return list(benchmark.judges.filter(pk=judge_id))


def benchmark_judges(benchmark: BenchmarkSet) -> list[Judge]:
    """The judges in their listed order."""
    return list(benchmark.judges.select_related("endpoint").order_by("position", "pk"))


def benchmark_imports(benchmark: BenchmarkSet) -> list[BenchmarkImport]:
    return list(benchmark.imports.select_related("created_by").order_by("created_at", "pk"))


# Progress of a set ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskProgress:
    position: int
    task_key: str
    question: str
    run: Run | None
    hypotheses: int  # the task's hypotheses in the set (pooled from its run, or imported)
    discarded: int
    kept: int
    selected: int
    scores: int
    control_drawn_at: datetime | None
    pool_frozen_at: datetime | None  # when the run's pool was shuffled and numbered (the control's answers given out)
    first_forecast_at: datetime | None  # the first stage-1 request of the run
    repeat_requests: int = 0  # forecast requests asked again (round 2), queued in all
    repeat_finished: int = 0  # …of which finished

    @property
    def status(self) -> str:
        if self.run is not None:
            return self.run.status
        return "imported" if self.hypotheses else "not_started"

    @property
    def status_display(self) -> str:
        if self.run is not None:
            return self.run.get_status_display()
        return "Imported" if self.hypotheses else "Not run yet"

    @property
    def control_before_forecasts(self) -> bool | None:
        """The random control was drawn before the pool was frozen, and both before the first forecast request
        (None until all three exist)."""
        if self.control_drawn_at is None or self.pool_frozen_at is None or self.first_forecast_at is None:
            return None
        return self.control_drawn_at < self.pool_frozen_at < self.first_forecast_at


@dataclass(frozen=True)
class SetProgress:
    tasks: list[TaskProgress]
    runs_by_status: dict[str, int]
    hypotheses: int
    selected: int
    scores: int
    finished_runs: int
    runs: int

    @property
    def repeated_tasks(self) -> int:
        """Tasks whose forecasts were asked again (round 2), finished or not."""
        return sum(1 for task in self.tasks if task.repeat_requests)

    @property
    def repeating(self) -> bool:
        return any(task.repeat_finished < task.repeat_requests for task in self.tasks)

    @property
    def percent_finished(self) -> int:
        return round(100 * self.finished_runs / self.runs) if self.runs else 0


def benchmark_progress(benchmark: BenchmarkSet) -> SetProgress:
    """Per task: its run's status and counts, the random control's time against the first forecast; and overall."""
    benchmark_tasks = list(benchmark.benchmark_tasks.select_related("task", "run").order_by("position", "pk"))
    hypotheses = BenchmarkHypothesis.objects.filter(benchmark=benchmark)
    counts = {
        row["benchmark_task"]: row
        for row in hypotheses.values("benchmark_task").annotate(
            total=Count("pk"),
            discarded=Count("pk", filter=Q(hypothesis__stage1=Hypothesis.Stage1.DISCARDED)),
            kept=Count("pk", filter=Q(hypothesis__stage1=Hypothesis.Stage1.KEPT)),
            selected=Count("pk", filter=Q(hypothesis__selected=True) | Q(selected=True)),
        )
    }
    scores = dict(
        JudgeScore.objects.filter(hypothesis__benchmark=benchmark)
        .values("hypothesis__benchmark_task")
        .annotate(n=Count("pk"))
        .values_list("hypothesis__benchmark_task", "n")
    )
    drawn = {
        benchmark_task: (drawn_at, frozen_at)
        for benchmark_task, drawn_at, frozen_at in RandomControlDraw.objects.filter(
            benchmark_task__benchmark=benchmark
        ).values_list("benchmark_task", "drawn_at", "frozen_at")
    }
    run_ids = [bt.run_id for bt in benchmark_tasks if bt.run_id]
    first_forecasts = dict(
        ModelCall.objects.filter(run_id__in=run_ids, purpose__startswith="stage1")
        .values("run_id")
        .annotate(first=Min("created_at"))
        .values_list("run_id", "first")
    )
    repeats = {
        row["run_id"]: row
        for row in RunWorkItem.objects.filter(run_id__in=run_ids, step=RunWorkItem.Step.REPEAT)
        .values("run_id")
        .annotate(total=Count("pk"), finished=Count("pk", filter=~Q(state__in=UNFINISHED)))
    }
    rows = []
    for bt in benchmark_tasks:
        count = counts.get(bt.pk, {})
        repeat = repeats.get(bt.run_id, {})
        rows.append(
            TaskProgress(
                position=bt.position,
                task_key=bt.task.key,
                question=bt.task.question,
                run=bt.run,
                hypotheses=count.get("total", 0),
                discarded=count.get("discarded", 0),
                kept=count.get("kept", 0),
                selected=count.get("selected", 0),
                scores=scores.get(bt.pk, 0),
                control_drawn_at=drawn.get(bt.pk, (None, None))[0],
                pool_frozen_at=drawn.get(bt.pk, (None, None))[1],
                first_forecast_at=first_forecasts.get(bt.run_id) if bt.run_id is not None else None,
                repeat_requests=repeat.get("total", 0),
                repeat_finished=repeat.get("finished", 0),
            )
        )
    runs = [row.run for row in rows if row.run is not None]
    by_status: defaultdict[str, int] = defaultdict(int)
    for run in runs:
        by_status[run.get_status_display()] += 1
    return SetProgress(
        tasks=rows,
        runs_by_status=dict(sorted(by_status.items())),
        hypotheses=sum(row.hypotheses for row in rows),
        selected=sum(row.selected for row in rows),
        scores=sum(row.scores for row in rows),
        finished_runs=sum(run.is_finished for run in runs),
        runs=len(runs),
    )


# The hypothesis rows ---------------------------------------------------------------------------------------


def hypothesis_outcome(scores: dict, judge_company: dict, generator_company: str) -> tuple[JudgeOutcome | None, str]:
    """The outcome (docs/protocol.md#judge-scores-and-outcomes) from one hypothesis's scores by judge name, and a note
    when the rule cannot apply."""
    try:
        return analysis.judge_outcome_for(scores, judge_company, generator_company), ""
    except ValueError as exc:
        return None, str(exc)


def benchmark_rows(benchmark: BenchmarkSet, judges: list[Judge] | None = None) -> list[HypothesisRow]:
    """Every hypothesis of the set in task order, then pool order, with scores and outcome. A fixed number of
    queries whatever the set's size."""
    judges = benchmark_judges(benchmark) if judges is None else judges
    judge_name = {judge.pk: judge.name for judge in judges}
    judge_company = {judge.name: judge.company for judge in judges}
    scores_of: defaultdict[int, dict[str, int]] = defaultdict(dict)  # hypothesis → judge name → score
    for hypothesis_id, judge_id, score in JudgeScore.objects.filter(judge__benchmark=benchmark).values_list(
        "hypothesis_id", "judge_id", "score"
    ):
        scores_of[hypothesis_id][judge_name[judge_id]] = score
    answers = {
        benchmark_task_id: answers
        for benchmark_task_id, answers in RandomControlDraw.objects.filter(
            benchmark_task__benchmark=benchmark
        ).values_list("benchmark_task_id", "answers")
    }
    forecasts = Forecast.objects.order_by("stage", "pk").only(
        "hypothesis_id", "model_key", "vote", "round", "p_experimental_support", "recommend_for_testing", "single_vote"
    )
    records = (
        BenchmarkHypothesis.objects.filter(benchmark=benchmark)
        .select_related("benchmark_task__task", "benchmark_task__run", "hypothesis")
        .prefetch_related(Prefetch("hypothesis__forecasts", queryset=forecasts))
        .order_by("benchmark_task__position", "benchmark_task__pk", "position", "pk")
    )
    rows, outcomes = [], {}
    for record in records:
        benchmark_task, task, screened = record.benchmark_task, record.benchmark_task.task, record.hypothesis
        if screened is not None:
            run = benchmark_task.run
            rounds: dict[int, dict] = {1: {}, 2: {}}
            # Imported numbers and answers under other instructions join the run's own, which come first.
            probabilities = dict(record.probabilities)
            # The run's vote answers its question; the optional modes' answers stand beside it
            # (docs/analysis.md#instruction-comparison).
            question = run.forecast_question if run is not None else Run.Question.SHORT.value
            instructions: dict[str, dict] = {question: rounds[1]}
            for forecast in screened.forecasts.all():
                rounds[forecast.round][forecast.model_key] = forecast.vote
                if forecast.round != 1:
                    continue
                if forecast.p_experimental_support is not None:
                    probabilities[forecast.model_key] = forecast.p_experimental_support
                for mode, answer in (
                    (Run.Question.DETAILED.value, forecast.recommend_for_testing),
                    (Run.Question.SINGLE.value, forecast.single_vote),
                ):
                    if mode != question and answer is not None:
                        instructions.setdefault(mode, {})[forecast.model_key] = answer
            fields: dict[str, Any] = {
                "source": "run",
                "generator": screened.author_name,
                "generator_company": screened.author_company,
                "statement": screened.statement,
                "mechanism": screened.mechanism,
                "prediction": screened.prediction,
                "first_stage": FIRST_STAGE.get(screened.stage1),
                "selected": screened.selected if run is not None and run.status in SELECTION_DECIDED else None,
                "forecasts": rounds[1],
                "probabilities": probabilities,
                "confirmed": None,
                "repeat_forecasts": rounds[2],
                "instruction_forecasts": _merged_answers(record.instruction_forecasts, instructions),
                "direction": record.direction,
            }
        else:
            fields = {
                "source": "import",
                "generator": record.generator,
                "generator_company": record.generator_company,
                "statement": record.statement,
                "mechanism": record.mechanism,
                "prediction": record.prediction,
                "first_stage": record.first_stage,
                "selected": record.selected,
                "forecasts": dict(record.forecasts),
                "probabilities": dict(record.probabilities),
                "confirmed": record.confirmed,
                "repeat_forecasts": dict(record.repeat_forecasts),
                "instruction_forecasts": {name: dict(given) for name, given in record.instruction_forecasts.items()},
                "direction": record.direction,
                "method": record.method or ONE_REQUEST,
                "generation_round": record.generation_round or 1,
            }
        given = scores_of.get(record.pk, {})
        scores = {judge.name: given.get(judge.name) for judge in judges}
        # Many hypotheses share their scores and generator company: each combination is decided once.
        decided_by = (tuple(scores.values()), fields["generator_company"])
        if decided_by not in outcomes:
            outcomes[decided_by] = hypothesis_outcome(scores, judge_company, fields["generator_company"])
        outcome, note = outcomes[decided_by]
        rows.append(
            HypothesisRow(
                pk=record.pk,
                task_key=task.key,
                task_position=benchmark_task.position,
                question=task.question,
                reference_statement=task.reference_statement,
                key=record.key,
                position=record.position,
                random_answer=answers.get(benchmark_task.pk, {}).get(record.key),
                scores=scores,
                outcome=outcome,
                outcome_note=note,
                **fields,
            )
        )
    return rows


def _merged_answers(imported: dict, own: dict) -> dict:
    """{instruction: {model: answer}}: a run's own answers, and imported ones where the run has none."""
    merged = {name: {**imported.get(name, {}), **own.get(name, {})} for name in dict.fromkeys([*imported, *own])}
    return {name: answers for name, answers in merged.items() if answers}


def generators_of(rows: list[HypothesisRow]) -> list[tuple[str, str]]:
    """(generator, company) pairs, by name."""
    return sorted({(row.generator, row.generator_company) for row in rows})


# Statistics (computed by reviewapp.benchmarks.statistics, cached per data) ----------------------------------


def benchmark_data_version(benchmark_id: int) -> str:
    """The version of everything the set's statistics read, in one query of one row: the set's data version
    (reviewapp.benchmarks.services.versions) and the last change of any of its runs, which the screening pipeline
    stamps on the run (Run.updated_at) with every result it records. Read it before the data it versions."""
    version, runs_changed = (
        BenchmarkSet.objects.filter(pk=benchmark_id)
        .annotate(runs_changed=Max("benchmark_tasks__run__updated_at"))
        .values_list("data_version", "runs_changed")
        .get()
    )
    return version if runs_changed is None else f"{version}-{runs_changed:%Y%m%d%H%M%S%f}"


def benchmark_forecaster_companies(benchmark: BenchmarkSet) -> dict[str, str]:
    """Each forecasting model's company: the imported forecasters, and the forecasters of the set's runs as their
    rosters recorded them (the model id a forecast is reported under)."""
    companies: dict[str, str] = {}
    for roster in Run.objects.filter(benchmark_task__benchmark=benchmark).values_list("roster", flat=True):
        for role in ("stage1", "stage2"):
            for endpoint in (roster or {}).get("roles", {}).get(role, []):
                if endpoint.get("model_id") and endpoint.get("company"):
                    companies.setdefault(endpoint["model_id"], endpoint["company"])
    companies.update(Forecaster.objects.filter(benchmark=benchmark).values_list("name", "company"))
    return companies


def benchmark_forecast_rounds(rows: list[HypothesisRow]) -> dict[str, dict[tuple[int, str], bool | None]]:
    """The forecast rounds of the set's hypotheses, in the order they were made: {round: {(hypothesis pk, model):
    answer}} (docs/analysis.md#re-run-agreement). The first round is what every row's forecasts hold; a second,
    "repeat", exists where the set's runs asked the same requests again (their round 2) or a re-run was imported."""
    first = {(row.pk, model): answer for row in rows for model, answer in row.forecasts.items()}
    repeat = {(row.pk, model): answer for row in rows for model, answer in row.repeat_forecasts.items()}
    return {"first": first, "repeat": repeat} if repeat else {"first": first}


def benchmark_study_inputs(benchmark: BenchmarkSet, rows: list[HypothesisRow], judges: list[Judge]) -> StudyInputs:
    """Everything the appendices' analyses read besides the rows, in a fixed number of queries."""
    tasks = tuple(
        TaskInputs(key=key, hint_score=hint, key_elements=tuple(elements or ()))
        for key, hint, elements in BenchmarkTask.objects.filter(benchmark=benchmark)
        .order_by("position", "pk")
        .values_list("task__key", "hint_score", "key_elements")
    )
    log = TaskSelectionLog.objects.filter(benchmark=benchmark).first()
    selection_log = None
    if log is not None:
        selection_log = SelectionLogInputs(
            query=log.query,
            salt=log.salt,
            found=log.found,
            searched_on=log.searched_on.isoformat() if log.searched_on else None,
            records=tuple(
                SelectionRecordInput(*values)
                for values in log.records.order_by("status", "position", "pmid").values_list(
                    "pmid", "status", "reason", "position", "final", "task_key"
                )
            ),
        )
    judge_name = {judge.pk: judge.name for judge in judges}
    quality: defaultdict[int, dict] = defaultdict(dict)
    for hypothesis_id, judge_id, *values in QualityScore.objects.filter(judge__benchmark=benchmark).values_list(
        "hypothesis_id", "judge_id", *analysis.DIMENSIONS
    ):
        quality[hypothesis_id][judge_name[judge_id]] = dict(zip(analysis.DIMENSIONS, values, strict=True))
    return StudyInputs(
        forecaster_companies=benchmark_forecaster_companies(benchmark),
        judge_companies={judge.name: judge.company for judge in judges},
        tasks=tasks,
        selection_log=selection_log,
        quality_scores=dict(quality),
        forecast_rounds=benchmark_forecast_rounds(rows),
        excluded_sets=tuple(
            ExcludedSetInput(task, generator, method or ONE_REQUEST, round_, reason, note)
            for task, generator, method, round_, reason, note in ExcludedGenerationSet.objects.filter(
                benchmark_task__benchmark=benchmark
            )
            .order_by("benchmark_task__position", "generator", "generation_round", "method", "pk")
            .values_list("benchmark_task__task__key", "generator", "method", "generation_round", "reason", "note")
        ),
    )


def benchmark_statistics(
    benchmark: BenchmarkSet,
    *,
    resamples: int = PAGE_RESAMPLES,
    seeds: dict[str, int] | None = None,
    judges: list[Judge] | None = None,
    rows: list[HypothesisRow] | None = None,
    data_version: str | None = None,
) -> BenchmarkStatistics:
    """The statistics of the set (docs/protocol.md#statistics and docs/analysis.md#the-appendices-analyses), computed
    once per data version and seeds and kept in the cache: a cached result costs one read of the version.
    ``seeds`` overrides the seed of a family of analyses (docs/analysis.md#seeds).

    Pass the judges and rows already read to save reading them again, with the data version read before them."""
    if rows is not None and data_version is None:
        raise TypeError("Rows read by the caller need the data version read before them.")
    data_version = benchmark_data_version(benchmark.pk) if data_version is None else data_version
    seeds = {**analysis.SEEDS, **(seeds or {})}
    key = "benchmark-statistics:" + statistics_key(benchmark.pk, benchmark.design, data_version, resamples, seeds)
    cached = cache.get(key)
    if cached is not None:
        return cached
    judges = benchmark_judges(benchmark) if judges is None else judges
    rows = benchmark_rows(benchmark, judges) if rows is None else rows
    statistics = compute_statistics(
        benchmark.pk,
        rows,
        judges,
        resamples=resamples,
        seed=seeds["selection"],
        seeds=seeds,
        data_version=data_version,
        inputs=benchmark_study_inputs(benchmark, rows, judges),
        design=benchmark.design,
    )
    cache.set(key, statistics, STATISTICS_CACHE_SECONDS)
    return statistics


# The forecast matrix ---------------------------------------------------------------------------------------------


def benchmark_forecast_matrix(benchmark: BenchmarkSet, *, round_: int = 1) -> list[dict]:
    """Every hypothesis of the set in task order, then pool order, with each model's answer and the model call that
    gave it: [{"hypothesis", "generator", "task", "forecasts": {model: true | false | null}, "requests": {model:
    call id}}]. Round 2: the same requests asked again (docs/protocol.md#repeating-the-forecasts). An imported
    hypothesis has its imported forecasts (round 1) and no requests."""
    forecasts = (
        Forecast.objects.filter(round=round_)
        .order_by("stage", "pk")
        .only("hypothesis_id", "model_key", "vote", "model_call_id")
    )
    records = (
        BenchmarkHypothesis.objects.filter(benchmark=benchmark)
        .select_related("benchmark_task__task", "hypothesis")
        .prefetch_related(Prefetch("hypothesis__forecasts", queryset=forecasts))
        .order_by("benchmark_task__position", "benchmark_task__pk", "position", "pk")
    )
    matrix = []
    for record in records:
        screened = record.hypothesis
        if screened is not None:
            asked = list(screened.forecasts.all())
            votes = {forecast.model_key: forecast.vote for forecast in asked}
            requests = {forecast.model_key: forecast.model_call_id for forecast in asked}
            generator = screened.author_name
        else:
            votes = dict(record.forecasts) if round_ == 1 else {}
            requests, generator = {}, record.generator
        matrix.append(
            {
                "hypothesis": record.key,
                "generator": generator,
                "task": record.benchmark_task.task.key,
                "forecasts": votes,
                "requests": requests,
            }
        )
    return matrix


def benchmark_task_group(benchmark_id: int) -> TaskGroup | None:
    """A set's research tasks in their order, with their sources (literature.hooks.TaskGroup)."""
    benchmark = BenchmarkSet.objects.filter(pk=benchmark_id).first()
    if benchmark is None:
        return None
    rows = BenchmarkTask.objects.filter(benchmark=benchmark).order_by("position")
    return TaskGroup(benchmark.name, list(rows.values_list("task__key", "task__sources")))


def benchmark_choices() -> list[tuple[int, str]]:
    return list(BenchmarkSet.objects.order_by("name").values_list("pk", "name"))
