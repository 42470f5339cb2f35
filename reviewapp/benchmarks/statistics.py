"""The statistics of a benchmark set (docs/protocol.md#statistics), computed from its hypothesis rows: pure
functions of the rows and the judges, no database reads (reviewapp.benchmarks.selectors reads and caches them)."""

import dataclasses
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from threadpoolctl import threadpool_limits

from reviewapp import analysis
from reviewapp.analysis import JudgeOutcome
from reviewapp.benchmarks.models import ONE_REQUEST, Judge
from reviewapp.benchmarks.study import StudyInputs, StudyStatistics, compute_study
from screening.prompts import hypothesis_text

ALL_GENERATORS = "All generators"
# Counts drawn to check the exact figures of each single-model list (docs/protocol.md#trimmed-positive-lists).
TRIM_REPEATS = 100_000


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
    forecasts: dict  # model → True, False or None (a run's first round; a model not asked is absent)
    random_answer: bool | None
    scores: dict  # judge name → score or None, in the judges' listed order
    outcome: JudgeOutcome | None  # None when the outcome rule does not apply (see outcome_note)
    outcome_note: str
    # model → p_experimental_support 0–1 (detailed instruction; first round)
    probabilities: dict = field(default_factory=dict)
    confirmed: bool | None = None  # a statement with a known result: confirmed (True) or refuted
    # The same requests asked again (a run's round 2, or imported): model → True, False or None; {} when never.
    repeat_forecasts: dict = field(default_factory=dict)
    # The forecasts under each instruction ("short", "detailed", "single"): instruction → model → True, False or None.
    instruction_forecasts: dict = field(default_factory=dict)
    direction: str = ""  # a statement's favourable-direction label: "favourable", "unfavourable" or "" (unlabelled)
    # How and in which round the hypothesis was generated (docs/analysis.md#generation-methods).
    method: str = ONE_REQUEST
    generation_round: int = 1

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


@dataclass(frozen=True)
class SingleModelList:
    """One forecasting model's "yes" list cut at random to the group's list length
    (docs/protocol.md#trimmed-positive-lists): the exact figures and their check by draws."""

    model: str
    positives: int
    positive_matches: int
    group_length: int
    group_matches: int
    # The rest is None when the model said yes to fewer hypotheses than the group chose (no cut, nothing drawn).
    control: analysis.RandomControl | None  # the exact hypergeometric mean and central 95% range
    group_above_range: bool | None
    simulated_mean: float | None  # the check: TRIM_REPEATS counts drawn from the same distribution
    simulated_low: int | None
    simulated_high: int | None
    repeats: int | None
    seed: int | None


@dataclass(frozen=True)
class GeneratorStatistics:
    generator: str
    company: str
    hypotheses: int
    no_selection: int  # hypotheses whose run stopped before its selection (technical gaps, never negatives)
    primary: analysis.SelectionSummary | None
    strict: analysis.SelectionSummary | None
    random_list: analysis.RandomControl | None  # a uniformly random list of the selection's length
    drawn_control: analysis.SelectionSummary | None  # the stored random yes/no answers as a selection
    single_model_lists: tuple[SingleModelList, ...]
    # Forecasting models not asked about every judged hypothesis of the generator (in the pooled design, stage 2 is
    # asked only about what stage 1 kept): they have no "yes" list of their own, and none is computed for them.
    models_without_full_list: tuple[str, ...]


@dataclass(frozen=True)
class BenchmarkStatistics:
    benchmark_id: int
    design: str  # the set's design: "pooled" or "seed-001" (docs/protocol.md#benchmark-designs)
    data_version: str  # the version of the set's data computed from (reviewapp.benchmarks.selectors)
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
    seeds: dict[str, int] = field(default_factory=dict)  # the seed of each family of analyses (docs/analysis.md#seeds)
    study: StudyStatistics | None = None  # the appendices' analyses (reviewapp.benchmarks.study)


def _summary(rows: list[tuple], resamples: int, seed: int) -> analysis.SelectionSummary | None:
    return analysis.selection_summary(rows, resamples, seed) if rows else None


def _models_without_full_list(decided: list[HypothesisRow]) -> tuple[str, ...]:
    """Models that answered about some judged hypotheses but were not asked about all of them (a null answer counts
    as asked: a technical gap, not a missing question)."""
    judged = [row for row in decided if row.primary is not None]
    models = {model for row in judged for model in row.forecasts}
    return tuple(sorted(model for model in models if any(model not in row.forecasts for row in judged)))


def _single_model_lists(
    decided: list[HypothesisRow], partial: tuple[str, ...], seed: int
) -> tuple[SingleModelList, ...]:
    """Each model's judged "yes" list, against a random cut of it to the group's length; only for models asked
    about every judged hypothesis (docs/protocol.md#trimmed-positive-lists)."""
    judged = [row for row in decided if row.primary is not None]
    group = [row for row in judged if row.selected]
    if not group:
        return ()
    group_matches = sum(row.primary for row in group)
    models = sorted({model for row in judged for model in row.forecasts} - set(partial))
    lists = []
    for model in models:
        positives = [row.primary for row in judged if row.forecasts.get(model) is True]
        cut = None
        if len(positives) >= len(group):
            cut = analysis.trim_to_group_length(
                positives, len(group), group_matches=group_matches, repeats=TRIM_REPEATS, seed=seed
            )
        lists.append(
            SingleModelList(
                model=model,
                positives=len(positives),
                positive_matches=sum(positives),
                group_length=len(group),
                group_matches=group_matches,
                control=cut.exact if cut else None,
                group_above_range=cut.group_above_range if cut else None,
                simulated_mean=cut.simulated_mean if cut else None,
                simulated_low=cut.simulated_low if cut else None,
                simulated_high=cut.simulated_high if cut else None,
                repeats=cut.repeats if cut else None,
                seed=cut.seed if cut else None,
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
    partial = _models_without_full_list(decided)
    return GeneratorStatistics(
        generator=name,
        company=company,
        hypotheses=len(rows),
        no_selection=len(rows) - len(decided),
        primary=primary,
        strict=strict,
        random_list=random_list,
        drawn_control=_summary(drawn, resamples, seed),
        single_model_lists=_single_model_lists(decided, partial, seed),
        models_without_full_list=partial,
    )


def compute_statistics(
    benchmark_id: int,
    rows: list[HypothesisRow],
    judges: list[Judge],
    *,
    resamples: int,
    seed: int,
    data_version: str = "",
    inputs: StudyInputs | None = None,
    seeds: Mapping[str, int] | None = None,
    design: str = "pooled",
) -> BenchmarkStatistics:
    """Everything the statistics page shows. ``seed`` seeds the selection's intervals; ``seeds`` the other families
    (docs/analysis.md#seeds), the selection's included (it wins over ``seed``)."""
    # The page makes hundreds of small matrix products; one BLAS thread does them many times faster than several,
    # which start and synchronise for each product.
    with threadpool_limits(limits=1, user_api="blas"):
        return _compute_statistics(
            benchmark_id,
            rows,
            judges,
            resamples=resamples,
            data_version=data_version,
            inputs=inputs,
            seeds={**analysis.SEEDS, "selection": seed, **(seeds or {})},
            design=design,
        )


def main_generation(rows: list[HypothesisRow]) -> list[HypothesisRow]:
    """The hypotheses every analysis but the comparison of generation methods reads: the first round's one-request
    generation, or the whole first round where it has no one-request hypothesis
    (docs/analysis.md#generation-methods)."""
    first_round = [row for row in rows if row.generation_round == 1]
    one_request = [row for row in first_round if row.method == ONE_REQUEST]
    return one_request if one_request or not first_round else first_round


def _compute_statistics(
    benchmark_id, rows, judges, *, resamples, data_version, inputs, seeds, design
) -> BenchmarkStatistics:
    seed = seeds["selection"]
    every_generation, rows = rows, main_generation(rows)
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
        design=design,
        data_version=data_version,
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
        seeds=seeds,
        study=compute_study(
            rows,
            inputs or StudyInputs(judge_companies=judge_company),
            seeds=seeds,
            resamples=resamples,
            generation_rows=every_generation,
        ),
    )


def statistics_key(benchmark_id: int, design: str, data_version: str, resamples: int, seeds: Mapping[str, int]) -> str:
    """What identifies one computation of a set's statistics: the set, its design, the version of its data, the number
    of resamples and every family's seed. The statistics and the figures drawn from them are cached under it."""
    seed_key = ":".join(f"{name}={seeds[name]}" for name in sorted(seeds))
    return f"{benchmark_id}:{design}:{data_version}:{resamples}:{seed_key}"


def statistics_as_dict(statistics: BenchmarkStatistics) -> dict:
    """JSON-ready statistics (None where a statistic is undefined)."""
    return dataclasses.asdict(statistics)
