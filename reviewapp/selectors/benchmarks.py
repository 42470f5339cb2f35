"""Reads of benchmark sets for coordinators and analysts: progress, the hypothesis × judge table with outcomes,
the statistics of SPEC §7 and the human review analysis of a cohort.

Every hypothesis of a set, whether a screening run produced it or it was imported, is read as one HypothesisRow,
so that the judge table, Table S, the published bundle and the statistics all rest on the same rows. Outcomes are
computed from the stored scores each time (reviewapp.analysis.judge_outcome_for), never stored.
"""

import dataclasses
import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass

from django.core.cache import cache
from django.db.models import Count, Min, OuterRef, Prefetch, Q, Subquery
from django.db.models.functions import Coalesce

from reviewapp import analysis
from reviewapp.analysis import JudgeOutcome
from reviewapp.models import (
    BenchmarkHypothesis,
    BenchmarkImport,
    BenchmarkSet,
    BenchmarkTask,
    Cohort,
    Judge,
    JudgeScore,
    RandomControlDraw,
    Review,
)
from reviewapp.protocol import CRITERION_FIELDS
from screening.models import Forecast, Hypothesis, ModelCall, Run
from screening.prompts import hypothesis_text

# Run statuses in which a run's selection is decided (it is made when stage 2 ends).
SELECTION_DECIDED = (Run.Status.CHECKING_NOVELTY, Run.Status.COMPLETED, Run.Status.FAILED_AT_NOVELTY)
FIRST_STAGE = {Hypothesis.Stage1.KEPT: True, Hypothesis.Stage1.DISCARDED: False}
# The statistics page resamples tasks this many times (seed 001 uses 10,000); the result is cached per data.
PAGE_RESAMPLES = analysis.DEFAULT_RESAMPLES
STATISTICS_CACHE_SECONDS = 24 * 3600
ALL_GENERATORS = "All generators"


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


def benchmark_get(*, benchmark_id: int) -> BenchmarkSet:
    """One set with its counts; raises BenchmarkSet.DoesNotExist."""
    return benchmark_list().select_related("roster").get(pk=benchmark_id)


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
    control_drawn_at: object  # datetime or None
    first_forecast_at: object  # the first stage-1 request of the run, or None

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
        """The random control was stored before the first forecast request (None until both exist)."""
        if self.control_drawn_at is None or self.first_forecast_at is None:
            return None
        return self.control_drawn_at < self.first_forecast_at


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
    drawn = dict(
        RandomControlDraw.objects.filter(benchmark_task__benchmark=benchmark).values_list("benchmark_task", "drawn_at")
    )
    run_ids = [bt.run_id for bt in benchmark_tasks if bt.run_id]
    first_forecasts = dict(
        ModelCall.objects.filter(run_id__in=run_ids, purpose__startswith="stage1")
        .values("run_id")
        .annotate(first=Min("created_at"))
        .values_list("run_id", "first")
    )
    rows = []
    for bt in benchmark_tasks:
        count = counts.get(bt.pk, {})
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
                control_drawn_at=drawn.get(bt.pk),
                first_forecast_at=first_forecasts.get(bt.run_id),
            )
        )
    runs = [row.run for row in rows if row.run is not None]
    by_status = defaultdict(int)
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


@dataclass(frozen=True)
class HypothesisRow:
    """One hypothesis of a set with everything the analyses need, wherever it came from."""

    pk: int
    task_key: str
    task_position: int
    question: str
    reference_statement: str
    key: str
    position: int
    source: str  # "run" or "import"
    generator: str
    generator_company: str
    statement: str
    mechanism: str
    prediction: str
    first_stage: bool | None
    selected: bool | None  # None: no selection was made (the run stopped before it, or is still working)
    forecasts: dict  # model → True, False or None
    random_answer: bool | None
    scores: dict  # judge name → score or None, in the judges' listed order
    outcome: JudgeOutcome | None  # None when the outcome rule does not apply (see outcome_note)
    outcome_note: str

    @property
    def text(self) -> str:
        """The full text, as the forecasting models and the judges read it."""
        return hypothesis_text(self.statement, self.mechanism, self.prediction)

    @property
    def status(self) -> str:
        return self.outcome.status if self.outcome is not None else "not_judged"

    @property
    def primary(self) -> bool | None:
        return self.outcome.primary if self.outcome is not None else None

    @property
    def strict(self) -> bool | None:
        return self.outcome.strict if self.outcome is not None else None

    @property
    def borderline(self) -> bool | None:
        return self.outcome.borderline if self.outcome is not None else None

    @property
    def excluded_judges(self) -> tuple[str, ...]:
        return self.outcome.excluded_judges if self.outcome is not None else ()


def hypothesis_outcome(scores: dict, judge_company: dict, generator_company: str) -> tuple[JudgeOutcome | None, str]:
    """The outcome of SPEC §6 from one hypothesis's scores by judge name, and a note when the rule cannot apply."""
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
    scores_of = defaultdict(dict)
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
    forecasts = Forecast.objects.order_by("stage", "pk").only("hypothesis_id", "model_key", "vote")
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
            fields = {
                "source": "run",
                "generator": screened.author_name,
                "generator_company": screened.author_company,
                "statement": screened.statement,
                "mechanism": screened.mechanism,
                "prediction": screened.prediction,
                "first_stage": FIRST_STAGE.get(screened.stage1),
                "selected": screened.selected if run is not None and run.status in SELECTION_DECIDED else None,
                "forecasts": {forecast.model_key: forecast.vote for forecast in screened.forecasts.all()},
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


def generators_of(rows: list[HypothesisRow]) -> list[tuple[str, str]]:
    """(generator, company) pairs, by name."""
    return sorted({(row.generator, row.generator_company) for row in rows})


# Statistics ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SingleModelList:
    """One forecasting model's "yes" list cut at random to the group's list length (seed 001 Ж)."""

    model: str
    positives: int
    positive_matches: int
    group_length: int
    group_matches: int
    control: analysis.RandomControl | None  # None when the model said yes to fewer hypotheses than the group chose


@dataclass(frozen=True)
class GeneratorStatistics:
    generator: str
    company: str
    hypotheses: int
    no_selection: int  # hypotheses whose run stopped before its selection (technical gaps, never negatives)
    primary: analysis.SelectionSummary | None
    strict: analysis.SelectionSummary | None
    random_list: analysis.RandomControl | None  # a uniformly random list of the selection's length (М.3, Н.6)
    drawn_control: analysis.SelectionSummary | None  # the stored random yes/no answers as a selection (Н.3)
    single_model_lists: tuple[SingleModelList, ...]


@dataclass(frozen=True)
class BenchmarkStatistics:
    benchmark_id: int
    fingerprint: str
    resamples: int
    seed: int
    hypotheses: int
    judged: int
    rule_not_applicable: int  # hypotheses whose judges do not fit the outcome rule (see the judge table)
    judges: tuple[str, ...]
    generators: tuple[GeneratorStatistics, ...]  # each generator, then all generators together
    votes_primary: analysis.OtherCompanyVotes | None
    votes_strict: analysis.OtherCompanyVotes | None
    agreement: analysis.JudgeAgreement | None


def rows_fingerprint(rows: list[HypothesisRow]) -> str:
    """sha256 of what the statistics depend on, so a cached result is used only for the same data."""
    digest = hashlib.sha256()
    for row in rows:
        record = [
            row.task_key,
            row.key,
            row.generator,
            row.generator_company,
            row.selected,
            row.first_stage,
            row.random_answer,
            sorted(row.forecasts.items()),
            list(row.scores.items()),
        ]
        digest.update(json.dumps(record, ensure_ascii=False).encode())
    return digest.hexdigest()


def _summary(rows: list[tuple], resamples: int, seed: int) -> analysis.SelectionSummary | None:
    return analysis.selection_summary(rows, resamples, seed) if rows else None


def _single_model_lists(decided: list[HypothesisRow]) -> tuple[SingleModelList, ...]:
    """Seed 001 Ж: each model's judged "yes" list, against a random cut of it to the group's length."""
    judged = [row for row in decided if row.primary is not None]
    group = [row for row in judged if row.selected]
    if not group:
        return ()
    models = sorted({model for row in judged for model in row.forecasts})
    lists = []
    for model in models:
        positives = [row.primary for row in judged if row.forecasts.get(model) is True]
        control = None
        if len(positives) >= len(group):
            control = analysis.random_control(len(positives), sum(positives), len(group))
        lists.append(
            SingleModelList(
                model=model,
                positives=len(positives),
                positive_matches=sum(positives),
                group_length=len(group),
                group_matches=sum(row.primary for row in group),
                control=control,
            )
        )
    return tuple(lists)


def _generator_statistics(
    name: str, company: str, rows: list[HypothesisRow], resamples: int, seed: int
) -> GeneratorStatistics:
    decided = [row for row in rows if row.selected is not None]
    primary = _summary([(r.task_key, r.selected, r.primary) for r in decided], resamples, seed)
    strict = _summary([(r.task_key, r.selected, r.strict) for r in decided], resamples, seed)
    random_list = None
    if primary is not None and primary.hypotheses:
        random_list = analysis.random_control(primary.hypotheses, primary.matches, primary.selected)
    drawn = [(r.task_key, r.random_answer, r.primary) for r in rows if r.random_answer is not None]
    return GeneratorStatistics(
        generator=name,
        company=company,
        hypotheses=len(rows),
        no_selection=len(rows) - len(decided),
        primary=primary,
        strict=strict,
        random_list=random_list,
        drawn_control=_summary(drawn, resamples, seed),
        single_model_lists=_single_model_lists(decided),
    )


def benchmark_statistics(
    benchmark: BenchmarkSet,
    *,
    resamples: int = PAGE_RESAMPLES,
    seed: int = analysis.DEFAULT_SEED,
    judges: list[Judge] | None = None,
    rows: list[HypothesisRow] | None = None,
) -> BenchmarkStatistics:
    """The statistics of the set (SPEC §7), computed once per distinct data and kept in the cache.

    Pass the judges and rows already read to save reading them again."""
    judges = benchmark_judges(benchmark) if judges is None else judges
    rows = benchmark_rows(benchmark, judges) if rows is None else rows
    fingerprint = rows_fingerprint(rows)
    key = f"benchmark-statistics:{benchmark.pk}:{fingerprint}:{resamples}:{seed}"
    cached = cache.get(key)
    if cached is not None:
        return cached
    statistics = compute_statistics(benchmark.pk, rows, judges, resamples=resamples, seed=seed, fingerprint=fingerprint)
    cache.set(key, statistics, STATISTICS_CACHE_SECONDS)
    return statistics


def compute_statistics(
    benchmark_id: int,
    rows: list[HypothesisRow],
    judges: list[Judge],
    *,
    resamples: int,
    seed: int,
    fingerprint: str = "",
) -> BenchmarkStatistics:
    by_generator = defaultdict(list)
    for row in rows:
        by_generator[(row.generator, row.generator_company)].append(row)
    generators = [
        _generator_statistics(name, company, by_generator[(name, company)], resamples, seed)
        for name, company in sorted(by_generator)
    ]
    if len(by_generator) > 1:
        generators.append(_generator_statistics(ALL_GENERATORS, "", rows, resamples, seed))
    judge_company = {judge.name: judge.company for judge in judges}
    # Other-company votes exist only where the outcome rule applies (three deciding judges).
    applicable = [
        {"generator_company": row.generator_company, "scores": row.scores} for row in rows if row.outcome is not None
    ]
    votes = {threshold: None for threshold in (3, 4)}
    if applicable and judge_company:
        votes = {t: analysis.other_company_votes(applicable, judge_company, threshold=t) for t in votes}
    agreement = None
    if len(judges) >= 2 and rows:
        agreement = analysis.judge_agreement(
            [{"task": row.task_key, "scores": row.scores} for row in rows],
            [judge.name for judge in judges],
            resamples=resamples,
            seed=seed,
        )
    return BenchmarkStatistics(
        benchmark_id=benchmark_id,
        fingerprint=fingerprint,
        resamples=resamples,
        seed=seed,
        hypotheses=len(rows),
        judged=sum(row.primary is not None for row in rows),
        rule_not_applicable=sum(row.outcome is None for row in rows),
        judges=tuple(judge.name for judge in judges),
        generators=tuple(generators),
        votes_primary=votes[3],
        votes_strict=votes[4],
        agreement=agreement,
    )


def statistics_as_dict(statistics: BenchmarkStatistics) -> dict:
    """JSON-ready statistics (None where a statistic is undefined)."""
    return dataclasses.asdict(statistics)


# Human review analysis of a cohort ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CohortReviewAnalysis:
    cohort: Cohort
    submitted_reviews: int
    revisions: analysis.RevisionOutcomes
    revision_pairs: int  # parent → child pairs with both in the cohort
    agreement: tuple[analysis.ReviewerAgreement, ...]  # overall, then the six criteria, then the recommendation


REVIEW_AGREEMENT_FIELDS = ("overall", *CRITERION_FIELDS, "recommendation", "flaw_verdict")


def cohort_review_analysis(cohort: Cohort) -> CohortReviewAnalysis:
    """Revision outcomes of parent → child pairs (mean overall score of each proposal's submitted reviews in the
    cohort) and reviewer agreement per criterion, from the cohort's submitted reviews."""
    reviews = list(
        Review.objects.filter(assignment__cohort=cohort, status=Review.Status.SUBMITTED).values(
            "assignment__proposal_id", *REVIEW_AGREEMENT_FIELDS
        )
    )
    overall = defaultdict(list)
    for review in reviews:
        review["proposal"] = review.pop("assignment__proposal_id")
        overall[review["proposal"]].append(review["overall"])
    members = set(cohort.proposals.values_list("pk", flat=True))
    links = (
        cohort.proposals.model.parents.through.objects.filter(from_proposal__in=members, to_proposal__in=members)
        .values_list("to_proposal_id", "from_proposal_id", "from_proposal__author")
        .order_by("to_proposal_id", "from_proposal_id")
    )
    pairs = [
        (parent, child, author, overall.get(parent, []), overall.get(child, [])) for parent, child, author in links
    ]
    return CohortReviewAnalysis(
        cohort=cohort,
        submitted_reviews=len(reviews),
        revisions=analysis.revision_outcomes(pairs),
        revision_pairs=len(pairs),
        agreement=tuple(analysis.reviewer_agreement(reviews, field) for field in REVIEW_AGREEMENT_FIELDS),
    )
