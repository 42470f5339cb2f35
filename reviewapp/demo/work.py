"""The demo's automated work, queued for the worker that `make run` starts: the AI review panel and pairwise
critique of the demo cohort, a benchmark set run and judged by the simulated models, one public Open Hypothesis run
and an inspiration audit of the demo cohort.

Everything here is started only when every model it asks is the simulated server (the demo never spends a real
provider's money) and only once: each piece is recognised by its name or question, so a second `make run` queues
nothing new. The work itself goes through the product's own services and the worker, as a coordinator's would.
"""

import hashlib
import itertools
import json
import logging
from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.db import transaction

from reviewapp import analysis
from reviewapp.analysis import DIMENSIONS
from reviewapp.benchmarks.models import BenchmarkHypothesis, BenchmarkSet, BenchmarkTask
from reviewapp.benchmarks.services.imports import benchmark_import_file
from reviewapp.benchmarks.services.judging import judging_start
from reviewapp.benchmarks.services.sets import (
    benchmark_create,
    benchmark_forecasts_repeat,
    benchmark_run,
    judge_add,
)
from reviewapp.core.errors import ServiceError
from reviewapp.demo.cohort import DEMO_COHORT_FILE, DEMO_COORDINATOR, DEMO_SEED
from reviewapp.demo.forecast_tables import demo_forecast_tables_import, demo_statements_set_create
from reviewapp.inspiration.models import InspirationAudit
from reviewapp.inspiration.services import audit_create
from reviewapp.models import BackgroundJob, Cohort
from reviewapp.panel.models import PANEL_ROLES
from reviewapp.panel.services.critique import critique_start
from reviewapp.panel.services.panel import panel_start_for_cohort
from screening.llm import roster_endpoint
from screening.llm.models import ModelEndpoint, Roster, RosterMember
from screening.models import Run
from screening.services.runs import run_create

logger = logging.getLogger(__name__)

DEMO_COMPARISONS_PER_PROPOSAL = 4

DEMO_BENCHMARK_NAME = "Demo: ageing benchmark (demonstration data)"
DEMO_BENCHMARK_DESCRIPTION = (
    "Four research tasks of the demo cohort with their reference statements, screened and judged by the simulated "
    "models for demonstrating the product. Not research data: no real model generated, forecast or judged anything."
)
DEMO_BENCHMARK_TASKS = 4
# One judge of each generator's company, so that three other-company judges decide every outcome.
DEMO_JUDGES = ("GPT-6 Astra", "Grok 4.5", "Claude Sonnet 5.5", "Gemini 4 Argon")

DEMO_RUN_QUESTION = (
    "Demonstration run (simulated models): does the ageing muscle stem-cell niche limit regeneration through "
    "declining NAD+ availability?"
)
DEMO_RUN_BACKGROUND = (
    "Written for demonstrating the product. Muscle stem cells lose regenerative capacity with age; NAD+ levels fall "
    "in aged tissue, and precursors such as nicotinamide riboside have been tested in aged mice."
)
# The demo's public run counts against the public limits like any other, under a documentation address (RFC 5737)
# that no visitor has, so it takes nothing from the person trying the demo.
DEMO_RUN_CLIENT_ADDRESS = "192.0.2.1"


@dataclass
class DemoWork:
    """What one load queued (empty on a second load): lines for the person who started it."""

    queued: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _all_simulated(endpoints) -> bool:
    endpoints = list(endpoints)
    return bool(endpoints) and all(endpoint is not None and endpoint.is_simulated for endpoint in endpoints)


def _default_roster() -> Roster | None:
    return Roster.objects.filter(is_default=True).first()


def _roster_simulated(roster: Roster | None) -> bool:
    if roster is None:
        return False
    return _all_simulated(member.endpoint for member in roster.members.select_related("endpoint"))


def demo_panel_start(cohort: Cohort, coordinator: User) -> list[BackgroundJob]:
    """Queue the AI panel and the pairwise critique of the demo cohort, once."""
    reference = roster_endpoint("reference_reviewer")  # asked too when the roster names one
    if not _all_simulated([*(roster_endpoint(role) for role in PANEL_ROLES), *filter(None, [reference])]):
        return []
    if BackgroundJob.objects.filter(kind__in=("ai_panel", "ai_critique"), params__cohort_id=cohort.pk).exists():
        return []
    return [
        panel_start_for_cohort(cohort=cohort, user=coordinator),
        critique_start(cohort=cohort, per_proposal=DEMO_COMPARISONS_PER_PROPOSAL, seed=DEMO_SEED, user=coordinator),
    ]


# The optional tables of the appendices' analyses that need no hypothesis, written for the demonstration (not research
# data): a hint score and the reference statement's key elements per task, and a task-selection log whose candidates
# are in the salted order the analysis checks.
DEMO_HINT_SCORES = {"DEMO-CH-1": 1.0, "DEMO-SEN-1": 0.0, "DEMO-NAD-1": 2.0, "DEMO-EPI-1": 1.0}
DEMO_KEY_ELEMENTS = {
    "DEMO-CH-1": ("IL-1 signalling from the aged marrow niche", "TET2-mutant stem cells", "IL-1 receptor blockade"),
    "DEMO-SEN-1": ("intermittent senolytic treatment", "adipose p16INK4a expression", "circulating SASP proteins"),
    "DEMO-NAD-1": ("NR supplementation", "muscle NAD+ metabolome", "CD38 inhibition", "mitochondrial respiration"),
    "DEMO-EPI-1": ("moderate caloric restriction", "pace-of-ageing methylation measure", "weight loss"),
}
DEMO_SELECTION_SALT = "open-hypothesis-demo"
DEMO_SELECTION_EXCLUSIONS = (("90000011", "review article"), ("90000012", "no experimental finding"))
DEMO_SELECTION_CANDIDATES = ("90000001", "90000002", "90000003", "90000004", "90000005", "90000006")


def _demo_selection_records(task_keys: list[str]) -> list[dict]:
    """The demonstration log's records: two exclusions, then the candidates in the salted order, the first ones the
    final tasks."""
    records = [{"pmid": pmid, "status": "excluded", "reason": reason} for pmid, reason in DEMO_SELECTION_EXCLUSIONS]
    order = analysis.candidate_order(DEMO_SELECTION_SALT, DEMO_SELECTION_CANDIDATES)
    for position, pmid in enumerate(order, 1):
        final = position <= len(task_keys)
        records.append(
            {
                "pmid": pmid,
                "status": "candidate",
                "position": position,
                "final": final,
                **({"task": task_keys[position - 1]} if final else {}),
            }
        )
    return records


def _demo_benchmark_file(roster: Roster) -> bytes:
    """The set's tasks: the first research tasks of the demo cohort's file, exactly as written there (so the import
    reuses the cohort's research tasks), with the analyses' optional tables that need no hypothesis and the
    forecasting models' companies (from the roster)."""
    tasks = json.loads(DEMO_COHORT_FILE.read_text(encoding="utf-8"))["tasks"][:DEMO_BENCHMARK_TASKS]
    keys = [task["key"] for task in tasks]
    forecasters = {
        member.endpoint.model_id: member.endpoint.company
        for member in roster.members.select_related("endpoint").filter(role__in=("stage1", "stage2"))
    }
    content = {
        "tasks": tasks,
        "hints": [{"task": key, "hint_score": DEMO_HINT_SCORES[key]} for key in keys if key in DEMO_HINT_SCORES],
        "key_elements": [
            {"task": key, "element": element} for key in keys for element in DEMO_KEY_ELEMENTS.get(key, ())
        ],
        "forecasters": [{"model": model, "company": company} for model, company in sorted(forecasters.items())],
        "selection_log": [
            {
                "query": "Demonstration query (not a real search): ageing[tiab] AND mouse[tiab]",
                "salt": DEMO_SELECTION_SALT,
                "found": len(DEMO_SELECTION_EXCLUSIONS) + len(DEMO_SELECTION_CANDIDATES),
            }
        ],
        "selection_records": _demo_selection_records(keys),
    }
    return json.dumps(content, ensure_ascii=False, sort_keys=True).encode()


def demo_benchmark_start(coordinator: User) -> BenchmarkSet | None:
    """Create the demo benchmark set (its tasks imported, four model judges) and run it; its judging starts when
    every task's hypotheses are pooled (`demo_benchmark_pooled`)."""
    roster = _default_roster()
    judges = [ModelEndpoint.objects.filter(display_name=name).first() for name in DEMO_JUDGES]
    if not _roster_simulated(roster) or not _all_simulated(judges):
        return None
    if BenchmarkSet.objects.filter(name=DEMO_BENCHMARK_NAME).exists():
        return None
    with transaction.atomic():
        benchmark = benchmark_create(
            name=DEMO_BENCHMARK_NAME,
            description=DEMO_BENCHMARK_DESCRIPTION,
            roster=roster,
            seed=DEMO_SEED,
            # The benchmark's own design: every forecaster on every hypothesis, so the analyses that need the full
            # forecast matrix (majority and unanimity, every voting rule, the best single model) are filled too.
            design=BenchmarkSet.Design.SEED_001,
            user=coordinator,
        )
        benchmark_import_file(
            benchmark=benchmark,
            filename="demo-benchmark-tasks.json",
            content=_demo_benchmark_file(roster),
            user=coordinator,
        )
        for endpoint in judges:
            judge_add(benchmark=benchmark, endpoint=endpoint)
        benchmark_run(benchmark=benchmark)
        tasks = json.loads(DEMO_COHORT_FILE.read_text(encoding="utf-8"))["tasks"][:DEMO_BENCHMARK_TASKS]
        demo_statements_set_create(tasks=tasks, roster=roster, user=coordinator)
    return benchmark


# Demonstration generations besides the runs' own (not research data): for each generator and task, hypotheses of two
# more generation methods and a re-generation of the one request, judged with the runs' hypotheses by the simulated
# judges; one set listed as left out for a cut reply (docs/analysis.md#generation-methods).
DEMO_GENERATIONS = (("multi-step", 1), ("Omega Point", 1), ("", 2))
DEMO_GENERATION_COUNT = 5
DEMO_GENERATION_ANGLES = (
    "through the reference finding's own factor and outcome",
    "through an inflammatory signal of the aged tissue",
    "through a metabolic shift of the aged stem cells",
    "through the extracellular matrix of the niche",
    "through a circulating factor of young blood",
)


def _demo_number(*parts: str, low: int, high: int) -> int:
    """A demonstration value from low to high, fixed by its parts (the same on every load)."""
    digest = hashlib.sha256("\u241f".join(parts).encode()).digest()
    return low + digest[0] % (high - low + 1)


def _demo_generations_file(benchmark: BenchmarkSet) -> bytes:
    """The demonstration tables that need the runs' hypotheses: the other generation methods and the re-generation,
    the set left out, and originality, feasibility and clarity scores of the runs' hypotheses by the set's judges."""
    pooled = list(
        BenchmarkHypothesis.objects.filter(benchmark=benchmark, hypothesis__isnull=False)
        .select_related("benchmark_task__task", "hypothesis")
        .order_by("benchmark_task__position", "position")
    )
    generators = sorted({(h.hypothesis.author_name, h.hypothesis.author_company) for h in pooled})
    tasks = list(benchmark.benchmark_tasks.select_related("task").order_by("position"))
    hypotheses = []
    for benchmark_task in tasks:
        task = benchmark_task.task
        for (generator, company), (method, round_) in itertools.product(generators, DEMO_GENERATIONS):
            label = f"{method or 'one request'}, round {round_}"
            for number, angle in enumerate(DEMO_GENERATION_ANGLES[:DEMO_GENERATION_COUNT], 1):
                hypotheses.append(
                    {
                        "task": task.key,
                        "id": f"{generator} {label} {number}",
                        "generator": generator,
                        "generator_company": company,
                        "method": method,
                        "generation_round": round_,
                        "statement": f"Demonstration hypothesis ({label}, simulated, not research data): the "
                        f"finding of “{task.question}” arises {angle}.",
                    }
                )
    judges = list(benchmark.judges.order_by("position"))
    quality = [
        {
            "task": h.benchmark_task.task.key,
            "hypothesis": h.key,
            "judge": judge.name,
            **{d: _demo_number(judge.name, h.benchmark_task.task.key, h.key, d, low=3, high=9) for d in DIMENSIONS},
        }
        for h in pooled
        for judge in judges
    ]
    excluded = []
    if tasks and generators:
        excluded.append(
            {
                "task": tasks[-1].task.key,
                "generator": generators[0][0],
                "method": "Omega Point",
                "reason": "cut_reply",
                "note": "Demonstration entry: no reply was cut; it shows how a left-out set is reported.",
            }
        )
    content = {"hypotheses": hypotheses, "quality_scores": quality, "excluded_sets": excluded}
    return json.dumps(content, ensure_ascii=False, sort_keys=True).encode()


def demo_benchmark_pooled(sender, run: Run, **kwargs) -> None:
    """When the last run of the demo set has pooled its hypotheses, start the set's judging (the judges score the
    pooled hypotheses while the runs go on forecasting). Sent inside the run's pooling transaction: the set's row
    lock orders concurrent poolings, so exactly one of them sees every task pooled. A refusal never fails the
    run: it is logged, and the set's page can start the judging."""
    benchmark_task = BenchmarkTask.objects.filter(run=run, benchmark__name=DEMO_BENCHMARK_NAME).first()
    if benchmark_task is None:
        return
    try:
        with transaction.atomic():
            benchmark = BenchmarkSet.objects.select_for_update().get(pk=benchmark_task.benchmark_id)
            if benchmark.benchmark_tasks.filter(hypotheses__isnull=True).exists():
                return
            if BackgroundJob.objects.filter(kind="benchmark_judging", params__benchmark_id=benchmark.pk).exists():
                return
            # Imported before the judging starts, so the judges score these hypotheses with the runs'.
            benchmark_import_file(
                benchmark=benchmark,
                filename="demo-benchmark-generations.json",
                content=_demo_generations_file(benchmark),
                user=benchmark.created_by,
            )
            judging_start(benchmark=benchmark, user=benchmark.created_by)
            demo_forecast_tables_import(benchmark)
    except ServiceError:
        logger.exception("The demo benchmark set's judging could not be started; start it from the set's page")


def demo_benchmark_selection_made(sender, run: Run, **kwargs) -> None:
    """When a run of the demo set has made its selection, ask its forecasts again (the simulated models answer the
    same requests a second time), so that the set's re-run agreement is filled. A refusal never fails the run."""
    benchmark_task = BenchmarkTask.objects.filter(run=run, benchmark__name=DEMO_BENCHMARK_NAME).first()
    if benchmark_task is None:
        return
    try:
        with transaction.atomic():
            benchmark_forecasts_repeat(benchmark=benchmark_task.benchmark)
    except ServiceError:
        logger.exception("The demo benchmark set's forecasts could not be asked again; ask from the set's page")


def demo_public_run_start() -> Run | None:
    """One public Open Hypothesis run of a demo question, through the public service and its limits."""
    if not _roster_simulated(_default_roster()):
        return None
    if Run.objects.filter(question=DEMO_RUN_QUESTION).exists():
        return None
    return run_create(
        question=DEMO_RUN_QUESTION, background=DEMO_RUN_BACKGROUND, client_address=DEMO_RUN_CLIENT_ADDRESS
    )


def demo_audit_start(cohort: Cohort, coordinator: User) -> InspirationAudit | None:
    """An inspiration audit of the demo cohort (the demo cutoffs are recorded by demo_load)."""
    if not _all_simulated([roster_endpoint(RosterMember.Role.INSPIRATION_JUDGE)]):
        return None
    if InspirationAudit.objects.filter(cohort=cohort).exists():
        return None
    return audit_create(cohort=cohort, user=coordinator)


def demo_work_start(cohort: Cohort) -> DemoWork:
    """Queue every piece of the demo's automated work that is not there yet (see the module's docstring)."""
    coordinator = User.objects.get(username=DEMO_COORDINATOR)
    work = DemoWork()
    steps = (
        (
            "the simulated AI review panel and pairwise critique of the demo cohort",
            lambda: demo_panel_start(cohort, coordinator),
        ),
        (
            "the demo benchmark set's runs (judged as soon as they are pooled)",
            lambda: demo_benchmark_start(coordinator),
        ),
        ("one public Open Hypothesis run on the simulated models", demo_public_run_start),
        ("an inspiration audit of the demo cohort", lambda: demo_audit_start(cohort, coordinator)),
    )
    for label, start in steps:
        try:
            started = start()
        except ServiceError as error:
            work.skipped.append(f"{label}: {error.message}")
            continue
        if started:
            work.queued.append(label)
    return work
